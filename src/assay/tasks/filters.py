"""Filter pipelines: turn a sample's responses (one per repeat) into the values evaluators judge.

Steps run in order. Text steps (regex, strip, lowercase, …) read a Response's ``.text`` (``''`` when the
model returned only tool calls) and leave non-text values (e.g. parsed JSON) unchanged; reducing steps
(take_first, majority_vote) turn the values of all repeats into one. A ``None`` response (the model
failed) stays ``None`` through every step.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from assay.errors import ConfigError
from assay.hashing import canonical_json
from assay.models.base import Response
from assay.verdict import Verdict


class StepOptions(BaseModel):
    """Base for a step's options: unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class FilterStep(ABC):
    """One step of a filter pipeline, built from ``{"type": name, **options}``."""

    name: ClassVar[str] = "step"
    Options: ClassVar[type[StepOptions]] = StepOptions
    reduces: ClassVar[bool] = False  # True: all repeats' values become one

    def __init__(self, **options: Any) -> None:
        try:
            self.options = self.Options(**options)
        except ValidationError as err:
            raise ConfigError(_describe(self.name, self.Options, err)) from None
        self.setup()

    def setup(self) -> None:
        """Prepare from validated options; raise ConfigError naming the option."""

    @abstractmethod
    def apply(self, values: list[Any]) -> list[Any]:
        """Transform the values of one sample (one per repeat, or one after a reducing step)."""

    def to_config(self) -> dict[str, Any]:
        """``{"type": ..., **options}`` (every option, defaults included, so hashes see default changes)."""
        return {"type": self.name, **self.options.model_dump(mode="json")}


def _describe(step: str, options_cls: type[StepOptions], err: ValidationError) -> str:
    problems = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(options)"
        if e["type"] == "extra_forbidden":
            from assay.tasks.taskfile import did_you_mean

            known = sorted(options_cls.model_fields)
            problems.append(
                f"unknown option {key!r}{did_you_mean(key, known)} (known options: {', '.join(known) or 'none'})"
            )
        elif e["type"] == "missing":
            problems.append(f"option {key!r} is required")
        else:
            problems.append(f"option {key!r}: {str(e['msg']).removeprefix('Value error, ')} (got {e.get('input')!r})")
    return f"{step}: " + "; ".join(problems)


def response_text(value: Any) -> Any:
    """The text of a Response (``''`` when it has none); other values unchanged."""
    if isinstance(value, Response):
        return value.text or ""
    return value


class NoMatch(str):
    """A regex step's fallback text, remembering the pattern and the text it searched: a verdict on it can then say
    that the extraction found no answer (and show the raw output) instead of blaming the model for the fallback."""

    raw: str
    pattern: str

    def __new__(cls, text: str, *, raw: str, pattern: str) -> NoMatch:
        made = super().__new__(cls, text)
        made.raw = raw
        made.pattern = pattern
        return made

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (to score chunks in other processes)
        return _no_match, (str(self), self.raw, self.pattern)


def _no_match(text: str, raw: str, pattern: str) -> NoMatch:
    return NoMatch(text, raw=raw, pattern=pattern)


class TextStep(FilterStep):
    """A step applied to each text value on its own; None and non-text values pass through."""

    def apply(self, values: list[Any]) -> list[Any]:
        out = []
        for value in values:
            value = response_text(value)
            if not isinstance(value, str):
                out.append(value)
                continue
            new = self.transform(value)
            if type(value) is NoMatch and isinstance(new, str) and type(new) is not NoMatch:
                new = NoMatch(new, raw=value.raw, pattern=value.pattern)  # a later step keeps the mark
            out.append(new)
        return out

    @abstractmethod
    def transform(self, text: str) -> Any:
        """The new value for one text."""


_STEPS: dict[str, type[FilterStep]] = {}
S = TypeVar("S", bound=type[FilterStep])


def register_step(name: str) -> Callable[[S], S]:
    """Class decorator: make a FilterStep subclass available as ``type: name`` in filter pipelines."""

    def decorate(cls: S) -> S:
        cls.name = name
        _STEPS[name] = cls
        return cls

    return decorate


def step_names() -> list[str]:
    """Every registered step type."""
    return sorted(_STEPS)


def build_step(config: dict[str, Any]) -> FilterStep:
    """A step from ``{"type": name, **options}``; unknown types and options raise ConfigError."""
    from assay.tasks.taskfile import did_you_mean

    if not isinstance(config, dict):
        raise ConfigError(f"a filter step is a mapping like {{type: regex, pattern: ...}}, got {config!r}")
    if "type" not in config:
        raise ConfigError(f"a filter step needs a 'type' (one of: {', '.join(step_names())})")
    kind = config["type"]
    cls = _STEPS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        hint = did_you_mean(str(kind), _STEPS)
        raise ConfigError(f"unknown filter step type {kind!r}{hint}; known: {', '.join(step_names())}")
    return cls(**{k: v for k, v in config.items() if k != "type"})


