"""An lm-eval output folder read as an assay run: what ``lm_eval --output_path OUT --log_samples`` writes
(``OUT/<model_name_sanitized>/results_<date_id>.json`` and ``samples_<task>_<date_id>.jsonl`` per task) converted
into a run folder in a temporary folder (removed when the process exits), so that ``assay compare``, ``assay
report`` and :func:`assay.load_run` take an old lm-eval run as they take an assay run, document by document.

The conversion gives each lm-eval document the record an assay run of the same lm-eval task gives it (see
:mod:`assay.tasks.importers.lmeval.scoring`): sample id ``str(doc_id)``, the logged document (so its doc hash is
lm-eval's ``doc_hash`` and samples pair with an assay run's), one filter record per lm-eval filter, each metric's
logged value as a verdict on its own scale (``details["value"]`` the raw value; a value that is not a number, a
perplexity's pair, scores 0 and keeps its value). ``results.json`` is then written by assay's results writer, and
lm-eval's own figures from the results file replace assay's in its lm-eval keys (:func:`apply_lmeval`), assay's
intervals kept beside them: the report shows the figures lm-eval reported.

Only what lm-eval logged is there: no timings, tokens or costs, and nothing to re-score (the task is not rebuilt).
The samples files are read twice, line by line (an index of where each document's lines start, then each document's
lines), never held whole."""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.atomicfile import atomic_write_text
from assay.errors import DataError
from assay.models.base import Message, Response
from assay.models.loglikelihood import METADATA_KEY
from assay.record import FilterRecord, MetricInfo, RunManifest, SampleRecord, TaskInfo
from assay.store.rundir import SampleWriter, write_manifest
from assay.store.sampleindex import SAMPLES
from assay.tasks.importers.lmeval.scoring import value_verdict
from assay.verdict import Verdict

CONFIG_KEY = "lmeval_output"  # where the converted run's run.json says what it was converted from
# lm-eval's date_id: ``datetime.now().isoformat()`` with ":" replaced by "-"
_DATE_ID = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_RESULTS_FILE = re.compile(rf"^(?P<stem>.+)_(?P<date>{_DATE_ID})\.json$")
_SAMPLES_FILE = re.compile(rf"^samples_.+_(?P<date>{_DATE_ID})\.jsonl$")
_DOC_ID_FIRST = re.compile(rb'^\{"doc_id": (\d+)[,}]')  # how lm-eval writes every samples line
_FUNCTION = re.compile(r"^<function (?P<name>[\w.]+) at 0x[0-9a-f]+>$")  # a ``!function`` aggregation, as logged


@dataclass(frozen=True)
class LmevalOutput:
    """One lm-eval evaluation on disk: its results file and its date_id, which names its samples files."""

    results_file: Path
    date_id: str

    def samples_file(self, task: str) -> Path:
        """``samples_<task>_<date_id>.jsonl`` beside the results file (lm-eval's name for a task's logged samples)."""
        return self.results_file.parent / f"samples_{task}_{self.date_id}.jsonl"


def _results_files(folder: Path) -> list[LmevalOutput]:
    """The lm-eval results files directly in ``folder``."""
    out = []
    for path in folder.glob("*.json"):
        match = _RESULTS_FILE.match(path.name)
        if match is not None and path.is_file():
            out.append(LmevalOutput(path, match["date"]))
    return out


def _newest(found: list[LmevalOutput]) -> LmevalOutput:
    """The newest evaluation by date_id (ISO dates sort as text); a ``results_`` file before another stem."""
    return max(found, key=lambda o: (o.date_id, o.results_file.name.startswith("results_")))


