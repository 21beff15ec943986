"""An lm-eval task file mapped onto assay's task config: documents become inline rows carrying what lm-eval's
``doc_to_*`` give (under ``lmeval``), and a template lays the prompt out as lm-eval does (description, few-shot
examples each ``text + target_delimiter + answer + fewshot_delimiter``, then the document's text)."""

from __future__ import annotations

from typing import Any

from assay.tasks.importers.lmeval.docfns import DocFunction
from assay.tasks.importers.lmeval.docs import Documents
from assay.tasks.importers.lmeval.filters import convert_filters
from assay.tasks.importers.lmeval.hooks import hook_path, load_hook, resolve
from assay.tasks.importers.lmeval.yamlfile import FunctionRef, TaskFile

ROW_KEY = "lmeval"  # where each row keeps lm-eval's view of its document
SUPPORTED = frozenset(
    {"task", "task_alias", "tag", "dataset_path", "dataset_name", "dataset_kwargs", "training_split"}
    | {"validation_split", "test_split", "fewshot_split", "process_docs", "doc_to_text", "doc_to_target"}
    | {"doc_to_choice", "description", "target_delimiter", "fewshot_delimiter", "fewshot_config", "num_fewshot"}
    | {"metric_list", "output_type", "generation_kwargs", "repeats", "filter_list", "metadata", "process_results"}
    | {"should_decontaminate", "doc_to_decontamination_query"}  # contamination checks: not run, key accepted
)
OUTPUT_TYPES = ("generate_until", "multiple_choice", "loglikelihood", "loglikelihood_rolling")
EXACT_MATCH_OPTIONS = ("ignore_case", "ignore_punctuation", "ignore_numbers", "regexes_to_ignore")
CHOICE_METRICS = ("acc", "acc_norm", "acc_mutual_info")
GENERATION_KEYS = ("until", "max_gen_toks", "temperature", "do_sample", "top_p", "top_k")
DEFAULT_MAX_GEN_TOKS = 256  # lm-eval's


def check_keys(tf: TaskFile) -> None:
    """Refuse a key this importer does not carry over, naming its file and line."""
    for key in tf.data:
        if key not in SUPPORTED:
            hint = ""
            if key in ("group", "aggregate_metric_list") or isinstance(tf.data.get("task"), list):
                hint = " (a group file lists its tasks under task: and names itself under group:)"
            raise tf.error((key,), f"lm-eval key not supported by assay's importer{hint}")
    fc = tf.data.get("fewshot_config") or {}
    if not isinstance(fc, dict):
        raise tf.error(("fewshot_config",), "a mapping")
    for key in fc:
        if key not in ("sampler", "split", "samples"):
            raise tf.error(("fewshot_config", key), "not supported (fewshot_config: sampler, split, samples)")


def convert(tf: TaskFile) -> dict[str, Any]:
    """The assay task config (a dict for :meth:`assay.tasks.Task.from_config`) of an lm-eval task file."""
    check_keys(tf)
    data = tf.data
    name = data.get("task")
    if not isinstance(name, str) or not name:
        raise tf.error(("task",), "the task's name is required")
    kind = data.get("output_type", "generate_until")
    if kind not in OUTPUT_TYPES:
        raise tf.error(("output_type",), f"one of {', '.join(OUTPUT_TYPES)}, got {kind!r}")
    process = data.get("process_docs")
    docs = Documents(tf, resolve(process) if isinstance(process, FunctionRef) else None)
    split_key = "test_split" if data.get("test_split") else "validation_split"
    split = data.get(split_key)
    if not split:
        raise tf.error(("test_split",), "set test_split or validation_split (the split evaluated)")
    wrap = _Wrapper(tf, kind)
    rows = [wrap(doc) for doc in docs.split(str(split), split_key)]
    config: dict[str, Any] = {
        "name": name,
        "dataset": rows,
        "fields": {"target": f"{ROW_KEY}.target"},
        "output_type": kind,
        "repeats": int(data.get("repeats", 1)),
        "evaluators": _metrics(tf, kind),
    }
    if data.get("task_alias"):
        config["alias"] = str(data["task_alias"])
    tags = data.get("tag")
    if tags:
        config["tags"] = [tags] if isinstance(tags, str) else [str(t) for t in tags]
    version = (data.get("metadata") or {}).get("version") if isinstance(data.get("metadata"), dict) else None
    if version is not None:
        config["version"] = str(version)
    if kind != "loglikelihood_rolling":
        config["template"] = _template(tf, wrap.description is not None)
        fewshot = _fewshot(tf, docs, str(split), wrap)
        if fewshot is not None:
            config["fewshot"] = fewshot
    if kind == "multiple_choice":
        config["choices"] = f"{ROW_KEY}.choices"
        config["target_delimiter"] = str(data.get("target_delimiter", " "))
    if kind == "generate_until":
        config["generation"] = _generation(tf)
        filters = convert_filters(tf)
        if filters:
            config["filters"] = filters
    elif data.get("filter_list"):
        raise tf.error(("filter_list",), f"filters apply to generated text; output_type {kind} generates none")
    return config


