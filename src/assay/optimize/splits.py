"""Fixed, seeded train / validation / test splits of a task's dataset, and the subset files candidates run on.

The split depends only on the seed and the number of rows (or on a row field naming each row's split), so a
resumed or repeated optimisation sees the same split; the test split is never handed to a strategy.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.hashing import sha256_hex
from assay.optimize.spec import SplitSpec

SPLITS = ("train", "val", "test")


def make_splits(rows: list[dict[str, Any]], spec: SplitSpec) -> dict[str, list[int]]:
    """Row indices of each split (each sorted)."""
    n = len(rows)
    if spec.field is not None:
        out: dict[str, list[int]] = {s: [] for s in SPLITS}
        for i, row in enumerate(rows):
            value = row.get(spec.field)
            if value not in out:
                raise ConfigError(
                    f"optimize.splits.field: row {i + 1} has {spec.field}={value!r}; expected train, val or test"
                )
            out[str(value)].append(i)
    else:
        order = list(range(n))
        random.Random(spec.seed).shuffle(order)
        n_train = round(n * spec.train)
        n_val = round(n * spec.val)
        out = {
            "train": sorted(order[:n_train]),
            "val": sorted(order[n_train : n_train + n_val]),
            "test": sorted(order[n_train + n_val :]),
        }
    for name in SPLITS:
        if not out[name]:
            raise ConfigError(f"optimize.splits: the {name} split is empty ({n} rows); the dataset is too small")
    return out


def subset_file(folder: Path, rows: list[dict[str, Any]], indices: list[int]) -> Path:
    """A JSONL file of the given rows (named by their content, written once, atomically)."""
    folder.mkdir(parents=True, exist_ok=True)
    payload = [rows[i] for i in indices]
    path = folder / f"rows-{sha256_hex(payload)[:16]}.jsonl"
    if not path.is_file():
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for row in payload:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    return path
