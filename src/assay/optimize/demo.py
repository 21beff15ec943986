"""The offline optimisation demo: an agent that follows the format instructions it finds in its prompt (as real
models do), and a rule-based optimiser model that turns failures' feedback into instructions. No network, no key.

The agent knows the answers (capitals, sums, comparisons) but by default writes full sentences and spells
numbers out; told to answer with the answer only, or to write numbers in digits, it does.
"""

from __future__ import annotations

import re

CAPITALS = {
    "France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Spain": "Madrid", "Germany": "Berlin", "Peru": "Lima",
    "Egypt": "Cairo", "Kenya": "Nairobi", "Canada": "Ottawa", "Norway": "Oslo", "Chile": "Santiago",
    "Greece": "Athens", "Poland": "Warsaw", "Austria": "Vienna", "Portugal": "Lisbon", "Ireland": "Dublin",
    "Cuba": "Havana", "Sweden": "Stockholm", "Finland": "Helsinki", "Hungary": "Budapest",
}  # fmt: skip
CONCISE = ("answer only", "only the answer", "nothing else", "no other text", "just the answer")
DIGITS = ("digit", "numerals")
_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
_ONES += "seventeen eighteen nineteen"
ONES = _ONES.split()
TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def spell(n: int) -> str:
    """An integer from 0 to 999 in words ("forty-two")."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else "-" + ONES[n % 10])
    rest = n % 100
    return ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + spell(rest))


def solve(question: str) -> tuple[str, str]:
    """(kind, answer) for a demo question."""
    if m := re.search(r"capital of (\w+)", question):
        return "capital", CAPITALS.get(m.group(1), "unknown")
    if m := re.search(r"(\d+) plus (\d+)", question):
        return "sum", str(int(m.group(1)) + int(m.group(2)))
    if m := re.search(r"Is (\d+) greater than (\d+)", question):
        return "yesno", "yes" if int(m.group(1)) > int(m.group(2)) else "no"
    return "other", "I do not know"


def respond(prompt: str) -> str:
    """The agent's answer to the question in ``prompt``, in the format the prompt's instructions ask for."""
    found = list(re.finditer(r"Question:\s*(.+)", prompt))
    m = found[-1] if found else None
    question = m.group(1).strip() if m else prompt.strip()
    head = prompt[: m.start()] if m else prompt
    rules = head.lower()
    concise = any(c in rules for c in CONCISE)
    digits = any(d in rules for d in DIGITS)
    shown = [ex.strip() for ex in re.findall(r"Question:[^\n]*\n([^\n]*)", head)]  # few-shot examples' answers
    concise = concise or any(ex and " " not in ex for ex in shown)  # it imitates the examples' format
    digits = digits or any(ex.isdigit() for ex in shown)
    kind, answer = solve(question)
    if kind == "sum" and not digits:
        answer = spell(int(answer))
    if concise or kind == "yesno":
        return answer
    if kind == "capital":
        country = re.search(r"capital of (\w+)", question)
        return f"The capital of {country.group(1) if country else 'it'} is {answer}."
    return f"The answer is {answer}."


def answer(prompt: str) -> str:
    """The demo agent (``python:assay.optimize.demo:answer``)."""
    return respond(prompt)


RULE_CONCISE = "Answer with the answer only, nothing else."
RULE_DIGITS = "Write numbers with digits (like 42), never in words."
_NUMBER_WORDS = re.compile(r"\b(" + "|".join(ONES[1:] + TENS[2:]) + r"|hundred)\b", re.IGNORECASE)


def reflect_text(prompt: str) -> str:
    """The rule-based optimiser's reply to a reflection prompt: the current instructions plus a rule for each kind
    of failure its feedback shows, in a ``` block (as an optimiser model is asked to reply)."""
    blocks = re.findall(r"```\n?(.*?)```", prompt, re.DOTALL)
    current = blocks[0].strip() if blocks else ""
    feedback = "\n".join(re.findall(r"BEGIN feedback>>>\n(.*?)\n<<<END feedback", prompt, re.DOTALL))
    outputs = "\n".join(re.findall(r"BEGIN output>>>\n(.*?)\n<<<END output", prompt, re.DOTALL))
    rules = [line for line in current.splitlines() if line.strip()]
    if "surrounded by other text" in feedback and RULE_CONCISE not in rules:
        rules.append(RULE_CONCISE)
    wants_number = re.search(r"Answer with exactly '\d+'", feedback)
    if wants_number and _NUMBER_WORDS.search(outputs) and RULE_DIGITS not in rules:
        rules.append(RULE_DIGITS)
    return "```\n" + "\n".join(rules) + "\n```"


def reflect(prompt: str) -> str:
    """The demo's optimiser model (``python:assay.optimize.demo:reflect``)."""
    return reflect_text(prompt)


def reply_text(text: str) -> str:
    """One model that is both: the optimiser's reply when ``text`` is a reflection prompt, else the agent's (a local
    OpenAI-compatible server answering for both serves ``reply_text`` of the last user message)."""
    return reflect_text(text) if "write new instructions for the assistant" in text else respond(text)
