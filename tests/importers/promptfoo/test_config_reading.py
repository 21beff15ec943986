"""promptfoo configs read as promptfoo reads them: CSV test files by glob, YAML 1.2 scalars, and what has no assay
equivalent refused by name (a clear error, exit 1, no traceback)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from assay.tasks.importers.promptfoo.csvtests import assertion_from_string
from assay.tasks.importers.promptfoo.reader import read_config
from assay.tasks.importers.promptfoo.where import At
from assay.testing.server import OpenAITestServer
from tests.support import assay_in_process

REPLIES = {"Hello world": "Ahoy, world", "I'm hungry": "Arr, grub!", "Output the story of your life in json": "{}"}


def reply(request: dict[str, Any]) -> str:
    return REPLIES[request["messages"][-1]["content"]]


def run(work: Path, server: OpenAITestServer) -> subprocess.CompletedProcess[str]:
    env = {"OPENAI_BASE_URL": server.base_url, "ASSAY_CACHE_DIR": str(work / "cache")}
    return assay_in_process("run", "promptfooconfig.yaml", "-o", "runs", cwd=work, env=env)


def test_tests_from_a_csv_glob_with_expected_columns(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "a.csv").write_text(
        "body,__expected\nHello world,fn:output.toLowerCase().includes('ahoy')\n"
        "I'm hungry,icontains:GRUB\nOutput the story of your life in json,is-json\n"
    )
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['{{body}}']\nproviders: [openai:chat:m]\ntests: file://cases/*.csv\n"
    )
    with OpenAITestServer(reply, models=("m",)) as server:
        proc = run(tmp_path, server)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    entry = json.loads((run_dir / "results.json").read_text())["assay"]["tasks"][tmp_path.name]["filters"]["none"]
    assert (entry["row_checks"]["mean"], entry["row_checks"]["n_scored"]) == (1.0, 3)


def test_yaml_1_2_and_defaults(tmp_path: Path) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['Say {{word}}']\nproviders: [echo]\n"
        "defaultTest: {vars: {word: on}, assert: [{type: contains, value: Say}]}\n"
        "tests:\n  - vars: {word: Yes}\n  - vars: {word: [No, off]}\n  - {threshold: 0.5}\n"
    )
    config = read_config(tmp_path / "promptfooconfig.yaml")
    assert [t.vars["word"] for t in config.tests] == ["Yes", "No", "off", "on"]  # strings, lists expanded
    assert all(t.checks == [{"type": "contains", "value": "Say"}] for t in config.tests)
    at = At("x.csv", 2)
    assert assertion_from_string("similar(0.8):Ahoy", at) == {"type": "similar", "value": "Ahoy", "threshold": 0.8}
    assert assertion_from_string("note: plain text", at) == {"type": "equals", "value": "note: plain text"}


def test_an_assertion_type_without_an_equivalent_is_named(tmp_path: Path) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['{{body}}']\nproviders: [openai:chat:m]\n"
        "tests:\n  - vars: {body: x}\n    assert: [{type: cost, threshold: 0.1}, {type: webhook, value: u}]\n"
    )
    with OpenAITestServer(reply, models=("m",)) as server:
        proc = run(tmp_path, server)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "promptfooconfig.yaml:5: tests[0].assert[1].type: assertion type 'webhook' is refused at load: " in (
        proc.stderr
    )
