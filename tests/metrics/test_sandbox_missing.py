"""Without bubblewrap there is no weaker fallback: code_exec refuses to be built and says how to install it."""

from __future__ import annotations

import pytest

from assay import evaluators
from assay.errors import ConfigError


def test_without_bubblewrap_the_evaluator_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(ConfigError, match=r"not found; install bubblewrap: `apt-get install bubblewrap`"):
        evaluators.get("code_exec", allow_untrusted_code=True)
    monkeypatch.setenv("ASSAY_BWRAP", "/bin/false")  # present but cannot make a sandbox: the same, with what it said
    with pytest.raises(ConfigError, match=r"code sandbox: "):
        evaluators.get("code_exec", allow_untrusted_code=True)
