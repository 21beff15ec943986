"""Evaluators by name: built-ins, the decorator, and third-party packages through the entry-point group."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators import registry
from assay.reductions import REDUCTIONS, reduce_scores


def test_every_builtin_name_builds_and_round_trips():
    for name in ["exact_match", "fuzzy_match", "contains", "token_f1", "numeric", "json_match", "tool_usage"]:
        ev = evaluators.get(name)
        assert ev.name == name and evaluators.get(**ev.to_config()) == ev


def test_decorator_registers_a_new_evaluator():
    @evaluators.register("always_half")
    class AlwaysHalf(evaluators.Evaluator):
        def check(self, actual, expected):
            from assay import Verdict

            return Verdict.partial(0.5, "half", threshold=0.6)

    try:
        verdict = evaluators.get("always_half").evaluate("x", "y")
        assert verdict.score == 0.5 and not verdict.passed and verdict.reason == "half"
        assert "always_half" in evaluators.names()
    finally:
        registry._REGISTRY.pop("always_half")


def test_third_party_package_registers_through_the_entry_point_group(tmp_path: Path, monkeypatch):
    """A package installed with an ``assay.evaluators`` entry point is found by name, without importing it first."""
    (tmp_path / "acme_evals.py").write_text(
        textwrap.dedent(
            """
            from assay import Verdict
            from assay.evaluators import Evaluator

            class Shouty(Evaluator):
                def check(self, actual, expected):
                    return Verdict.pass_() if actual.isupper() else Verdict.fail("not shouted", feedback="USE CAPS")
            """
        )
    )
    dist = tmp_path / "acme_evals-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-evals\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[assay.evaluators]\nshouty = acme_evals:Shouty\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    try:
        ev = evaluators.get("shouty")
        assert ev.evaluate("HELLO").passed
        assert ev.evaluate("hello").feedback == "USE CAPS"
        assert "shouty" in evaluators.names()
    finally:
        registry._REGISTRY.pop("shouty", None)
        sys.modules.pop("acme_evals", None)


def test_unknown_name_error_lists_known_names_including_entry_points():
    with pytest.raises(ConfigError, match=r"unknown evaluator 'nope'; known evaluators: .*exact_match"):
        evaluators.get("nope")


@pytest.mark.parametrize(
    ("name", "value", "purpose"),
    [
        ("mean", 0.5, "mean of m scores over 4 samples: 0.5"),
        ("sum", 2.0, "summation of m scores over 4 samples: 2"),
        ("min", 0.0, "minimum of m scores over 4 samples: 0"),
        ("max", 1.0, "maximum of m scores over 4 samples: 1"),
        ("pass_rate", 0.25, "share passing of m pass/fail outcomes over 4 samples: 0.25"),
    ],
)
def test_reductions_compute_and_explain(name, value, purpose):
    scores = np.array([1.0, 0.0, 0.5, 0.5, np.nan])
    passed = np.array([True, False, False, False, False])
    agg = reduce_scores("m", scores, passed, name)
    assert agg.value == value and agg.n_scored == 4 and agg.n_errored == 1
    assert agg.explanation == purpose + " (1 errored sample excluded)"


def test_none_reduction_keeps_per_sample_values_and_unknown_reduction_is_named():
    agg = reduce_scores("m", np.array([0.2, 0.8]), np.array([False, True]), "none")
    assert list(agg.value) == [0.2, 0.8]
    with pytest.raises(ValueError, match="unknown reduction 'median'; known: " + ", ".join(sorted(REDUCTIONS))):
        reduce_scores("m", np.array([0.2]), np.array([False]), "median")