# ---- steps ------------------------------------------------------------------------------------------


class RegexOptions(StepOptions):
    """Options of the regex step: the pattern, which capture of which match, and what no match gives.

    - ``pattern``: the regular expression (Python re syntax) searched for in the text, e.g. ``#### (-?[0-9.,]+)``.
    - ``group``: the group number or name whose capture is kept; null keeps group 1 when the pattern has groups,
      else the whole match (group 0).
    - ``select``: keep the ``first`` match or the ``last`` (the last suits an answer after a chain of thought).
    - ``fallback``: the value when nothing matches (default '[invalid]', as lm-evaluation-harness); a verdict on
      a text fallback says the extraction found no answer and shows the raw output.
    - ``ignore_case``: match the pattern case-insensitively (re.IGNORECASE).
    """

    pattern: str
    group: int | str | None = None
    select: Literal["first", "last"] = "first"
    fallback: Any = "[invalid]"
    ignore_case: bool = False


@register_step("regex")
class RegexStep(TextStep):
    """Extract a match (a capture group of the first or last match); no match gives ``fallback``."""

    Options = RegexOptions
    options: RegexOptions

    def setup(self) -> None:
        flags = re.IGNORECASE if self.options.ignore_case else 0
        try:
            self.regex = re.compile(self.options.pattern, flags)
        except re.error as err:
            raise ConfigError(f"regex: option 'pattern': invalid regular expression: {err}") from None
        group = self.options.group
        if group is None:
            group = 1 if self.regex.groups else 0
        elif isinstance(group, int) and not 0 <= group <= self.regex.groups:
            raise ConfigError(f"regex: option 'group': the pattern has {self.regex.groups} group(s), got {group}")
        elif isinstance(group, str) and group not in self.regex.groupindex:
            names = ", ".join(self.regex.groupindex) or "none"
            raise ConfigError(f"regex: option 'group': the pattern has no group named {group!r} (named: {names})")
        self.group: int | str = group

    def transform(self, text: str) -> Any:
        if self.options.select == "first":
            match = self.regex.search(text)
        else:
            match = None
            for match in self.regex.finditer(text):  # noqa: B007 - keep the last
                pass
        value = None if match is None else match.group(self.group)
        if value is not None:
            return value
        fallback = self.options.fallback
        return NoMatch(fallback, raw=text, pattern=self.options.pattern) if isinstance(fallback, str) else fallback


@register_step("strip")
class StripStep(TextStep):
    """Remove leading and trailing whitespace."""

    def transform(self, text: str) -> Any:
        return text.strip()


@register_step("remove_whitespace")
class RemoveWhitespaceStep(TextStep):
    """Remove leading whitespace (lm-evaluation-harness ``remove_whitespace`` semantics)."""

    def transform(self, text: str) -> Any:
        return text.lstrip()


@register_step("lowercase")
class LowercaseStep(TextStep):
    """Lower-case the text."""

    def transform(self, text: str) -> Any:
        return text.lower()


@register_step("uppercase")
class UppercaseStep(TextStep):
    """Upper-case the text."""

    def transform(self, text: str) -> Any:
        return text.upper()


class MapOptions(StepOptions):
    """Options of the map step: the table of replacements and what a text not in it becomes.

    - ``mapping``: text -> value; a text equal to a key (exactly, case and spaces included) becomes its value.
    - ``default``: the value of a text that is not a key; when not given, such a text is left unchanged.
    """

    mapping: dict[str, Any]
    default: Any = None


@register_step("map")
class MapStep(TextStep):
    """Replace a text by its value in ``mapping`` (e.g. ``{"A": "0", "B": "1"}``)."""

    Options = MapOptions
    options: MapOptions

    def setup(self) -> None:
        self.keep_unmapped = "default" not in self.options.model_fields_set

    def transform(self, text: str) -> Any:
        if text in self.options.mapping:
            return self.options.mapping[text]
        return text if self.keep_unmapped else self.options.default

    def to_config(self) -> dict[str, Any]:
        config = super().to_config()
        if self.keep_unmapped:
            del config["default"]
        return config


class ExtractJsonOptions(StepOptions):
    """Options of the extract_json step.

    - ``fallback``: the value when the text holds no JSON value that parses (default null).
    """

    fallback: Any = None


_FENCE = re.compile(r"```[ \t]*(?:json[c5]?|JSON)?[ \t]*\n(.*?)```", re.DOTALL)
_MAX_SCAN = 64  # start positions tried when scanning free text for a JSON value


