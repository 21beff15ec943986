"""A reasoning model's reasoning taken out of its reply before the reply is scored.

Reasoning models write their thinking into the reply's text between delimiters (``<think>…</think>`` for
DeepSeek-R1, Qwen3, QwQ and GLM, ``[THINK]…[/THINK]`` for Magistral, ``◁think▷…◁/think▷`` for Kimi, …). A filter
or evaluator that reads the whole text would score the thinking as part of the answer (a number in the thinking
matches a regex, a word in it fails ``not_contains``), so a generation task scores the reply with its reasoning
taken out, as lighteval (``remove_reasoning_tags``) and lmms-eval do by default and vLLM's reasoning parsers do on
the server. The stored response keeps the whole reply; the reasoning taken out is recorded beside it
(``SampleRecord.reasoning``).

How a reply is split (:meth:`ReasoningSplitter.split`):

- every closed block ``OPEN…CLOSE`` is reasoning, wherever it is (blocks do not nest);
- a closing delimiter before any opening one ends reasoning that began in the prompt (DeepSeek-R1's chat template
  opens ``<think>`` itself): the text before it is reasoning;
- an opening delimiter never closed, with nothing but whitespace before it in the answer, is a reply cut off while
  thinking (``max_tokens``): the rest is reasoning and the answer is empty;
- anything else is answer; when reasoning was found the answer is stripped of surrounding whitespace (the blank
  lines after ``</think>``), and a reply without any delimiter is scored exactly as it came.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from assay.models.base import Response

# (opening, closing) delimiters taken out by default: those of the reasoning models vLLM's reasoning parsers know,
# and the tag names prompts commonly ask for
DEFAULT_DELIMITERS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),  # DeepSeek-R1 and its distills, Qwen3, QwQ, GLM-4.5, Phi-4-reasoning, MiniMax
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
    ("[THINK]", "[/THINK]"),  # Mistral's Magistral
    ("◁think▷", "◁/think▷"),  # Kimi
)


class ReasoningSplitter:
    """Splits a reply into its answer and its reasoning, by ``delimiters`` (pairs of opening and closing text)."""

    def __init__(self, delimiters: Sequence[tuple[str, str]] = DEFAULT_DELIMITERS) -> None:
        self.delimiters = tuple((str(o), str(c)) for o, c in delimiters)
        self._close_of = {o: c for o, c in self.delimiters}
        self._tokens = tuple(dict.fromkeys(t for pair in self.delimiters for t in pair))
        # longest first, so that a delimiter that starts with another (``<think>`` / ``<think>>``) is read whole
        alternatives = sorted(self._tokens, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(t) for t in alternatives)) if alternatives else None

    def split(self, text: str | None) -> tuple[str | None, str | None]:
        """``(answer, reasoning)``: the reply's text without its reasoning, and the reasoning taken out (blocks
        joined by a blank line), or ``(text, None)`` unchanged when the text holds none."""
        pattern = self._pattern
        if not text or pattern is None:
            return text, None
        for token in self._tokens:  # the usual reply holds no delimiter: told by substring tests, the fastest way
            if token in text:
                break
        else:
            return text, None
        answer: list[str] = []
        thoughts: list[str] = []
        pos = 0
        while True:
            found = pattern.search(text, pos)
            if found is None:
                answer.append(text[pos:])
                break
            token, start, end = found.group(), found.start(), found.end()
            close = self._close_of.get(token)
            if close is None:  # a closing delimiter with no opening one before it
                if not thoughts and pos == 0:  # the first delimiter: the block was opened in the prompt
                    thoughts.append(text[:start])
                else:  # a stray one stays part of the answer
                    answer.append(text[pos:end])
                pos = end
                continue
            closed_at = text.find(close, end)
            if closed_at < 0:  # never closed
                before = text[pos:start]
                if before.strip() or any(part.strip() for part in answer):  # not leading: it is answer text
                    answer.append(text[pos:])
                else:  # the reply was cut off while thinking
                    answer.append(before)
                    thoughts.append(text[end:])
                break
            answer.append(text[pos:start])
            thoughts.append(text[end:closed_at])
            pos = closed_at + len(close)
        if not thoughts:
            return text, None
        return "".join(answer).strip(), "\n\n".join(t.strip() for t in thoughts if t.strip())

    def answer(self, value: Any) -> Any:
        """``value`` as the filters see it: a Response with its reasoning taken out of its text (a copy; the same
        object when it has none); any other value unchanged."""
        if not isinstance(value, Response) or not value.text:
            return value
        text, reasoning = self.split(value.text)
        if reasoning is None:
            return value
        return value.model_copy(update={"text": text})

    def reasoning(self, responses: Sequence[Response | None]) -> list[str | None]:
        """The reasoning taken out of each response's text (None where there was none, or no response); an empty
        list when no response had any (what a record keeps)."""
        found = [self.split(r.text)[1] if r is not None and r.text else None for r in responses]
        return found if any(r is not None for r in found) else []