def find_output(path: str | os.PathLike[str]) -> LmevalOutput | None:
    """The lm-eval evaluation ``path`` names, or None when it names none: a results file
    (``results_<date_id>.json``, or ``<stem>_<date_id>.json`` from ``--output_path <stem>.json``), a model folder
    holding results files (the newest by date_id), or the output folder above one model folder. An output folder
    holding several models' folders is a DataError naming them (which one is meant is the caller's to say)."""
    p = Path(path)
    if p.is_file():
        match = _RESULTS_FILE.match(p.name)
        if match is not None:
            return LmevalOutput(p, match["date"])
        logged = _SAMPLES_FILE.match(p.name)  # a samples file: the evaluation of its date_id
        same = [o for o in _results_files(p.parent) if logged is not None and o.date_id == logged["date"]]
        return _newest(same) if same else None
    if not p.is_dir():
        return None
    here = _results_files(p)
    if here:
        return _newest(here)
    models = {sub: found for sub in sorted(p.iterdir()) if sub.is_dir() and (found := _results_files(sub))}
    if len(models) > 1:
        names = ", ".join(sub.name for sub in models)
        raise DataError(f"{p} holds lm-eval results of several models ({names}): give one model's folder")
    return _newest(next(iter(models.values()))) if models else None


_CONVERTED: dict[tuple[str, int, int], Path] = {}  # (results file, mtime_ns, size) -> its run folder in this process


def lmeval_run_folder(path: str | os.PathLike[str]) -> Path | None:
    """The run folder converted from the lm-eval evaluation ``path`` names (see :func:`find_output`), in a temporary
    folder removed when this process exits; None when ``path`` names no lm-eval evaluation. Converted once per
    process (again when the results file changed)."""
    output = find_output(path)
    if output is None:
        return None
    stat = output.results_file.stat()
    key = (str(output.results_file.resolve()), stat.st_mtime_ns, stat.st_size)
    folder = _CONVERTED.get(key)
    if folder is None or not folder.is_dir():
        folder = Path(tempfile.mkdtemp(prefix="assay-lmeval-"))
        atexit.register(_remove, folder, os.getpid())
        try:
            convert(output, folder)
        except BaseException:
            _remove(folder, os.getpid())
            raise
        _CONVERTED[key] = folder
    return folder


