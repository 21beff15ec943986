"""promptfoo 0.123.1's text-similarity assertions with its own numbers: levenshtein (edit distance <= threshold,
default 5, counted in UTF-16 code units as fastest-levenshtein counts), bleu (its BLEU-4 with 1e-7 smoothing and a
brevity penalty against the closest reference; default 0.5), gleu (min of n-gram precision and recall, best
reference; default 0.5), rouge-n (ROUGE-1 F1 of js-rouge's Penn Treebank tokens with clipped counts; default 0.75).
A ``not-`` metric passes below its threshold and scores 1 - score, as promptfoo's."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

from rapidfuzz.distance import Levenshtein

from assay.tasks.checks.code import CheckError
from assay.tasks.checks.jsmath import js_exp, js_log
from assay.tasks.checks.params import Params

PASSED = "Assertion passed"


def _utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def levenshtein(p: Params) -> dict[str, Any]:
    if not isinstance(p.value, str):
        raise CheckError('"levenshtein" assertion type must have a string value')
    distance = Levenshtein.distance(_utf16(p.text), _utf16(p.value))
    threshold = 5 if p.threshold is None else p.threshold
    passed = (distance <= threshold) != p.inverse
    word = "less than or equal to" if p.inverse else "greater than"
    reason = PASSED if passed else f"Levenshtein distance {distance} is {word} threshold {_num(threshold)}"
    return {"pass": passed, "score": 1.0 if passed else 0.0, "reason": reason}


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _ngrams(words: list[str], n: int) -> list[str]:
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)] if 0 < n <= len(words) else []


def _words(text: str) -> list[str]:
    return re.split(r"\s+", text.lower().strip())


def bleu_score(candidate: str, references: list[str]) -> float:
    """promptfoo's ``calculateBleuScore`` (uniform 4-gram weights)."""
    if not references:
        raise CheckError("Invalid inputs")
    if candidate.strip() == "":
        return 0.0
    cand = _words(candidate)
    refs = [_words(r) for r in references]
    closest = len(refs[0])
    for ref in refs[1:]:
        d_cur, d_prev = abs(len(ref) - len(cand)), abs(closest - len(cand))
        if d_cur < d_prev or (d_cur == d_prev and len(ref) < closest):
            closest = len(ref)
    orders: list[float] = []
    for n in range(1, 5):
        grams = Counter(_ngrams(cand, n))
        total = sum(grams.values())
        if total == 0:
            continue
        best = 0
        for ref in refs:
            ref_grams = Counter(_ngrams(ref, n))
            best = max(best, sum(min(c, ref_grams[g]) for g, c in grams.items()))
        orders.append(best / total)
    penalty = 1.0 if len(cand) > closest else js_exp(1 - closest / len(cand))
    weight = 0.0
    for _ in orders:
        weight += 0.25
    weighted = 0.0
    for q in orders:
        weighted += 0.25 / weight * js_log(q or 1e-7)
    return penalty * js_exp(weighted)


def _gleu_words(text: str) -> list[str]:
    words = [w.rstrip(".") for w in _words(text)]
    return words if any(words) else []


def gleu_score(candidate: str, references: list[str]) -> float:
    """promptfoo's ``calculateGleuScore`` (n = 1..4; the best reference)."""
    if not references:
        raise CheckError("Invalid inputs")
    cand = _gleu_words(candidate)
    if not cand:
        return 0.0
    scores = []
    for reference in references:
        ref = _gleu_words(reference)
        if cand == ref:
            scores.append(1.0)
            continue
        matches = cand_total = ref_total = 0
        for n in range(1, 5):
            c, r = _ngrams(cand, n), _ngrams(ref, n)
            counts_r = Counter(r)
            matches += sum(min(k, counts_r[g]) for g, k in Counter(c).items())
            cand_total, ref_total = cand_total + len(c), ref_total + len(r)
        scores.append(0.0 if not cand_total or not ref_total else min(matches / cand_total, matches / ref_total))
    return max(scores)


def _references(p: Params) -> list[str]:
    value = p.value
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise CheckError(f'"{p.base}" assertion type must have a string or array of strings value')


def bleu(p: Params) -> dict[str, Any]:
    return _metric(p, bleu_score(p.text, _references(p)), "BLEU", "greater", "less")


def gleu(p: Params) -> dict[str, Any]:
    return _metric(p, gleu_score(p.text, _references(p)), "GLEU", "greater than or equal to", "less than")


def _metric(p: Params, score: float, name: str, above: str, below: str) -> dict[str, Any]:
    threshold = 0.5 if p.threshold is None else p.threshold
    passed = (score >= threshold) != p.inverse
    reason = (
        PASSED
        if passed
        else f"{name} score {score:.4f} is {above if p.inverse else below} than threshold {_num(threshold)}"
    )
    if name == "GLEU" and not passed:
        reason = f"GLEU score {score:.4f} is {above if p.inverse else below} threshold {_num(threshold)}"
    return {"pass": passed, "score": 1 - score if p.inverse else score, "reason": reason}


