"""Dotted paths: objects by name, and modules in the working directory as `python -m` would find them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay.importing import dotted_path, import_object


def test_a_module_in_the_working_directory_is_found_without_it_on_sys_path(tmp_path: Path, monkeypatch):
    """The `assay` console script does not put the working directory on sys.path; `agent:answer` still works."""
    (tmp_path / "cwd_agent_xyz.py").write_text("def answer(request):\n    return 'hi'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        assert import_object("cwd_agent_xyz:answer")(None) == "hi"
    finally:
        sys.modules.pop("cwd_agent_xyz", None)


def test_errors_say_what_is_missing():
    with pytest.raises(ValueError, match="cannot import module 'no_such_module_abc'"):
        import_object("no_such_module_abc:f")
    with pytest.raises(ValueError, match="has no attribute 'nope'"):
        import_object("json:nope")
    with pytest.raises(ValueError, match="is not a dotted path"):
        import_object("plain")


def test_dotted_path_round_trips_and_refuses_lambdas():
    import json

    assert import_object(dotted_path(json.dumps)) is json.dumps
    with pytest.raises(ValueError, match="no importable dotted path"):
        dotted_path(lambda x: x)