class _Wrapper:
    """A document as an assay row: the document's fields plus ``lmeval``: text, target, choices, the answer shown
    when it is a few-shot example, and the rendered description."""

    def __init__(self, tf: TaskFile, kind: str) -> None:
        self.tf = tf
        self.kind = kind
        self.text = DocFunction.build(tf, "doc_to_text")
        self.target = DocFunction.build(tf, "doc_to_target")
        self.choice = DocFunction.build(tf, "doc_to_choice")
        self.description = DocFunction.build(tf, "description") if tf.data.get("description") else None
        if self.text is None and kind != "loglikelihood_rolling":
            raise tf.error(("doc_to_text",), "required (the prompt of each document)")
        if self.target is None:
            raise tf.error(("doc_to_target",), "required (the answer of each document)")
        if kind == "multiple_choice" and self.choice is None:
            raise tf.error(("doc_to_choice",), "output_type multiple_choice needs doc_to_choice")

    def __call__(self, doc: dict[str, Any]) -> dict[str, Any]:
        if ROW_KEY in doc:
            raise self.tf.error(("dataset_path",), f"a document has a field {ROW_KEY!r}, which the importer uses")
        assert self.target is not None
        target = self.target(doc)
        lm: dict[str, Any] = {}
        choices = None
        if self.choice is not None:
            choices = [str(c) for c in self.choice(doc)]
            if self.kind == "multiple_choice":
                lm["choices"] = choices
        if self.text is not None:
            lm["text"] = str(self.text(doc))
        if self.description is not None:
            lm["description"] = str(self.description(doc))
        # lm-eval's few-shot answer: a list's first item, a text as is, an index as its choice's text
        if isinstance(target, list):
            answer = str(target[0]) if target else ""
        elif choices is None or isinstance(target, str):
            answer = str(target)
        else:
            answer = choices[int(target)] if isinstance(target, int) and 0 <= target < len(choices) else str(target)
        lm["answer"] = answer
        if self.kind == "generate_until":  # compared as text: an index becomes its choice's text, as lm-eval
            target = answer if not isinstance(target, list) else [str(t) for t in target]
        lm["target"] = target
        return {**doc, ROW_KEY: lm}


def _raw(text: str) -> str:
    return "{% raw %}" + text + "{% endraw %}" if text else ""


def _template(tf: TaskFile, described: bool) -> str:
    """lm-eval's context: description, then each example + fewshot_delimiter, then the document's text."""
    td = str(tf.data.get("target_delimiter", " "))
    fd = str(tf.data.get("fewshot_delimiter", "\n\n"))
    head = "{{ " + ROW_KEY + ".description }}" if described else ""
    shots = (
        "{% for s in fewshot %}{{ s." + ROW_KEY + ".text }}" + _raw(td) + "{{ s." + ROW_KEY + ".answer }}"
        f"{_raw(fd)}{{% endfor %}}"
    )
    return head + shots + "{{ " + ROW_KEY + ".text }}"


def _fewshot(tf: TaskFile, docs: Documents, split: str, wrap: _Wrapper) -> dict[str, Any] | None:
    n = tf.data.get("num_fewshot")
    if n is None or n == 0:
        return None
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise tf.error(("num_fewshot",), f"a whole number >= 0, got {n!r}")
    fc = tf.data.get("fewshot_config") or {}
    sampler = fc.get("sampler", "default")
    if sampler not in ("default", "first_n"):
        raise tf.error(("fewshot_config", "sampler"), f"'default' or 'first_n' are supported, got {sampler!r}")
    if fc.get("samples") is not None and fc.get("split") is None and tf.data.get("fewshot_split") is None:
        samples = fc["samples"]
        if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
            raise tf.error(("fewshot_config", "samples"), "a list of documents")
        return {"n": n, "fixed": [wrap(s) for s in samples]}
    key, pool_split = "fewshot_split", fc.get("split") or tf.data.get("fewshot_split")
    if pool_split is None:  # lm-eval's rule: training, else validation, else test documents
        for key in ("training_split", "validation_split", "test_split"):
            if tf.data.get(key):
                pool_split = tf.data[key]
                break
    pool_split = str(pool_split)
    if pool_split == split and sampler == "default":
        return {"n": n, "seed": 1234}  # drawn from the evaluated split, never the sample itself
    pool = [wrap(doc) for doc in docs.split(pool_split, key)]
    if sampler == "first_n":
        return {"n": n, "fixed": pool[:n] if len(pool) >= n else pool}
    return {"n": n, "seed": 1234, "source": {"rows": pool}}