@register_step("extract_json")
class ExtractJsonStep(TextStep):
    """Parse the JSON value in the text: a fenced ```json block first, then the whole text, then the first
    ``{...}``/``[...]`` that parses. Output is untrusted: it is only parsed, never evaluated."""

    Options = ExtractJsonOptions
    options: ExtractJsonOptions

    def transform(self, text: str) -> Any:
        decoder = json.JSONDecoder()
        for block in _FENCE.findall(text):
            try:
                return json.loads(block)
            except ValueError:
                continue
        try:
            return json.loads(text)
        except ValueError:
            pass
        tries = 0
        for match in re.finditer(r"[\[{]", text):
            tries += 1
            if tries > _MAX_SCAN:
                break
            try:
                value, _ = decoder.raw_decode(text, match.start())
            except ValueError:
                continue
            return value
        return self.options.fallback


@register_step("take_first")
class TakeFirstStep(FilterStep):
    """Keep the first repeat's value only."""

    reduces = True

    def apply(self, values: list[Any]) -> list[Any]:
        return values[:1] if values else [None]


def _vote_key(value: Any) -> str:
    value = response_text(value)
    return value if isinstance(value, str) else "\x00" + canonical_json(value)


@register_step("majority_vote")
class MajorityVoteStep(FilterStep):
    """The most common value over repeats (self-consistency). Failed repeats (None) do not vote; ties go to
    the value seen first; all failed gives None. Responses vote by their text."""

    reduces = True

    def apply(self, values: list[Any]) -> list[Any]:
        voters = [v for v in values if v is not None]
        if not voters:
            return [None]
        counts = Counter(_vote_key(v) for v in voters)  # insertion-ordered: ties keep first occurrence
        best = max(counts.values())
        winner = next(k for k in counts if counts[k] == best)
        return [next(v for v in voters if _vote_key(v) == winner)]


class FinalAnswerOptions(StepOptions):
    """Options of the final_answer step: where an agent's answer is read.

    - ``source``: ``auto`` takes the submitted answer, else the reply's text, else the last assistant message of
      the transcript; ``submit`` only the submitted answer; ``last_message`` only the last assistant message.
    """

    source: Literal["auto", "submit", "last_message"] = "auto"


@register_step("final_answer")
class FinalAnswerStep(FilterStep):
    """An agent's final answer as text (assay.tasks.final_answer): the submitted value or the last assistant
    message, for text evaluators; values that are not Responses pass through."""

    Options = FinalAnswerOptions
    options: FinalAnswerOptions

    def apply(self, values: list[Any]) -> list[Any]:
        from assay.tasks.final_answer import final_answer

        return [final_answer(v, self.options.source) if isinstance(v, Response) else v for v in values]


# ---- pipelines -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterPipeline:
    """A named sequence of steps; ``apply`` maps a sample's responses to the values evaluators judge.

    ``answer`` (set by the task, not part of the pipeline's config) maps each response to the answer the steps
    see before they run: a generation task's reasoning taken out of the reply (:mod:`assay.tasks.reasoning`), so
    that every path that scores through the pipeline scores the same answer."""

    name: str
    steps: tuple[FilterStep, ...] = ()
    answer: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)

    def apply(self, responses: Sequence[Any]) -> list[Any]:
        """Filtered values: one per response, or a single one after a reducing step."""
        answer = self.answer
        values = list(responses) if answer is None else [answer(r) for r in responses]
        for step in self.steps:
            values = step.apply(values)
        return values

    @property
    def reduces(self) -> bool:
        """True when the pipeline yields one value per sample whatever the number of repeats."""
        return any(s.reduces for s in self.steps)

    def to_config(self) -> dict[str, Any]:
        """``{"name": ..., "steps": [...]}``."""
        return {"name": self.name, "steps": [s.to_config() for s in self.steps]}


NO_FILTER = FilterPipeline("none")


def unmark(values: list[Any]) -> tuple[list[Any], list[NoMatch | None]]:
    """Filtered values as plain values (what evaluators judge and records store), and each one's NoMatch mark."""
    if NoMatch not in map(type, values):
        return values, [None] * len(values)
    marks = [v if type(v) is NoMatch else None for v in values]
    return [str(v) if type(v) is NoMatch else v for v in values], marks


def _clip(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def explain_no_match(verdict: Verdict, mark: NoMatch | None) -> Verdict:
    """A failing verdict on a regex fallback, told as what it is: the extraction found no answer in the output."""
    if mark is None or verdict.passed or verdict.is_error:
        return verdict
    reason = (
        f"no answer extracted: the filter's regex /{mark.pattern}/ matched nothing in the output {_clip(mark.raw)}, "
        f"so its fallback {str(mark)!r} was scored"
    )
    if verdict.reason:
        reason += f" ({verdict.reason})"
    feedback = (
        f"No answer could be extracted: the pattern /{mark.pattern}/ found nothing in the output {_clip(mark.raw)}. "
        "Give the final answer in the form the task asks for."
    )
    details = {**verdict.details, "extraction": "no match", "raw_output": mark.raw[:2000]}
    return Verdict(verdict.score, False, reason, details, feedback, None)
