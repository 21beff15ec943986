"""lm-eval's ``process_results`` hook as assay metrics: the task's own hook, run on each document and reply as
lm-eval runs it, gives a dict of values; each metric of the task's ``metric_list`` is one evaluator that reads its
key, on the metric's own scale (truthfulqa's BLEU is 0-100, its differences go below 0)."""

from __future__ import annotations

import math
import numbers
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from assay.evaluators.base import Evaluator, Options
from assay.evaluators.registry import register
from assay.tasks.importers.lmeval.convert import ROW_KEY  # what the importer adds to each document; not for the hook
from assay.verdict import Verdict

_MEMO_SIZE = 256  # recent (document, reply) pairs whose hook values are kept: every metric of a sample reads one


class _Memo:
    """The hook's values for recent (document, reply) pairs, so a task's metrics call it once per sample."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: OrderedDict[tuple[str, int, str], tuple[object, dict[str, Any]]] = OrderedDict()

    def get(self, hook: str, doc: object, text: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        key = (hook, id(doc), text)
        with self._lock:
            found = self._values.get(key)
        if found is not None and found[0] is doc:  # the same object: an id is not reused while it is held here
            return found[1]
        values = compute()
        with self._lock:
            self._values[key] = (doc, values)
            while len(self._values) > _MEMO_SIZE:
                self._values.popitem(last=False)
        return values


_MEMO = _Memo()


class LmevalResultOptions(Options):
    """Which hook, and which of its values this metric is."""

    hook: str = Field(description="the process_results hook: 'path/to/utils.py:function' (the task's own code)")
    key: str = Field(description="the key of the hook's returned dict that this metric reports")
    pass_above: float = Field(
        0.0,
        description="a value passes when above this (lm-eval's metrics have no pass rule of their own; at 0 an "
        "'_acc' passes when 1 and a '_diff' when the correct references score higher)",
    )


@register("lmeval_result")
class LmevalResult(Evaluator):
    """One value of an lm-eval task's ``process_results(doc, [reply])``, on the metric's own scale."""

    Options = LmevalResultOptions
    options: LmevalResultOptions

    def setup(self) -> None:
        from assay.tasks.importers.lmeval.hooks import load_hook

        path, _, attr = self.options.hook.rpartition(":")
        self._fn = load_hook(Path(path), attr, f"lmeval_result: hook {self.options.hook!r}")

    def check(self, actual: Any, expected: Any) -> Verdict:
        return self.evaluate(actual, expected)  # without the sample's document: an error verdict that says so

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        text = actual.text if hasattr(actual, "text") else actual
        text = "" if text is None else str(text)
        row = (context or {}).get("doc")
        if not isinstance(row, Mapping):
            return Verdict.errored("lmeval_result: the sample's document was not given (the runner passes it)")
        try:
            values = _MEMO.get(self.options.hook, row, text, lambda: self._call(row, text))
        except Exception as err:  # the task's own code: its failure is this sample's error, the run goes on
            return Verdict.errored(f"process_results raised {type(err).__name__}: {err}")
        key = self.options.key
        if key not in values:
            return Verdict.errored(f"process_results returned no {key!r} (it gave {', '.join(map(str, values))})")
        value = values[key]
        if not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            return Verdict.errored(f"process_results gave {key} = {value!r}, not a finite number")
        number = float(value)
        passed = number > self.options.pass_above
        reason = None if passed else f"{key} is {number:.4g}, not above {self.options.pass_above:g}"
        return Verdict(number, passed, reason, {}, None, own_scale=True)

    def _call(self, row: Mapping[str, Any], text: str) -> dict[str, Any]:
        doc = {k: v for k, v in row.items() if k != ROW_KEY}
        values = self._fn(doc, [text])
        if not isinstance(values, Mapping):
            raise TypeError(f"expected a dict of metric values, got {type(values).__name__}")
        return dict(values)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the loaded hook (its module is loaded from a file, not importable by name)."""
        state = dict(self.__dict__)
        state.pop("_fn", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.setup()
