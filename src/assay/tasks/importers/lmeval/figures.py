"""An lm-eval task's figures as lm-eval computes them: each document's values (kept in the verdicts' details) given,
in document order, to lm-eval's own results code (``_process_results``: the task's ``aggregation()``, its stderrs,
then its groups' weighted or unweighted means and pooled stderrs). assay adds its interval beside each figure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.scoring import restored
from assay.tasks.importers.lmeval.settings import LmevalSettings

CONFIG_KEY = "lmeval"  # where a task's run.json config keeps its lm-eval settings


class LmevalItems:
    """Every lm-eval task's per-document values, by (task, filter, metric), as a results scan passes the records."""

    def __init__(self, configs: Mapping[str, Mapping[str, Any]]) -> None:
        self.settings: dict[str, LmevalSettings] = {}
        for name, config in configs.items():
            lm = config.get(CONFIG_KEY)
            if isinstance(lm, Mapping):
                self.settings[name] = LmevalSettings.model_validate(lm["settings"])
        self.items: dict[tuple[str, str, str], list[tuple[int, Any]]] = defaultdict(list)

    def observe(self, rec: Mapping[str, Any]) -> None:
        """Take one record's values (records of other tasks pass by)."""
        task = rec["task"]
        if task not in self.settings:
            return
        doc_id = int(rec["doc_id"])
        for filter_name, fr in (rec.get("filters") or {}).items():
            for metric, verdicts in (fr.get("verdicts") or {}).items():
                for v in verdicts:
                    details = v.get("details") or {}
                    if v.get("error") is None and "value" in details:
                        self.items[(task, filter_name, metric)].append((doc_id, restored(details)))

    def merge(self, later: LmevalItems) -> None:
        """Add the values of records observed by another instance."""
        for key, values in later.items.items():
            self.items[key].extend(values)


def lmeval_documents(items: LmevalItems, bootstrap_iters: int | None = None) -> dict[str, Any]:
    """lm-eval's results document (``results``, ``groups``, ``group_subtasks``, ``versions``, ``n-shot``,
    ``higher_is_better``, ``n-samples``, ``configs``) for the lm-eval tasks of a run; {} when it has none."""
    if not items.settings:
        return {}
    from lm_eval.evaluator_utils import _process_results  # type: ignore[import-untyped]

    from assay.tasks.importers.lmeval.suite import load_suite

    merged: dict[str, Any] = {}
    by_key: dict[str, list[str]] = defaultdict(list)
    for task, settings in items.settings.items():
        by_key[settings.key()].append(task)
    for names in by_key.values():
        settings = items.settings[names[0]]
        suite = load_suite(settings)
        accumulators: dict[str, Any] = {}
        for name in names:
            if name not in suite.tasks:
                raise ConfigError(f"lm-eval task {name!r} is not among the tasks lm-eval loads from {settings.sources}")
            raw: dict[tuple[str, str], list[Any]] = defaultdict(list)
            for (task, filter_name, metric), values in items.items.items():
                if task == name:
                    raw[(metric, filter_name)] = [v for _, v in sorted(values, key=lambda dv: dv[0])]
            accumulators[name] = {"task": suite.tasks[name], "raw_metrics": raw, "logged_samples": []}
        iters = settings.bootstrap_iters if bootstrap_iters is None else bootstrap_iters
        groups = {g: group for g, group in suite.groups.items() if _covered(group, names)}
        document = _process_results(accumulators, groups, iters)._to_eval_results()
        for key, value in document.items():
            if isinstance(value, dict):
                merged.setdefault(key, {}).update(value)
    return merged


def _covered(group: Any, names: list[str]) -> bool:
    """True when every task of ``group`` is among ``names`` (a group is figured only when the run has it all)."""
    return all(getattr(t, "task_name", None) in names for t in group.get_all_tasks())
