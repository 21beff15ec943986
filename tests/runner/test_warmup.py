"""What start-up puts off: the warm-up thread (imports made off the run's thread, a failed one left to the code that
needs it) and the GC pause (ended once, never taking over a GC already off)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay.runner.warmup import Warmup


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "warm_probe_mod.py").write_text("import threading\nTHREAD = threading.current_thread().name\n")
    (tmp_path / "warm_broken_mod.py").write_text("raise RuntimeError('broken on import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "warm_probe_mod"
    for name in ("warm_probe_mod", "warm_broken_mod"):
        sys.modules.pop(name, None)


def test_modules_are_imported_in_the_warmup_thread_once_started(probe: str) -> None:
    warm = Warmup((probe,))
    warm.wait()  # not started: nothing to wait for
    assert probe not in sys.modules
    warm.start()
    warm.start()  # a second start does nothing
    warm.wait()
    assert sys.modules[probe].THREAD == "assay-warmup"


def test_a_module_that_fails_to_import_is_left_to_its_user(probe: str) -> None:
    warm = Warmup(("warm_broken_mod", probe))
    warm.start()
    warm.wait()  # no error here: the code that imports the module later reports it
    assert "warm_broken_mod" not in sys.modules and probe not in sys.modules
    with pytest.raises(RuntimeError, match="broken on import"):
        __import__("warm_broken_mod")


def test_nothing_starts_when_every_module_is_already_imported() -> None:
    warm = Warmup(("json",))
    warm.start()
    assert warm._thread is None


def test_the_startup_gc_pause_ends_once_and_leaves_a_gc_already_off_alone() -> None:
    import gc

    from assay.gcpause import pause_startup, resume_startup

    assert gc.isenabled()
    try:
        pause_startup()
        assert not gc.isenabled()
        resume_startup()
        assert gc.isenabled()
        resume_startup()  # a second end changes nothing
        assert gc.isenabled()
        gc.disable()
        pause_startup()  # the GC was off already: the pause does not own it
        resume_startup()
        assert not gc.isenabled()
    finally:
        gc.enable()
