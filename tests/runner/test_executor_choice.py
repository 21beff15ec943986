"""Choosing the Ray executor without Ray installed is a clear error before anything is written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.models.predictions import PredictionsModel
from assay.runner.rescore import rescore
from assay.runner.session import RunSettings, execute
from assay.tasks import Task, load_task


def _task() -> Task:
    rows = [{"id": f"q{i}", "question": f"{i}?", "answer": str(i)} for i in range(3)]
    config = {"name": "t", "dataset": {"rows": rows}, "fields": {"input": "question", "target": "answer"}}
    return load_task({**config, "template": "{{ question }}", "evaluators": ["exact_match"]})


async def test_a_ray_run_without_ray_names_the_extra_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "preds.jsonl").write_text("".join(f'{{"id": "q{i}", "prediction": "{i}"}}\n' for i in range(3)))
    task = _task()
    done = await execute([task], PredictionsModel(tmp_path / "preds.jsonl"), RunSettings(output_dir=tmp_path / "ok"))
    assert done.status == "finished"
    monkeypatch.setitem(sys.modules, "ray", None)  # as if `pip install 'assay[ray]'` had not been run
    settings = RunSettings(output_dir=tmp_path / "runs", executor="ray", progress=False)
    with pytest.raises(ConfigError, match=r"--executor ray needs Ray.*pip install 'assay\[ray\]'"):
        await execute([task], PredictionsModel(tmp_path / "preds.jsonl"), settings)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    with pytest.raises(ConfigError, match=r"pip install 'assay\[ray\]'"):
        await rescore(done.run_dir, executor="ray", output_dir=tmp_path / "rescored")
    assert not (tmp_path / "rescored").exists() or not any((tmp_path / "rescored").iterdir())
