"""The parity harness: a task of lm-eval's own registry, copied unchanged but for its dataset location (small local
data written in the task's schema), run by ``lm_eval`` itself and by ``assay run`` on the same tiny offline model
(log-likelihoods) or the same scripted OpenAI-compatible server (generation); every request, every per-document
value, every figure and stderr compared."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import assay

TIGHT = 1e-9  # figures computed from the same values in the same order
FLOAT32 = 1e-5  # log-likelihood sums of float32 log-probs (kernels order the sum; see tests/loglik)


def registry() -> Path:
    """The installed lm-eval's task folder."""
    import lm_eval

    return Path(lm_eval.__file__).parent / "tasks"


def find_registry_task(name: str) -> Path:
    """The YAML file of lm-eval's registry task ``name`` (its ``task: name`` line)."""
    wanted = re.compile(rf"^['\"]?task['\"]?:\s*['\"]?{re.escape(name)}['\"]?\s*(#.*)?$", re.M)
    for path in sorted(registry().rglob("*.yaml")):
        try:
            if wanted.search(path.read_text(encoding="utf-8")):
                return path
        except (OSError, UnicodeDecodeError):
            continue
    raise LookupError(f"no task {name!r} in lm-eval's registry")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def registry_copy(
    name: str, work: Path, data: Mapping[str, list[dict[str, Any]]], *, up: int = 0, yaml: Path | None = None
) -> Path:
    """Copy the folder of registry task ``name`` (``up`` folders higher, for files that include ``../``) under
    ``work``, and point the task file at local JSONL files of ``data`` (split name -> rows): the one change made.
    The override is appended to the task file, whose keys win over what it includes (lm-eval's rule)."""
    source = yaml or find_registry_task(name)
    top = source.parent
    for _ in range(up):
        top = top.parent
    dest_top = work / top.name
    shutil.copytree(top, dest_top, ignore=shutil.ignore_patterns("__pycache__", "README.md"), dirs_exist_ok=True)
    task_file = dest_top / source.relative_to(top)
    files = {split: str(write_jsonl(work / "data" / name / f"{split}.jsonl", rows)) for split, rows in data.items()}
    lines = ["", "# parity test: the dataset location only", "dataset_path: json", "dataset_name: null"]
    lines += ["dataset_kwargs:", "  data_files:"] + [f"    {split}: {json.dumps(p)}" for split, p in files.items()]
    text = task_file.read_text(encoding="utf-8")
    text = re.sub(r"^['\"]?(dataset_path|dataset_name|dataset_kwargs)['\"]?:.*(\n[ \t]+.*)*", "", text, flags=re.M)
    task_file.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return task_file


def lm_eval_loglik(tiny_lm: Path, tasks: list[str], work: Path, **kwargs: Any) -> dict[str, Any]:
    """``lm_eval`` itself with its ``hf`` backend on the tiny model."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    return lm_eval.simple_evaluate(  # type: ignore[no-any-return]
        model="hf",
        model_args=f"pretrained={tiny_lm}",
        tasks=tasks,
        task_manager=TaskManager(include_path=str(work), include_defaults=False),
        batch_size=4,
        device="cpu",
        log_samples=True,
        **kwargs,
    )


def lm_eval_generate(base_url: str, tasks: list[str], work: Path, *, chat: bool, **kwargs: Any) -> dict[str, Any]:
    """``lm_eval`` itself against the scripted server: ``local-chat-completions`` with its chat template, or
    ``local-completions`` with text prompts."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    kwargs.pop("apply_chat_template", None)
    if chat:
        model, args = "local-chat-completions", f"model=test-model,base_url={base_url}/chat/completions"
    else:
        model, args = "local-completions", f"model=test-model,base_url={base_url}/completions,tokenizer_backend=None"
    return lm_eval.simple_evaluate(  # type: ignore[no-any-return]
        model=model,
        model_args=args + ",num_concurrent=1,max_retries=1,tokenized_requests=False",
        tasks=tasks,
        apply_chat_template=chat,
        task_manager=TaskManager(include_path=str(work), include_defaults=False),
        log_samples=True,
        **kwargs,
    )


@contextmanager
def inside(work: Path) -> Iterator[None]:
    """Run in ``work`` (lm-eval reads relative data files from the working directory)."""
    cwd = os.getcwd()
    os.chdir(work)
    try:
        yield
    finally:
        os.chdir(cwd)


def assay_run(tasks: list[str | Path], model: Any, work: Path, **settings: Any) -> Path:
    """``assay run`` (through the Python API) of ``tasks``; the run folder."""
    settings.setdefault("progress", False)
    outcome = assay.run(tasks, model=model, output_dir=str(work / "runs"), **settings)
    return Path(outcome.path)


