"""``assay.testing`` exports what a user tests with, each name loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import assay.testing


def test_every_public_name_resolves_to_a_documented_object():
    for name in assay.testing.__all__:
        obj = getattr(assay.testing, name)
        assert obj.__doc__, name
        assert obj.__module__.startswith("assay.testing."), (name, obj.__module__)


def test_importing_the_package_loads_none_of_its_modules():
    code = "import sys, assay.testing; print(sorted(m for m in sys.modules if m.startswith('assay.testing.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