def _metrics(tf: TaskFile, kind: str) -> list[Any]:
    raw = tf.data.get("metric_list")
    hook = tf.data.get("process_results")
    if hook is not None:
        return _hook_metrics(tf, hook, raw)
    if raw is None:
        return ["exact_match"] if kind == "generate_until" else []  # [] takes assay's lm-eval defaults
    if not isinstance(raw, list):
        raise tf.error(("metric_list",), "a list of {metric: NAME, ...}")
    out: list[Any] = []
    for i, entry in enumerate(raw):
        at = _metric_entry(tf, i, entry)
        metric = entry["metric"]
        kwargs = {k: v for k, v in entry.items() if k not in ("metric", "aggregation", "higher_is_better")}
        spec: dict[str, Any] = {"name": metric}
        if metric == "exact_match":
            for key in kwargs:
                if key not in EXACT_MATCH_OPTIONS:
                    raise tf.error((*at, key), f"not an exact_match option ({', '.join(EXACT_MATCH_OPTIONS)})")
            spec.update(kwargs)
        elif metric in CHOICE_METRICS and kind == "multiple_choice":
            if kwargs:
                raise tf.error((*at, next(iter(kwargs))), f"{metric} takes no options")
        else:
            from assay.evaluators.registry import names

            if metric not in names() or kwargs:
                raise tf.error((*at, "metric"), f"lm-eval metric {metric!r} with these options is not supported here")
        if "higher_is_better" in entry:
            spec["higher_is_better"] = bool(entry["higher_is_better"])
        out.append(spec)
    return out


def _metric_entry(tf: TaskFile, i: int, entry: Any) -> tuple[str | int, ...]:
    """The key path of metric_list entry ``i``, once it is checked to be ``{metric: NAME}`` aggregated by mean."""
    at: tuple[str | int, ...] = ("metric_list", i)
    if not isinstance(entry, dict) or not isinstance(entry.get("metric"), str):
        raise tf.error(at, "an entry is {metric: NAME, aggregation: mean, higher_is_better: true, ...}")
    if entry.get("aggregation", "mean") != "mean":
        raise tf.error((*at, "aggregation"), f"'mean' is supported, got {entry['aggregation']!r}")
    return at


def _hook_metrics(tf: TaskFile, hook: Any, raw: Any) -> list[Any]:
    """A process_results hook's metrics: each metric_list entry reads its key of what the hook returns."""
    if not isinstance(hook, FunctionRef):
        raise tf.error(("process_results",), "a !function hook (e.g. !function utils.process_results)")
    path, attr = hook_path(hook)
    load_hook(path, attr, hook.where)  # a missing module or function is named now, with the tag's line
    if not isinstance(raw, list) or not raw:
        raise tf.error(("metric_list",), "a process_results hook needs the metric_list naming its metrics")
    out: list[Any] = []
    for i, entry in enumerate(raw):
        at = _metric_entry(tf, i, entry)
        extra = [k for k in entry if k not in ("metric", "aggregation", "higher_is_better")]
        if extra:
            raise tf.error((*at, extra[0]), "a process_results metric takes no options")
        metric = entry["metric"]
        spec = {"name": "lmeval_result", "hook": f"{path.resolve()}:{attr}", "key": metric, "metric": metric}
        spec["expected"] = "none"  # the hook reads its references from the document
        spec["higher_is_better"] = bool(entry.get("higher_is_better", True))
        out.append(spec)
    return out


def _generation(tf: TaskFile) -> dict[str, Any]:
    fd = str(tf.data.get("fewshot_delimiter", "\n\n"))
    gk = tf.data.get("generation_kwargs")
    if gk is None:
        gk = {"until": [fd], "do_sample": False, "temperature": 0.0}  # lm-eval's default_gen_kwargs
    if not isinstance(gk, dict):
        raise tf.error(("generation_kwargs",), "a mapping")
    for key in gk:
        if key not in GENERATION_KEYS:
            raise tf.error(("generation_kwargs", key), f"not supported ({', '.join(GENERATION_KEYS)})")
    until = gk.get("until", [fd])
    stop = [until] if isinstance(until, str) else [str(u) for u in until]
    out: dict[str, Any] = {"max_tokens": int(gk.get("max_gen_toks", DEFAULT_MAX_GEN_TOKS))}
    if stop:
        out["stop"] = stop
    if "temperature" in gk:
        out["temperature"] = float(gk["temperature"])
    elif gk.get("do_sample") is False:
        out["temperature"] = 0.0  # greedy
    for key in ("top_p", "top_k"):
        if key in gk:
            out[key] = gk[key]
    return out
