"""The local executor stays the default and never imports Ray (a run, a re-score); `assay --help` does not
either."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.runner.executors import RayOptions
from assay.runner.executors.choose import make_executor
from assay.runner.session import RunSettings
from tests.e2e.e2e_support import write_task

_LOCAL_RUN = """
import sys
import assay
from assay.testing.server import OpenAITestServer
with OpenAITestServer("7") as srv:
    assay.run(sys.argv[1], {"provider": "openai", "model": "m", "base_url": srv.base_url, "api_key": "k"},
              output_dir=sys.argv[2], bootstrap_iters=10, cache=False, progress=False)
import asyncio
from pathlib import Path
from assay.runner.rescore import rescore
asyncio.run(rescore(next(Path(sys.argv[2]).iterdir()), output_dir=Path(sys.argv[2]) / "scored"))
import assay.cli
assay.cli.main(["--help"], standalone_mode=False)
assay.cli.main(["score", "--help"], standalone_mode=False)
print("ray" in sys.modules, any(m.startswith("ray.") for m in sys.modules))
"""


def test_a_local_run_a_rescore_and_the_help_never_import_ray(tmp_path: Path) -> None:
    task = write_task(tmp_path, 3)
    out = subprocess.run(
        [sys.executable, "-c", _LOCAL_RUN, str(task), str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False False"


def test_the_default_executor_is_local() -> None:
    settings = RunSettings()
    assert settings.executor == "local"
    assert settings.ray == RayOptions()
    with pytest.raises(ValueError, match="unknown executor 'dask'; known: local, ray"):
        make_executor("dask", None, None, None, cache=None, progress=None)  # type: ignore[arg-type]
