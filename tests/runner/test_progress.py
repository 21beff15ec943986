"""The progress display shows done/total, rate, errors and cache hits; quiet mode prints nothing."""

from __future__ import annotations

import io

from rich.console import Console

from assay.runner.progress import RunProgress


def test_progress_shows_counts_errors_and_cache_hits():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160)
    with RunProgress(10, enabled=True, console=console) as progress:
        progress.start(already_done=3)
        progress.advance(error=False, cache_hits=1)
        progress.advance(error=True, cache_hits=0)
        progress.advance(error=False, cache_hits=2)
    text = out.getvalue()
    assert "6/10" in text and "errors 1" in text and "cache hits 3" in text and "/s" in text
    assert (progress.done, progress.errors, progress.cache_hits) == (6, 1, 3)


def test_quiet_progress_prints_nothing_but_still_counts():
    out = io.StringIO()
    progress = RunProgress(5, enabled=False, console=Console(file=out, force_terminal=True))
    progress.start()
    progress.advance(error=True, cache_hits=1)
    progress.stop()
    assert out.getvalue() == "" and progress.done == 1 and progress.errors == 1


def test_advance_many_counts_a_chunk_at_once() -> None:
    from assay.runner.progress import RunProgress

    progress = RunProgress(10, enabled=False)
    progress.start(already_done=2)
    progress.advance_many(5, errors=2, cache_hits=1)
    progress.advance(error=True, cache_hits=0)
    assert (progress.done, progress.errors, progress.cache_hits) == (8, 3, 1)