# js-rouge's treeBankTokenize (3.2.3)
_CONTRACTIONS = [
    re.compile(rf"(?<![\w\u200c\u200d]){pattern}(?![\w\u200c\u200d])", re.IGNORECASE)
    for pattern in (
        r"(can)(not)", r"(d)('ye)", r"(gim)(me)", r"(gon)(na)", r"(got)(ta)", r"(lem)(me)", r"(more)('n)",
        r"(wan)(na)(?= )", r"('t)(is)", r"('t)(was)",
    )
]  # fmt: skip


def _cat(char: str) -> str:
    return unicodedata.category(char) if char else ""


def _opens_quote(text: str, index: int, inside: bool) -> bool:
    if inside:
        return False
    prev = text[index - 1] if index else ""
    return index == 0 or prev.isspace() or _cat(prev).startswith("P") or prev == "<" or text[index - 2 : index] == "``"


def treebank_tokenize(sentence: str) -> list[str]:
    text = re.sub(r"[\s\u0085]+", " ", sentence).strip()
    if not text:
        return []
    inside = False

    def quote(m: re.Match[str]) -> str:
        nonlocal inside
        q, i = m.group(0), m.start()
        prev = text[i - 1] if i else ""
        after = text[i + 2 : i + 3]
        nxt = re.search(r"``|''|\"", text[i + 2 :])
        inside = q == "``" or (
            (i + len(q) < len(text) or i == 0 or prev.isspace() or _cat(prev) == "Ps" or prev == "<")
            and _opens_quote(text, i, inside)
            and not re.match(r"[.!?]", prev)
            and (
                q == '"'
                or (
                    i > 0
                    and bool(after)
                    and (_cat(after)[:1] in ("L", "N") or _cat(after) in ("Sc", "Ps"))
                    and nxt is not None
                    and nxt.group(0) == "''"
                )
            )
        )
        return " `` " if inside else " '' "

    parse = re.sub(r"``|''|\"", quote, text)
    parse = re.sub(r"\.{3}", " ... ", parse)
    parse = re.sub(r"[:,](?!\d)", lambda m: f" {m.group(0)} ", parse)
    parse = re.sub(r"[;@#$%&]", lambda m: f" {m.group(0)} ", parse)
    parse = re.sub(r"([^.])(?<!\b[A-Za-z]\.[A-Za-z])(\.)([\])}>'\s]*)$", r"\1 \2\3 ", parse)
    parse = re.sub(r"[?!]", lambda m: f" {m.group(0)} ", parse)
    parse = re.sub(r"[\][(){}<>]", lambda m: f" {m.group(0)} ", parse)
    parse = parse.replace("--", " -- ")
    parse = f" {parse} "
    parse = re.sub(r"([^'])' ", r"\1 ' ", parse)
    parse = re.sub(r"'([sSmMdD]) ", r" '\1 ", parse)
    parse = re.sub(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r" \1 ", parse)
    for contraction in _CONTRACTIONS:
        parse = contraction.sub(r" \1 \2 ", parse)
    parse = re.sub(r" {2,}", " ", parse)
    parse = re.sub(r"^ | $", "", parse)
    return parse.split(" ")


def f_measure(precision: float, recall: float, beta: float = 1.0) -> float:
    """js-rouge's ``fMeasure`` for beta = 1 (its scaled form, for identical rounding)."""
    if precision == recall:
        return precision
    if precision == 0 or recall == 0:
        return 0.0
    if precision > recall:
        return min(precision, recall * (2 / (1 + recall / precision)))
    return min(recall, precision * (2 / (1 + precision / recall)))


def rouge_n_score(candidate: str, reference: str, n: int = 1) -> float:
    """promptfoo's ``rougeNScore``: ROUGE-N F1 with clipped n-gram counts over treebank tokens."""
    cand, ref = treebank_tokenize(candidate), treebank_tokenize(reference)
    if len(cand) < n or len(ref) < n:
        return 0.0
    cand_grams, ref_grams = _ngrams(cand, n), _ngrams(ref, n)
    ref_counts = Counter(ref_grams)
    overlap = sum(min(c, ref_counts[g]) for g, c in Counter(cand_grams).items())
    if overlap == 0:
        return 0.0
    return f_measure(overlap / len(cand_grams), overlap / len(ref_grams))


def rouge_n(p: Params) -> dict[str, Any]:
    if not isinstance(p.value, str):
        raise CheckError('"rouge" assertion type must be a string value')
    score = rouge_n_score(p.text.lower(), p.value.lower())
    threshold = 0.75 if p.threshold is None else p.threshold
    above = score >= threshold
    word = "greater than or equal to" if above else "less than"
    reason = f"ROUGE-N score {score:.2f} is {word} threshold {_num(threshold)}"
    return {"pass": above != p.inverse, "score": 1 - score if p.inverse else score, "reason": reason}