def _remove(folder: Path, owner: int) -> None:
    """Remove a converted run folder; only in the process that made it (a forked child exits without it)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _read_results(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: cannot read the lm-eval results file: {err}") from None
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("results"), dict)
        or not isinstance(doc.get("configs"), dict)
    ):
        raise DataError(f"{path}: not an lm-eval results file (expected a JSON object with 'results' and 'configs')")
    return doc


def convert(output: LmevalOutput, run_dir: Path) -> None:
    """Write the run folder of the lm-eval evaluation ``output`` into the (empty) folder ``run_dir``: samples.jsonl,
    run.json, then results.json with lm-eval's figures in its lm-eval keys."""
    from assay.results.document import json_safe
    from assay.results.lmevaldoc import apply_lmeval
    from assay.results.writer import write_results

    lm = _read_results(output.results_file)
    tasks = list(lm["configs"])
    missing = [output.samples_file(t).name for t in tasks if not output.samples_file(t).is_file()]
    if missing:
        raise DataError(
            f"{output.results_file}: no samples file {', '.join(missing)} beside it: the per-document samples are "
            "written by lm_eval with --log_samples"
        )
    infos: list[TaskInfo] = []
    with SampleWriter(run_dir / SAMPLES, fsync_every=1 << 62, fsync_interval_s=float("inf")) as writer:
        for task in tasks:
            infos.append(_write_task(lm, task, output.samples_file(task), writer))
    write_manifest(run_dir, _manifest(lm, output, infos), durable=False)
    doc = write_results(run_dir)
    aggregations = {info.name: {m.name: str(m.evaluator["aggregation"]) for m in info.metrics} for info in infos}
    apply_lmeval(doc, lm, aggregations)
    text = json.dumps(json_safe(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write_text(run_dir / "results.json", text, durable=False)


def _manifest(lm: Mapping[str, Any], output: LmevalOutput, infos: list[TaskInfo]) -> RunManifest:
    from assay.secrets import redact_spec, redact_text
    from assay.version import __version__

    logged = lm.get("config")
    config: dict[str, Any] = logged if isinstance(logged, dict) else {}
    model_name = str(lm.get("model_name") or config.get("model") or "lm-eval model")
    model: dict[str, Any] = {"provider": "lm-eval", "model": model_name}
    if config.get("model"):
        model["lm_eval_model"] = str(config["model"])
    args = config.get("model_args")
    if isinstance(args, str) and args:
        model["lm_eval_model_args"] = redact_text(args)
    elif isinstance(args, dict):
        model["lm_eval_model_args"] = redact_spec(args)
    date, seconds = lm.get("date"), _number(lm.get("total_evaluation_time_seconds"))
    created = float(date) if isinstance(date, int | float) else output.results_file.stat().st_mtime
    return RunManifest(
        run_id=f"lm-eval-{output.date_id}",
        name=f"lm-eval {model_name} {output.date_id}",
        assay_version=__version__,
        created_at=created,
        finished_at=created + (seconds or 0.0),
        total_seconds=seconds,  # lm-eval's, as it logged it (the conversion's own time is not the run's)
        status="finished",
        model=model,
        tasks=infos,
        config={
            CONFIG_KEY: {"results_file": str(output.results_file.resolve()), "date_id": output.date_id},
            "limit": config.get("limit"),
            "seed": config.get("random_seed"),
        },
        git_hash=lm.get("git_hash") if isinstance(lm.get("git_hash"), str) else None,
    )


def _number(value: Any) -> float | None:
    """A number lm-eval may log as text (``total_evaluation_time_seconds``), or None."""
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _aggregation(value: Any) -> str:
    """A metric's lm-eval aggregation by name: a registry name as it is, a ``!function`` by its function's name."""
    if not isinstance(value, str) or not value:
        return "mean"
    match = _FUNCTION.match(value)
    return match["name"] if match is not None else value


def _groups_of(lm: Mapping[str, Any], task: str) -> list[str]:
    """The groups ``task`` is in (through subgroups too), outermost first, from lm-eval's ``group_subtasks``."""
    subtasks: dict[str, list[str]] = {g: list(s) for g, s in (lm.get("group_subtasks") or {}).items() if s}

    def inside(group: str, seen: frozenset[str]) -> bool:
        return any(s == task or (s in subtasks and s not in seen and inside(s, seen | {s})) for s in subtasks[group])

    return [g for g in subtasks if inside(g, frozenset({g}))]


@dataclass
class _Written:
    """What writing a task's records found: its filters and metrics (in the order first seen) and documents."""

    filters: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    n_docs: int = 0


def _write_task(lm: Mapping[str, Any], task: str, samples_file: Path, writer: SampleWriter) -> TaskInfo:
    """Write one task's records (by doc_id, one per document) from its samples file; the task's info."""
    from assay.hashing import sha256_hex

    config: dict[str, Any] = lm["configs"][task] if isinstance(lm["configs"][task], dict) else {}
    hib: dict[str, Any] = (lm.get("higher_is_better") or {}).get(task) or {}
    task_hash = str((lm.get("task_hashes") or {}).get(task) or sha256_hex({"lm-eval task": task, "config": config}))
    kind = str(config.get("output_type", "generate_until"))
    written = _Written()
    for doc_id, lines in _documents(samples_file):
        record = _record(task, task_hash, doc_id, lines, kind, hib)
        written.filters.extend(f for f in record.filters if f not in written.filters)  # lm-eval's order
        for fr in record.filters.values():
            written.metrics.extend(m for m in fr.verdicts if m not in written.metrics)
        writer.write(record)
        written.n_docs += 1
    return _task_info(lm, task, task_hash, samples_file, written)


def _task_info(lm: Mapping[str, Any], task: str, task_hash: str, samples_file: Path, written: _Written) -> TaskInfo:
    """A converted task as run.json records it: lm-eval's version, few-shot count, document counts, groups and
    metrics (those its samples hold, in the order its config lists them, with their aggregations and directions)."""
    config: dict[str, Any] = lm["configs"][task] if isinstance(lm["configs"][task], dict) else {}
    hib: dict[str, Any] = (lm.get("higher_is_better") or {}).get(task) or {}
    aggregations = {
        str(m["metric"]): _aggregation(m.get("aggregation"))
        for m in config.get("metric_list") or []
        if isinstance(m, dict) and "metric" in m
    }
    declared = [*aggregations, *(m for m in hib if m not in aggregations)]
    seen = written.metrics
    metrics = [m for m in declared if m in seen] + [m for m in seen if m not in declared] if seen else declared
    version = (lm.get("versions") or {}).get(task)
    counts = (lm.get("n-samples") or {}).get(task) or {}
    task_config: dict[str, Any] = {"name": task, "version": "" if version is None else str(version)}
    task_config["repeats"] = int(config.get("repeats") or 1)
    if config.get("task_alias"):
        task_config["alias"] = str(config["task_alias"])
    groups = _groups_of(lm, task)
    if groups:
        task_config["groups"] = groups
    task_config[CONFIG_KEY] = {"samples_file": str(samples_file.resolve()), "task_config": config}
    instruction = lm.get("system_instruction")
    return TaskInfo(
        name=task,
        version=task_config["version"],
        task_hash=task_hash,
        config=task_config,
        n_shot=int((lm.get("n-shot") or {}).get(task) or 0),
        metrics=[
            MetricInfo(
                name=m,
                evaluator={
                    "name": "lmeval_metric",
                    "task": task,
                    "metric": m,
                    "aggregation": aggregations.get(m, "mean"),
                },
                higher_is_better=bool(hib.get(m, True)),
            )
            for m in metrics
        ],
        filters=written.filters or ["none"],
        repeats=task_config["repeats"],
        groups=groups,
        n_docs=int(counts.get("original", written.n_docs)),
        n_selected=int(counts.get("effective", written.n_docs)),
        system_instruction=instruction if isinstance(instruction, str) else None,
    )


def _documents(path: Path) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """Each document's lines (one per filter, in file order) by doc_id: a first pass notes where each document's
    lines start, then each document's lines are read there (the file is never held whole)."""
    starts: dict[int, list[tuple[int, int]]] = {}  # doc_id -> (offset, line number) of each of its lines
    offset = 0
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if raw.strip():
                found = _DOC_ID_FIRST.match(raw)
                doc_id = int(found[1]) if found is not None else _doc_id(_parse(raw, path, number), path, number)
                starts.setdefault(doc_id, []).append((offset, number))
            offset += len(raw)
        for doc_id in sorted(starts):
            lines = []
            for at, number in starts[doc_id]:
                fh.seek(at)
                lines.append(_parse(fh.readline(), path, number))
            yield doc_id, lines


def _parse(raw: bytes, path: Path, number: int) -> dict[str, Any]:
    try:
        line = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{path}:{number}: invalid JSON in lm-eval's samples: {err}") from None
    if not isinstance(line, dict):
        raise DataError(f"{path}:{number}: expected a JSON object (one lm-eval sample)")
    return line


def _doc_id(line: Mapping[str, Any], path: Path, number: int) -> int:
    doc_id = line.get("doc_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, int):
        raise DataError(f"{path}:{number}: an lm-eval sample without a whole-number doc_id")
    return doc_id


def _record(
    task: str, task_hash: str, doc_id: int, lines: list[dict[str, Any]], kind: str, hib: Mapping[str, Any]
) -> SampleRecord:
    """One document's record: the first line's document, prompt and answers; each filter's line its verdicts."""
    first = lines[0]
    doc = first.get("doc")
    arguments = _arguments(first)
    prompt = _prompt(arguments[0][0] if arguments and arguments[0] else "")
    filters: dict[str, FilterRecord] = {}
    for line in lines:
        filtered = line.get("filtered_resps")
        record = FilterRecord(filtered=filtered if isinstance(filtered, list) else [filtered])
        for metric in line.get("metrics") or ():
            if metric in line:
                verdict = value_verdict(line[metric], _registered_aggregation(metric), bool(hib.get(metric, True)))
            else:
                verdict = Verdict.errored(f"lm-eval logged no value of {metric!r} for this document")
            record.verdicts[metric] = [verdict.to_dict()]
            record.scores[metric] = None if verdict.is_error else verdict.score
            record.passed[metric] = None if verdict.is_error else verdict.passed
        filters[str(line.get("filter", "none"))] = record  # a filter logged twice: its last line
    responses = _responses(kind, first.get("resps"), arguments)
    gen_kwargs = arguments[0][1] if arguments and len(arguments[0]) > 1 and isinstance(arguments[0][1], dict) else {}
    return SampleRecord(
        task=task,
        task_hash=task_hash,
        doc_id=doc_id,
        sample_id=str(doc_id),
        doc=doc if isinstance(doc, dict) else {"doc": doc},
        prompt=prompt,
        messages=_messages(prompt),
        gen_kwargs=gen_kwargs,
        target=first.get("target"),
        responses=list(responses),
        response_errors=[None] * len(responses),
        filters=filters,
    )


def _arguments(line: Mapping[str, Any]) -> list[list[Any]]:
    """Each request's arguments (``{"gen_args_0": {"arg_0": ..., "arg_1": ...}}`` as lm-eval logs them), in order."""
    logged = line.get("arguments")
    if not isinstance(logged, dict):
        return []
    out = []
    for i in range(len(logged)):
        request = logged.get(f"gen_args_{i}")
        if not isinstance(request, dict):
            break
        out.append([request.get(f"arg_{j}") for j in range(len(request))])
    return out


def _prompt(value: Any) -> str:
    """A request's context as text: a chat (lm-eval's ``JsonChatStr``, logged as a one-item list) by its JSON."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _messages(prompt: str) -> list[Message]:
    """The messages of a prompt: a chat's own (its JSON), else one user message holding the text."""
    if prompt.startswith("[{"):
        try:
            chat = json.loads(prompt)
        except json.JSONDecodeError:
            chat = None
        if isinstance(chat, list) and all(isinstance(m, dict) and "role" in m for m in chat):
            return chat
    return [{"role": "user", "content": prompt}]


def _responses(kind: str, resps: Any, arguments: list[list[Any]]) -> list[Response]:
    """The model's answers as assay keeps them: a generation's text per repeat; a log-likelihood request's figures
    (lm-eval logs them as text: ``["-1.5", "False"]``) in one scored response. None readable: none."""
    if not isinstance(resps, list) or not resps or not all(isinstance(r, list) and r for r in resps):
        return []
    if kind == "generate_until":
        return [Response(text=None if text is None else str(text)) for text in resps[0]]
    try:
        if kind == "loglikelihood_rolling":
            figures: dict[str, Any] = {"kind": kind, "logprobs": [float(resps[0][0])], "greedy": [False]}
            return [Response(finish_reason="scored", metadata={METADATA_KEY: figures})]
        pairs = [r[0] if isinstance(r[0], list) else [r[0], "False"] for r in resps]
        logprobs = [float(p[0]) for p in pairs]
        greedy = [str(p[1]) == "True" for p in pairs]
    except (TypeError, ValueError, IndexError):
        return []
    choices = [str(a[1]) if len(a) > 1 else "" for a in arguments]
    multiple = kind == "multiple_choice" and len(choices) == len(logprobs)
    figures = {"kind": "multiple_choice" if multiple else "loglikelihood", "logprobs": logprobs, "greedy": greedy}
    text = None
    if multiple:
        figures["choices"] = choices
        text = choices[logprobs.index(max(logprobs))]  # the first of equal bests, as lm-eval's argmax
    return [Response(text=text, finish_reason="scored", metadata={METADATA_KEY: figures})]


def _registered_aggregation(metric: str) -> Any:
    """lm-eval's registered aggregation of ``metric`` (a perplexity's, F1's), so that a document's pair gets the
    figure of that document alone as its score, as in an assay run; None without lm-eval or for a task's own one."""
    try:
        from lm_eval.api.registry import get_metric_aggregation  # type: ignore[import-untyped]

        return get_metric_aggregation(metric)
    except Exception:
        return None
