"""A resumed run's settings: the recorded ones, with the runtime ones given now on top."""

from __future__ import annotations


def test_a_resumed_runs_ray_options_change_only_what_is_given():
    """--resume DIR --ray-start-timeout 120 keeps the recorded cluster address (it replaced every Ray option)."""
    from assay.api import resumed_settings

    recorded = {"concurrency": 4, "ray": {"address": "ray://127.0.0.1:10001", "start_timeout_s": 3.0}, "unknown": 1}
    merged = resumed_settings(recorded, {"ray": {"start_timeout_s": 120.0}, "concurrency": 8})
    assert merged == {"concurrency": 8, "ray": {"address": "ray://127.0.0.1:10001", "start_timeout_s": 120.0}}
    assert resumed_settings(recorded, {})["ray"] == recorded["ray"]
