"""Start-up of `assay run`: what the first request waits for, and what is left for later without slowing the end."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.errors import DataError
from assay.models.python import PythonModel
from assay.runner.session import RunSettings, execute
from assay.tasks import load_task
from tests.e2e.e2e_support import only_run_dir, write_task

# the server answers from a thread of the same process, so it sees the modules loaded when the first request came
_RUN_AND_LOOK = textwrap.dedent(
    """
    import json
    import sys
    from assay.testing.server import OpenAITestServer
    from tests.e2e.e2e_support import arithmetic_reply

    seen = {}

    def reply(request):
        if not seen:
            seen["loaded"] = sorted(name for name in ("numpy", "rich", "jinja2") if name in sys.modules)
        return arithmetic_reply(request)

    with OpenAITestServer(reply) as server:
        from assay.cli import main

        args = ["run", sys.argv[1], "--model", "openai:x", "--base-url", server.base_url, "-q", "-o", sys.argv[2]]
        try:
            main(args)
        except SystemExit as end:
            code = end.code
    report = {"code": code, "first": seen, "rich_at_end": "rich" in sys.modules}
    print(json.dumps(report))
    """
)


def test_the_first_request_waits_for_neither_numpy_nor_jinja_and_the_run_still_writes_results(tmp_path: Path) -> None:
    """numpy (~0.1 s to import) is needed only for the results, and Jinja only by templates that are more than
    text and ``{{ name }}``: the first request goes out without them."""
    task = write_task(tmp_path, 20)
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LOOK, str(task), str(tmp_path / "runs")],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0, proc.stderr
    assert seen["first"]["loaded"] == []
    assert not seen["rich_at_end"]  # a quiet run's plain messages (not a terminal) never import rich, nor its markup
    results = json.loads((only_run_dir(tmp_path / "runs") / "results.json").read_text())
    assert results["results"]["add"]["exact_match,none"] == 17 / 20  # q0, q7, q14 are answered wrongly


def test_a_row_that_cannot_render_still_stops_the_run_before_any_request(tmp_path: Path) -> None:
    """Pending prompts are checked before the first request without building each one's Request: a row whose
    prompt cannot render fails the run, naming the row, before the model is called or anything is written."""
    rows = [{"id": f"s{i}", "q": f"{i}?", "a": str(i)} for i in range(30)]
    del rows[17]["q"]
    calls: list[str] = []

    def agent(prompt: str) -> str:
        calls.append(prompt)
        return "0"

    config = {"name": "t", "dataset": {"rows": rows}, "fields": {"target": "a"}, "template": "Q: {{ q }}"}
    config["evaluators"] = ["exact_match"]
    settings = RunSettings(output_dir=tmp_path / "runs", progress=False, cache=False)
    with pytest.raises(DataError, match=r"row 18: .*undefined variable 'q'"):
        asyncio.run(execute([load_task(config)], PythonModel(agent, threaded=False), settings))
    assert calls == []
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
