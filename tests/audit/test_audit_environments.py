"""`assay audit` on environment tasks: trajectories with no model (the agent does nothing, or deletes its whole
workspace) run in real environments and are scored by the task's own checks. A check that an untouched repository
passes, and a world whose expected state is its starting state, are found; the SWE-style example and the order
world example are clean."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from assay.audit.battery import audit_task
from assay.tasks import Task
from tests.sandbox.sandbox_support import needs_bwrap

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "environments"


@needs_bwrap
def test_the_swe_example_is_clean() -> None:
    audit = audit_task(Task.from_yaml(EXAMPLES / "swe" / "task.yaml"))
    figures = {f.probe: f for f in audit.probes}
    assert set(figures) == {"env:nothing", "env:delete-all"}
    assert all(f.applicable == 5 and f.passed == 0 for f in figures.values())
    assert audit.flagged == [] and audit.unjudged == [] and audit.note is None


@needs_bwrap
def test_a_check_an_untouched_workspace_passes_is_found(tmp_path: Path) -> None:
    """A lax check (`grep -q def`: true of the buggy code too) passes the agent that does nothing."""
    rows = [{"id": f"r{i}", "input": "fix it", "files": {"app.py": "def f():\n    return 1\n"}} for i in range(4)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {
        "name": "lax",
        "dataset": "rows.jsonl",
        "template": "{{ input }}",
        "tools": ["bash"],
        "environment": {},
        "evaluators": [{"name": "env_check", "command": "grep -q def app.py"}],
    }
    (tmp_path / "lax.yaml").write_text(yaml.safe_dump(config))
    audit = audit_task(Task.from_yaml(tmp_path / "lax.yaml"))
    (flagged,) = audit.flagged
    assert flagged.probe == "env:nothing" and flagged.passed == 4 and flagged.metric == "env_check"
    assert flagged.example is not None and flagged.example["reason"]
    deleted = next(f for f in audit.probes if f.probe == "env:delete-all")
    assert deleted.passed == 0 and not deleted.flagged  # grep fails once app.py is gone


def test_a_world_whose_expected_state_is_its_start_is_found(tmp_path: Path) -> None:
    """The order world's first row expects changes, so doing nothing fails it; a row that expects nothing to change
    passes the agent that does nothing, and is named."""
    shop = EXAMPLES / "shop"
    rows = [json.loads(line) for line in (shop / "shop.jsonl").read_text().splitlines()]
    rows[1]["expected_state"] = {"orders": {"O3": {"address": "9 Oak Ave"}}}  # the address it already has
    (tmp_path / "shop.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = yaml.safe_load((shop / "task.yaml").read_text())
    config["dataset"] = str(tmp_path / "shop.jsonl")
    audit = audit_task(Task.from_config(config, base_dir=shop))
    (figure,) = audit.probes  # a pure world has no workspace to delete
    assert figure.probe == "env:nothing" and figure.applicable == 2 and figure.passed == 1
    assert figure.flagged and figure.example is not None and figure.example["sample_id"] == "shop-2"
