"""A CSV (or XLSX-like) test row as promptfoo's testCaseFromCsvRow reads it, and an ``__expected`` cell as its
assertionFromString reads it (promptfoo 0.123.1, src/csv.ts)."""

from __future__ import annotations

import re
from typing import Any

from assay.tasks.importers.promptfoo.files import CODE, FILE
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import LineDict, LineList

# promptfoo 0.123.1's BaseAssertionTypesSchema, in its order (the shorthand regex tries them in this order)
ASSERTION_TYPES = (
    "agent-rubric", "answer-relevance", "bleu", "classifier", "contains", "contains-all", "contains-any",
    "contains-html", "contains-json", "contains-sql", "contains-xml", "context-faithfulness", "context-recall",
    "context-relevance", "conversation-relevance", "cost", "equals", "factuality", "finish-reason", "g-eval", "gleu",
    "guardrails", "icontains", "icontains-all", "icontains-any", "is-html", "is-json", "is-refusal", "is-sql",
    "is-valid-function-call", "is-valid-openai-function-call", "is-valid-openai-tools-call", "is-xml", "javascript",
    "latency", "levenshtein", "llm-rubric", "pi", "meteor", "model-graded-closedqa", "model-graded-factuality",
    "moderation", "perplexity", "perplexity-score", "python", "regex", "rouge-n", "ruby", "similar",
    "similar:cosine", "similar:dot", "similar:euclidean", "starts-with", "tool-call-f1", "skill-used",
    "trajectory:goal-success", "trajectory:tool-args-match", "trajectory:step-count", "trajectory:tool-sequence",
    "trajectory:tool-used", "trace-error-spans", "trace-span-count", "trace-span-duration", "search-rubric",
    "webhook", "word-count",
)  # fmt: skip
SPECIAL_TYPES = ("select-best", "human", "max-score")
SHORTHAND = re.compile(
    r"^(not-)?(" + "|".join(map(re.escape, ASSERTION_TYPES)) + r")(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$"
)
_LISTS = ("contains-all", "contains-any", "icontains-all", "icontains-any")
_THRESHOLDED = (
    "answer-relevance", "classifier", "context-faithfulness", "context-recall", "context-relevance", "cost",
    "latency", "levenshtein", "perplexity-score", "perplexity", "rouge-n", "similar", "starts-with",
)  # fmt: skip
SIMILAR_THRESHOLD = 0.8  # promptfoo's DEFAULT_SEMANTIC_SIMILARITY_THRESHOLD
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_SPECIAL = ("expected", "prefix", "suffix", "description", "providerOutput", "metric", "threshold", "metadata",
            "config")  # fmt: skip


def finite_number(text: str | None) -> float | None:
    """promptfoo's parseFiniteNumber: a complete numeric literal, else None."""
    trimmed = (text or "").strip()
    if not _NUMBER.match(trimmed):
        return None
    value = float(trimmed)
    return value if value not in (float("inf"), float("-inf")) else None


def comma_values(value: str, at: At) -> list[str]:
    """promptfoo's parseCommaSeparatedAssertionValues: fields split at commas, "quoted" fields keep theirs."""
    out: list[str] = []
    i, n = 0, len(value)
    while i < n:
        while i < n and (value[i].isspace() or value[i] == ","):
            i += 1
        if i >= n:
            break
        if value[i] == '"':
            i += 1
            field = ""
            while True:
                if i >= n:
                    raise at.error("unterminated quoted field in a contains assertion value")
                if (value[i] == "\\" and i + 1 < n and value[i + 1] in '"\\') or value[i : i + 2] == '""':
                    field, i = field + value[i + 1], i + 2
                elif value[i] == '"':
                    i += 1
                    break
                else:
                    field, i = field + value[i], i + 1
            while i < n and value[i].isspace():
                i += 1
            if i < n and value[i] != ",":
                raise at.error("expected a comma after a quoted field in a contains assertion value")
            out.append(field)
        else:
            start = i
            while i < n and value[i] != ",":
                i += 1
            out.append(value[start:i].strip())
    return out


