"""The names ``import assay`` offers: exactly these, each loading when first used."""

from __future__ import annotations

import subprocess
import sys

import assay

PUBLIC = {
    "__version__",
    "evaluators",
    # evaluating one output
    "Verdict",
    "Evaluator",
    "BatchResult",
    "Options",
    "register",
    # errors
    "AssayError",
    "ConfigError",
    "DataError",
    "ModelError",
    "RunFailed",
    # models
    "Model",
    "Request",
    "Response",
    "ToolCall",
    "Usage",
    "load_model",
    # tasks and runs
    "Task",
    "Sample",
    "load_task",
    "run",
    "arun",
    "SampleRecord",
    "Run",
    "load_run",
    "compare_runs",
    # optimisation
    "optimize",
    "aoptimize",
    "OptimizationResult",
}


def test_the_top_level_names_are_exactly_the_public_api():
    """A name added to (or taken from) ``assay`` is a decision about the public API: change PUBLIC with it."""
    assert set(assay.__all__) == PUBLIC
    assert len(assay.__all__) == len(PUBLIC)
    for name in PUBLIC:
        assert getattr(assay, name) is not None, name


def test_niche_names_stay_in_their_modules():
    from assay.reductions import Aggregate, Reduction, reduce_scores

    assert Aggregate and Reduction and reduce_scores
    for name in ("Aggregate", "Reduction", "reduce_scores"):
        assert not hasattr(assay, name)


def test_import_assay_loads_no_public_module_until_used():
    code = (
        "import sys, assay\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('assay.'))\n"
        "assert loaded == ['assay.lazyexports', 'assay.version'], loaded\n"  # the loader of the lazy names only
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
