"""Prompt variants in a task file: each rebuilds the task with its own prompt (and nothing else); mistakes are named
with the file and line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.errors import ConfigError
from assay.tasks import load_task
from assay.tasks.variants import expand_variants, with_variant
from tests.e2e.e2e_support import run_cli
from tests.matrix.matrix_support import write_task


def test_a_variant_replaces_the_prompt_only(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path))
    cells = expand_variants([task])
    assert [name for name, _ in cells] == ["terse", "verbose"]
    terse, verbose = (tasks[0] for _, tasks in cells)
    assert terse.hash == task.hash  # the terse variant is the task's own prompt
    assert verbose.config.template == "Please work out the sum. {{ question }}" and verbose.system == "You are careful."
    assert verbose.name == task.name and verbose.config.variants is None
    assert [m.name for m in verbose.metrics] == [m.name for m in task.metrics]
    assert verbose.request_hash != task.request_hash


def test_messages_variant_drops_the_template(tmp_path: Path) -> None:
    path = write_task(tmp_path, variants=False)
    raw = yaml.safe_load(path.read_text())
    raw["variants"] = {"chat": {"messages": [{"role": "user", "content": "Q: {{ question }}"}]}}
    path.write_text(yaml.safe_dump(raw))
    chat = with_variant(load_task(path), "chat")
    assert chat.config.template is None and chat.config.messages is not None


def test_a_variant_with_nothing_in_it_is_named_with_its_line(tmp_path: Path) -> None:
    path = write_task(tmp_path, variants=False)
    path.write_text(path.read_text() + "variants:\n  empty: {}\n")
    with pytest.raises(ConfigError, match=r"add\.yaml:\d+: variants\.empty: a variant gives a template"):
        expand_variants([load_task(path)])


def test_unknown_key_in_a_variant_is_named(tmp_path: Path) -> None:
    path = write_task(tmp_path, variants=False)
    path.write_text(path.read_text() + "variants:\n  v1:\n    templte: x\n")
    with pytest.raises(ConfigError, match=r"add\.yaml:\d+: variants\.v1\.templte: unknown key \(did you mean"):
        load_task(path)


def test_tasks_with_different_variants_are_refused(tmp_path: Path) -> None:
    first = load_task(write_task(tmp_path))
    path = write_task(tmp_path, variants=False, name="other")
    path.write_text(path.read_text() + "variants:\n  short: '{{ question }}'\n")
    with pytest.raises(ConfigError, match="name different variants"):
        expand_variants([first, load_task(path)])


def test_a_variant_that_cannot_render_fails_before_anything_runs(tmp_path: Path) -> None:
    path = write_task(tmp_path, variants=False)
    path.write_text(path.read_text() + "variants:\n  broken: '{{ question'\n")
    proc = run_cli("run", str(path), "-m", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "-o", "runs", "-q",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "variant 'broken'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()
