"""Which samples a page of a large run holds: errored, then failing, then passing ones, each spread over the run;
the page's list, positions (theme links) and note agree with that choice."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.report.html import render_html
from assay.report.pageselect import select_samples, spread
from assay.results import load_run
from tests.results.runfactory import manifest, record, task, verdict, write_run


def embedded(html: str) -> dict[str, Any]:
    block = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', html, re.S)
    assert block is not None
    data: dict[str, Any] = json.loads(block.group(1))
    return data


def outcome(i: int) -> int | None:
    """Sample i of a task: errored every 17th, failing every 3rd of the rest, else passing."""
    return None if i % 17 == 0 else 0 if i % 3 == 1 else 1


def two_task_run(path: Path, sizes: tuple[int, int] = (100, 60)) -> Path:
    tasks, records = [], []
    for name, n in zip(("alpha", "beta"), sizes, strict=True):
        tasks.append(task(name, n=n))
        for i in range(n):
            o = outcome(i)
            v = verdict(None, error="judge reply unparseable") if o is None else verdict(float(o))
            records.append(record(name, i, {"exact_match": [v]}))
    records.reverse()  # written out of doc_id order: the page still lists them by task and doc_id
    return write_run(path, manifest(tasks), records)


def expected(budget: int, sizes: tuple[int, int] = (100, 60)) -> list[str]:
    """The sample ids a page of ``budget`` holds, by the rule, in page order."""
    ids = [f"{name}-{i}" for name, n in zip(("alpha", "beta"), sizes, strict=True) for i in range(n)]
    kinds = [outcome(i) for n in sizes for i in range(n)]
    left, chosen = budget, []
    for kind in (None, 0, 1):
        members = [j for j, k in enumerate(kinds) if k == kind]
        take = members if len(members) <= left else [members[(t * len(members)) // left] for t in range(left)]
        chosen += take
        left -= len(take)
    return [ids[j] for j in sorted(chosen)]


def test_spread_keeps_the_first_and_the_order_and_leaves_even_gaps() -> None:
    members = np.arange(0, 300, 3, dtype=np.int64)  # 100 members
    assert spread(members, 100) is members and spread(members, 500) is members
    picked = spread(members, 7)
    assert picked.size == 7 and picked[0] == 0 and np.all(np.diff(picked) > 0)
    gaps = np.diff(picked) // 3
    assert gaps.max() - gaps.min() <= 1  # 100 members over 7: every 14th or 15th
    assert spread(members, 0).size == 0


def test_a_run_within_the_budget_is_held_whole(tmp_path: Path) -> None:
    run = load_run(two_task_run(tmp_path / "r"))
    for budget in (None, 0, 160, 1_000):
        chosen = select_samples([run], budget)
        assert chosen.picks == {(0, "alpha"): None, (0, "beta"): None}
        assert chosen.shown == chosen.totals == [160] and not chosen.capped


@pytest.mark.parametrize("budget", [5, 13, 40, 90, 159])
def test_past_the_budget_errored_then_failing_then_passing_samples(tmp_path: Path, budget: int) -> None:
    run = load_run(two_task_run(tmp_path / "r"))
    chosen = select_samples([run], budget)
    assert chosen.shown == [budget] and chosen.totals == [160] and chosen.capped
    ids = [run.columns[t].sample_ids[int(i)] for t in ("alpha", "beta") for i in chosen.picks[(0, t)]]
    assert ids == expected(budget)


def test_the_page_holds_the_chosen_samples_says_so_and_links_themes_to_them(tmp_path: Path) -> None:
    path = two_task_run(tmp_path / "r")
    html = render_html([path], max_samples=40)
    data = embedded(html)
    assert [s["i"] for s in data["samples"]] == expected(40)
    note = re.search(r'<p class="note" id="samples-note">([^<]*)</p>', html)
    assert note is not None and "This page holds 40 of its 160 samples" in note.group(1)
    assert "every errored sample first" in note.group(1)
    assert data["themes"], "the failing samples make themes"
    from assay.feedback.themes import group_failures

    themes = group_failures(load_run(path))
    assert themes == group_failures(path)  # a loaded run's records read as JSON objects: the folder's own themes
    for entry in data["themes"]:
        on_page = {data["samples"][p]["i"] for p in entry["idx"]}
        theme_ids = {sid for _, sid in themes[entry["n"]].samples}
        assert on_page == theme_ids & set(expected(40))  # each theme links to its samples the page holds
    whole = render_html([path], max_samples=0)
    assert len(embedded(whole)["samples"]) == 160 and 'id="samples-note"' not in whole
    assert render_html([path]).count('id="samples-note"') == 0  # 160 samples: within the default budget


def test_each_run_of_a_comparison_page_has_its_own_budget(tmp_path: Path) -> None:
    a = two_task_run(tmp_path / "a")
    b = two_task_run(tmp_path / "b", sizes=(10, 5))
    html = render_html([a, b], max_samples=40)
    samples = embedded(html)["samples"]
    assert [s["i"] for s in samples if s["r"] == 0] == expected(40)
    assert len([s for s in samples if s["r"] == 1]) == 15  # the small run is held whole
    note = re.search(r'id="samples-note">([^<]*)<', html)
    assert note is not None and "40 of the 160 samples of a" in note.group(1) and "samples of b" not in note.group(1)
