"""compare states two means, their difference and a test of the same outcomes, under a stated rule for errors.

The case of issue 25: ``assay optimize`` said "improved: 0.717 vs 0.667, difference +0.105, p=0.031". On 60 test
samples the candidate won 6 and lost 3, and the 3 it lost it lost by erroring. The headline counted those errors as
failures (0.717 vs 0.667, a difference of +0.05); the paired test left them out (6 wins, 0 losses: p = 0.031).
Counted as failures on both sides it is 6 wins against 3 losses: McNemar p = 0.51.
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from assay.commands.report import compare_command
from assay.report.table import render_comparison
from assay.results import compare_runs
from assay.results.compare import paired_figures
from tests.results import runfactory as rf

# 37 pass in both, 6 only B passes, 3 A passes where B errored, 14 fail in both
A = [1] * 37 + [0] * 6 + [1] * 3 + [0] * 14
B = [1] * 37 + [1] * 6 + [None] * 3 + [0] * 14


@pytest.fixture
def runs(tmp_path):
    return rf.binary_run(tmp_path / "base", A), rf.binary_run(tmp_path / "cand", B)


def test_errors_counted_as_failures_six_wins_three_losses_is_not_significant(runs):
    (m,) = compare_runs(*runs, errors="as_failure").metrics
    assert (m.mean_a, m.mean_b) == (pytest.approx(40 / 60), pytest.approx(43 / 60))  # 0.667 vs 0.717, as headlined
    assert m.diff == m.mean_b - m.mean_a == pytest.approx(3 / 60)  # +0.05, not +0.105
    assert m.test == "mcnemar" and (len(m.improved), len(m.regressed)) == (6, 3)
    assert m.p_value == pytest.approx(260 / 512)  # 2 * P(X <= 3), X ~ Binomial(9, 1/2): 0.51, not 0.031
    assert not m.significant and not m.better
    assert (m.n_shared, m.n_errored_a, m.n_errored_b) == (60, 0, 3)
    assert m.regressed_ids == ["qa-43", "qa-44", "qa-45"] and m.regressed_values == [[1.0, 0.0]] * 3
    assert "all 60 paired samples, an errored sample counting as a failure (score 0)" in m.outcomes
    assert "errored: 0 in A, 3 in B" in m.outcomes


def test_excluding_errors_shows_the_means_of_the_pairs_tested(runs):
    """The default (an error is never a zero): the pairs both runs scored, and the means shown are theirs."""
    comp = compare_runs(*runs)
    (m,) = comp.metrics
    assert (m.n_shared, m.mean_a, m.mean_b) == (57, pytest.approx(37 / 57), pytest.approx(43 / 57))
    assert m.diff == m.mean_b - m.mean_a == pytest.approx(6 / 57)
    assert m.p_value == pytest.approx(2 / 64)  # 6 wins, 0 losses among the scored pairs ...
    assert (m.n_errored_a, m.n_errored_b, m.unscored_in_b) == (0, 3, [43, 44, 45])  # ... and B's 3 errors apart
    assert (m.run_mean_a, m.run_mean_b) == (pytest.approx(40 / 60), pytest.approx(43 / 57))
    assert "the 57 of 60 paired samples both runs scored" in m.outcomes and "errored: 0 in A, 3 in B" in m.outcomes
    assert any("left out of both means and the paired test" in w for w in comp.warnings)
    assert comp.errors == "exclude" and comp.to_dict()["metrics"][0]["outcomes"] == m.outcomes


@pytest.mark.parametrize("fmt", ["markdown", "rich"])
def test_the_comparison_table_states_the_rule_and_means_that_differ_by_the_difference(runs, fmt):
    flat = " ".join(render_comparison(compare_runs(*runs, errors="as_failure"), fmt).split())
    assert "0.6667" in flat and "0.7167" in flat and "+0.0500" in flat
    assert "counting as a failure" in flat and "paired percentile bootstrap" in flat


def test_compare_command_states_which_outcomes_it_compared(runs):
    res = CliRunner().invoke(compare_command, [str(runs[0]), str(runs[1]), "--format", "markdown"])
    assert res.exit_code == 0, res.output
    assert "the 57 of 60 paired samples both runs scored" in res.stdout and "+0.1053" in res.stdout


def test_paired_figures_are_of_one_set_of_outcomes():
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0, 1, 40).round(2), rng.uniform(0, 1, 40).round(2)
    fig = paired_figures(a, b, rng=np.random.default_rng(1), iters=2000)
    assert fig.diff == fig.mean_b - fig.mean_a and fig.test == "sign_flip" and fig.n == 40
    assert fig.ci_method == "paired_bootstrap" and fig.bootstrap_method == "exact"
    lower = paired_figures(a, b, higher_is_better=False, rng=np.random.default_rng(1), iters=2000)
    assert np.array_equal(lower.worse_mask, fig.better_mask)
    with pytest.raises(ValueError, match="without NaN"):
        paired_figures(np.array([1.0, np.nan]), np.array([1.0, 0.0]), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown rule"):
        compare_runs("x", "y", errors="as_zero")