def records(run_dir: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """The run's records by task and doc_id."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for line in (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        out.setdefault(rec["task"], {})[rec["doc_id"]] = rec
    return out


def _sample_log(run_dir: Path, task: str) -> dict[tuple[int, str], dict[str, Any]]:
    """assay's lm-eval-style per-sample log of ``task``, by (doc_id, filter)."""
    lines = (run_dir / f"samples_{task}.jsonl").read_text(encoding="utf-8").splitlines()
    return {(d["doc_id"], d["filter"]): d for d in map(json.loads, lines)}


def _text(prompt: Any) -> str:
    """A prompt as text: lm-eval's chat (``JsonChatStr``) by its JSON, as it hashes it."""
    if isinstance(prompt, tuple) and len(prompt) == 1:  # a JsonChatStr as lm-eval's samples hold it
        prompt = prompt[0]
    return str(getattr(prompt, "prompt", prompt))


def _close(ours: Any, theirs: Any, tol: float, where: str) -> None:
    if isinstance(theirs, str) or theirs is None:
        assert ours in (theirs, None), where  # lm-eval's "N/A" stderr: assay leaves it out
        return
    if isinstance(theirs, float) and math.isnan(theirs):
        assert ours is None or (isinstance(ours, float) and math.isnan(ours)), where
        return
    assert ours == pytest.approx(theirs, rel=tol, abs=tol), f"{where}: {ours!r} != {theirs!r}"


def _same_value(ours: Any, theirs: Any, tol: float, where: str) -> None:
    if isinstance(theirs, list | tuple):
        assert isinstance(ours, list | tuple) and len(ours) == len(theirs), f"{where}: {ours!r} != {theirs!r}"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _same_value(a, b, tol, f"{where}[{i}]")
    elif isinstance(theirs, bool | int | float):
        _close(float(ours), float(theirs), tol, where)
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def assert_parity(
    run_dir: Path,
    theirs: Mapping[str, Any],
    *,
    tol: float = TIGHT,
    value_tol: float | None = None,
    requests: Callable[[str, int], list[tuple[Any, ...]]] | None = None,
) -> int:
    """Every figure, stderr and group of lm-eval's results equals the run's; every document's filtered answers (the
    text a filter kept, each choice's log-likelihood and greedy flag) and its value of every metric under every
    filter equal lm-eval's logged ones, and (``requests``: assay's arguments of a task's document) every request.
    Returns how many per-document values were compared."""
    ours = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    for section in ("results", "groups"):
        for name, figures in (theirs.get(section) or {}).items():
            mine = ours[section][name]
            for key, value in figures.items():
                if "," not in key:
                    continue
                _close(mine.get(key), value, tol, f"{section}[{name}][{key}]")
    by_task = records(run_dir)
    compared = 0
    for task, samples in (theirs.get("samples") or {}).items():
        logged = _sample_log(run_dir, task)
        for sample in samples:
            rec = by_task[task][sample["doc_id"]]
            line = logged[(sample["doc_id"], sample["filter"])]  # assay's samples_<task>.jsonl, lm-eval's hashes
            for key in ("doc_hash", "prompt_hash", "target_hash"):
                assert line[key] == sample[key], f"{task} doc {sample['doc_id']}: {key}"
            fr = rec["filters"][sample["filter"]]
            where = f"{task} doc {sample['doc_id']} {sample['filter']}"
            assert rec["prompt"] == _text(sample["arguments"][0][0]), f"{where}: prompt"
            # each request's filtered answer: the text a filter kept, or each choice's (log-likelihood, is_greedy)
            _same_value(fr["filtered"], list(sample["filtered_resps"]), value_tol or tol, f"{where} filtered")
            for metric in sample["metrics"]:
                verdict = fr["verdicts"][metric][0]
                assert verdict["error"] is None, f"{where} {metric}: {verdict['error']}"
                _same_value(verdict["details"]["value"], sample[metric], value_tol or tol, f"{where} {metric}")
                compared += 1
            if requests is not None:
                mine = requests(task, sample["doc_id"])
                want = [tuple(a) for a in sample["arguments"]]
                assert len(mine) == len(want), f"{where}: {len(mine)} requests, lm-eval {len(want)}"
                for a, b in zip(mine, want, strict=True):
                    assert _text(a[0]) == _text(b[0]), f"{where}: context"
                    if len(b) > 1 and isinstance(b[1], str):
                        assert a[1] == b[1], f"{where}: continuation"
    assert compared > 0
    return compared


def loglik_requests(run_dir: Path) -> Callable[[str, int], list[tuple[Any, ...]]]:
    """The (context, continuation) pairs assay sent for a document, rebuilt from the run's recorded tasks."""
    from assay.store.rundir import read_manifest
    from assay.tasks.importers import task_from_config

    tasks = {info.name: task_from_config(info.config) for info in read_manifest(run_dir).tasks}

    def pairs(task: str, doc_id: int) -> list[tuple[Any, ...]]:
        t = tasks[task]
        sample = next(s for s in t.samples() if s.doc_id == doc_id)
        query = t.build_request(sample).loglikelihood
        if query is None:
            return [(t.prompt_text(t.build_request(sample)),)]
        if query.kind == "loglikelihood_rolling":
            return [(query.continuations[0],)]
        return [tuple(p) for p in query.pairs()]

    return pairs