def assertion_from_string(expected: str, at: At) -> dict[str, Any]:
    """An ``__expected`` cell (already trimmed) as the assertion promptfoo makes of it."""
    path = expected[len(FILE) :] if expected.startswith(FILE) else None
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix) :].strip()}
    if path is not None and path.endswith(CODE[1:]):  # promptfoo's isJavascriptFile (no :function form here)
        return {"type": "javascript", "value": expected.strip()}
    for prefix in ("grade:", "llm-rubric:"):
        if expected.startswith(prefix):
            return {"type": "llm-rubric", "value": expected[len(prefix) :]}
    if expected.startswith("python:"):
        return {"type": "python", "value": expected[len("python:") :].strip()}
    if path is not None and (path.endswith(".py") or ".py:" in path):
        return {"type": "python", "value": expected.strip()}  # the file reference kept (promptfoo drops file://)
    m = SHORTHAND.match(expected)
    if m is None:
        return {"type": "equals", "value": expected}
    negated, kind, threshold_text, value = m.groups()
    full = f"not-{kind}" if negated else kind
    out: dict[str, Any] = {"type": full}
    if kind in _LISTS:
        if value:
            out["value"] = comma_values(value, at)
        elif value is not None:
            out["value"] = value
    elif kind in ("contains-json", "is-json"):
        if value is not None:
            out["value"] = value
    else:
        if value is not None:
            out["value"] = value.strip()
        if kind in _THRESHOLDED:
            threshold = finite_number(threshold_text)
            out["threshold"] = threshold if threshold is not None else SIMILAR_THRESHOLD if kind == "similar" else 0.75
    return out


def csv_row_test(row: dict[str, str], at: At) -> LineDict:
    """A CSV row as a test: columns are vars except promptfoo's ``__`` columns (``__expected[N]``, ``__prefix``,
    ``__suffix``, ``__description``, ``__metric``, ``__threshold``, ``__metadata:KEY`` / ``KEY[]``,
    ``__config:__expectedN:threshold``); ``__providerOutput`` is refused as a test's ``providerOutput`` is."""
    source, line = getattr(row, "source", at.file), getattr(row, "line", at.line)
    test = LineDict(source=source, line=line)
    vars_ = LineDict(source=source, line=line)
    asserts = LineList(source=source, line=line)
    options, metadata = LineDict(source=source, line=line), LineDict(source=source, line=line)
    configs: dict[int, dict[str, float]] = {}
    metric = description = threshold = None
    for key, value in row.items():
        key = key.strip()
        cell = at.named(key)
        if key.startswith("__expected"):
            if value.strip():
                asserts.append(LineDict(assertion_from_string(value.strip(), cell), source=source, line=line))
                asserts.lines.append(line)
        elif key == "__prefix":
            options["prefix"] = value
        elif key == "__suffix":
            options["suffix"] = value
        elif key == "__description":
            description = value
        elif key == "__providerOutput":
            raise cell.error("not supported by assay's promptfoo reader: a fixed output instead of a model's answer")
        elif key == "__metric":
            metric = value
        elif key == "__threshold":
            threshold = finite_number(value)
        elif key.startswith("__metadata:"):
            name = key[len("__metadata:") :]
            if name.endswith("[]") and value.strip():
                parts = re.split(r"(?<!\\),", value)
                metadata[name[:-2]] = [p.strip().replace("\\,", ",") for p in parts]
            elif not name.endswith("[]") and value.strip():
                metadata[name] = value
        elif key == "__metadata":
            raise cell.error('the __metadata column needs a key, e.g. "__metadata:category" (promptfoo ignores it)')
        elif key.startswith("__config:"):
            parts = key[len("__config:") :].split(":")
            m = re.fullmatch(r"__expected(\d*)", parts[0]) if len(parts) == 2 else None
            index = (int(m.group(1) or 1) - 1) if m else -1
            if m is None or index < 0 or parts[1] != "threshold":
                raise cell.error("a __config column is __config:__expected:threshold or __config:__expectedN:threshold")
            number = finite_number(value)
            if number is None:
                raise cell.error(f"{value!r} is not a number (threshold)")
            configs.setdefault(index, {})["threshold"] = number
        else:
            vars_[key] = value
            vars_.lines[key] = line
    for i, check in enumerate(asserts):
        if metric is not None:
            check["metric"] = metric
        for name, number in configs.get(i, {}).items():
            check[name] = number
            metadata[name] = number
    test["vars"], test["assert"], test["options"] = vars_, asserts, options
    if description:
        test["description"] = description
    if threshold is not None:
        test["threshold"] = threshold
    if metadata:
        test["metadata"] = metadata
    test.lines.update(dict.fromkeys(test, line))
    return test
