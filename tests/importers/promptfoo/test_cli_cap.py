"""`assay run --max-tests N` sets the cap on a promptfoo config's tests: a config of 10^6 combinations is refused
with the count before anything is built, and a config over the default cap runs once the cap is raised."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support import assay_in_process

BIG = """
prompts: ["{{a}} {{b}} {{c}}"]
providers: [echo]
tests:
  - vars:
      a: [{values}]
      b: [{values}]
      c: [{values}]
"""


def _config(tmp_path: Path, per_var: int) -> Path:
    values = ", ".join(f"x{i}" for i in range(per_var))  # promptfoo expands a list whose first item is a string
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(BIG.replace("{values}", values))
    return path


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {"ASSAY_CACHE_DIR": str(tmp_path / "cache"), "ASSAY_PROMPTFOO_MAX_TESTS": None}
    return assay_in_process("run", "promptfooconfig.yaml", "-o", "runs", "-q", *extra, cwd=tmp_path, env=env)


def test_a_million_combinations_are_refused_with_the_count(tmp_path: Path) -> None:
    _config(tmp_path, 100)  # 100^3 = 10^6 tests
    proc = _run(tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "expands to 1,000,000 tests" in proc.stderr and "more than the cap of 100,000" in proc.stderr
    assert "promptfooconfig.yaml:" in proc.stderr and "--max-tests N" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_max_tests_raises_and_lowers_the_cap(tmp_path: Path) -> None:
    _config(tmp_path, 3)  # 27 tests
    lowered = _run(tmp_path, "--max-tests", "20")
    assert lowered.returncode == 2 and "expands to 27 tests" in lowered.stderr and "cap of 20" in lowered.stderr
    allowed = _run(tmp_path, "--max-tests", "27")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
