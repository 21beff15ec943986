"""``scope: turn``: an evaluator judges each turn of a conversation (the user's message and the reply to it, with
its own expected value) and the sample's verdict gathers them: the mean score, passed only when every judged turn
passed, each turn's verdict in the details, the failing turns named in the reason and feedback.

Expected values: with the metric's ``expected: none`` every turn is judged without one; otherwise the first turn is
judged against the metric's expected value (the target) and each later turn against ``expected`` in the row's turn
spec (``turns: [{content: ..., expected: ...}, ...]``); a later turn without one is not judged (the details say so).
A turn that cannot be judged (an error verdict) makes the sample's verdict an error: a mean over the other turns
would drop it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from assay.agents.transcript import Turn, split_turns
from assay.models.base import Response, ToolCall, Usage
from assay.tasks.filters import explain_no_match, unmark
from assay.verdict import Verdict

if TYPE_CHECKING:
    from assay.evaluators.base import Evaluator
    from assay.tasks.filters import FilterPipeline

_NOT_GIVEN = object()  # a later turn whose spec gives no expected value
_SHOWN = 60

Judge = Callable[["Evaluator", Any, Any, dict[str, Any]], Awaitable[Verdict]]


def turn_expecteds(doc: Mapping[str, Any], first: Any, expected_mode: str) -> tuple[list[Any], bool]:
    """Each turn's expected value by position (the first, then the row's turn specs), and whether a turn without
    one is judged anyway (``expected: none``)."""
    if expected_mode == "none":
        return [], True
    specs = doc.get("turns") if isinstance(doc, Mapping) else None
    specs = specs if isinstance(specs, list) else []
    later = [s["expected"] if isinstance(s, dict) and "expected" in s else _NOT_GIVEN for s in specs]
    return [first, *later], False


def calls_by_turn(response: Response, turns: list[Turn]) -> list[list[ToolCall]]:
    """The executed calls of each turn: the response's calls (in transcript order) matched in order, by name, to the
    calls its assistant messages asked for (ids are not relied on: some servers reuse them in every reply; a
    reply's calls that never ran, beside a submit, are skipped)."""
    if not response.transcript:
        return [list(response.tool_calls)] + [[] for _ in turns[1:]]
    executed = response.tool_calls
    k = 0
    out: list[list[ToolCall]] = []
    for turn in turns:
        mine: list[ToolCall] = []
        for message in turn.messages:
            if message.get("role") != "assistant":
                continue
            for asked in message.get("tool_calls") or []:
                function = asked.get("function") if isinstance(asked, dict) else None
                name = function.get("name") if isinstance(function, dict) else None
                if k < len(executed) and executed[k].name == name:
                    mine.append(executed[k])
                    k += 1
        out.append(mine)
    return out


def turn_response(response: Response, turn: Turn, calls: list[ToolCall]) -> Response:
    """One turn as a Response: its reply as text, its executed ``calls``, its messages as the transcript, its
    usage and latency."""
    usage = Usage()
    latency = 0.0
    for m in turn.messages:
        if m.get("role") != "assistant":
            continue
        used = m.get("usage") or {}
        usage = Usage(
            input_tokens=usage.input_tokens + int(used.get("input_tokens") or 0),
            output_tokens=usage.output_tokens + int(used.get("output_tokens") or 0),
        )
        latency += float(m.get("latency_s") or 0.0)
    return Response(
        text=turn.reply,
        tool_calls=calls,
        usage=usage,
        latency_s=latency,
        model=response.model,
        transcript=list(turn.messages),
        metadata={"turn": turn.index},
    )


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


async def judge_turns(
    evaluator: Evaluator,
    pipeline: FilterPipeline,
    responses: list[Response | None],
    index: int,
    expected: Any,
    expected_mode: str,
    doc: Mapping[str, Any],
    context: dict[str, Any],
    judge: Judge,
) -> Verdict:
    """The verdict of value ``index`` of ``pipeline`` (a reducing pipeline reduces each turn over the repeats)
    judged turn by turn."""
    chosen = responses if pipeline.reduces else responses[index : index + 1]
    expecteds, judge_all = turn_expecteds(doc, expected, expected_mode)
    split = [split_turns(r) if r is not None else [] for r in chosen]
    calls = [calls_by_turn(r, s) if r is not None else [] for r, s in zip(chosen, split, strict=True)]
    n_turns = max((len(s) for s in split), default=0)
    rows: list[dict[str, Any]] = []
    judged: list[tuple[int, Verdict]] = []
    for t in range(n_turns):
        want = expecteds[t] if t < len(expecteds) else _NOT_GIVEN
        turns = [s[t] if t < len(s) else None for s in split]
        user = next((turn.user for turn in turns if turn is not None), "")
        row: dict[str, Any] = {"turn": t, "user": _clip(user)}
        if want is _NOT_GIVEN and not judge_all:
            rows.append({**row, "judged": False, "why": "the row's turn spec gives no expected value"})
            continue
        per_turn = [
            turn_response(r, turn, made[t]) if r is not None and turn is not None else None
            for r, turn, made in zip(chosen, turns, calls, strict=True)
        ]
        values, marks = unmark(pipeline.apply(per_turn))
        value, mark = values[0], marks[0]
        if value is None:
            verdict = Verdict.errored(f"turn {t} has no reply to evaluate")
        else:
            turn_context = {**context, "input": user, "turn": t}
            judged_expected = None if want is _NOT_GIVEN else want
            verdict = explain_no_match(await judge(evaluator, value, judged_expected, turn_context), mark)
        judged.append((t, verdict))
        rows.append({**row, "judged": True, **verdict.to_dict()})
    return _gather(rows, judged)


def _gather(rows: list[dict[str, Any]], judged: list[tuple[int, Verdict]]) -> Verdict:
    """The sample's verdict from its turns' verdicts."""
    details: dict[str, Any] = {"scope": "turn", "turns": rows}
    if not judged:
        return Verdict.errored("scope: turn found no turn to judge (no turn has an expected value)")
    errors = [(t, v) for t, v in judged if v.is_error]
    if errors:
        said = "; ".join(f"turn {t}: {v.error}" for t, v in errors)
        return Verdict.errored(f"{len(errors)} of {len(judged)} turns could not be judged: {said}", details)
    score = sum(v.score for _, v in judged) / len(judged)
    failed = [(t, v) for t, v in judged if not v.passed]
    details["turns_passed"] = len(judged) - len(failed)
    details["turns_judged"] = len(judged)
    if not failed:
        return Verdict(score, True, None, details, None)
    reason = f"{len(failed)} of {len(judged)} turns failed: " + "; ".join(
        f"turn {t}: {v.reason or 'failed'}" for t, v in failed
    )
    feedback = "; ".join(f"Turn {t}: {v.feedback or v.reason or 'failed'}" for t, v in failed)
    details["failed_turns"] = [t for t, _ in failed]
    return Verdict(score, False, reason, details, feedback)
