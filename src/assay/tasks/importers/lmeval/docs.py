"""An lm-eval task's documents: local ``json`` / ``csv`` files given by ``dataset_kwargs.data_files`` (read offline),
or a Hugging Face dataset through ``datasets`` (the ``hf`` extra); ``process_docs`` applied to each split."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.yamlfile import TaskFile

LOCAL_BUILDERS = ("json", "csv")


class Documents:
    """The documents of each split of one task, read once, ``process_docs`` applied."""

    def __init__(self, tf: TaskFile, process_docs: Callable[[Any], Any] | None) -> None:
        self.tf = tf
        self.process_docs = process_docs
        self._splits: dict[str, list[dict[str, Any]]] = {}
        data = tf.data
        self.path = data.get("dataset_path")
        self.name = data.get("dataset_name")
        kwargs = data.get("dataset_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise tf.error(("dataset_kwargs",), "a mapping of load_dataset keyword arguments")
        self.kwargs = dict(kwargs)
        if not isinstance(self.path, str) or not self.path:
            raise tf.error(("dataset_path",), "a dataset path is required (json / csv with data_files, or an HF id)")

    def split(self, split: str, key: str) -> list[dict[str, Any]]:
        """The processed documents of ``split`` (named by the key ``key`` of the task file)."""
        if split not in self._splits:
            rows = self._read(split, key)
            self._splits[split] = self._process(rows, key)
        return self._splits[split]

    def _process(self, rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
        if self.process_docs is None:
            return rows
        try:
            import datasets  # type: ignore[import-untyped]

            given: Any = datasets.Dataset.from_list(rows)  # hooks call Dataset.map / filter, as in lm-eval
        except ImportError:
            given = rows
        try:
            out = self.process_docs(given)
        except Exception as err:
            raise self.tf.error(("process_docs",), f"the hook raised {type(err).__name__}: {err}") from None
        docs = [dict(d) for d in out]
        if not docs:
            raise self.tf.error(("process_docs",), f"the hook left no documents in the {key} split")
        return docs

    def _read(self, split: str, key: str) -> list[dict[str, Any]]:
        if self.path in LOCAL_BUILDERS and "data_files" in self.kwargs:
            return self._local(split, key)
        return self._hub(split, key)

    def _files(self, split: str, key: str) -> list[Path]:
        files = self.kwargs["data_files"]
        if isinstance(files, dict):
            if split not in files:
                known = ", ".join(map(str, files))
                raise self.tf.error((key,), f"split {split!r} is not in dataset_kwargs.data_files (splits: {known})")
            files = files[split]
        elif split != "train":  # datasets names a lone file list's split 'train'
            raise self.tf.error((key,), f"split {split!r}: data_files without split names give only 'train'")
        items = [files] if isinstance(files, str) else list(files)
        out = []
        for item in items:
            p = Path(str(item)).expanduser()
            if not p.is_absolute():
                beside = self.tf.path.parent / p  # beside the task file first, else the working directory (lm-eval)
                p = beside if beside.exists() else p.resolve()
            if not p.is_file():
                raise self.tf.error(("dataset_kwargs", "data_files"), f"data file not found: {p}")
            out.append(p)
        return out

    def _local(self, split: str, key: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for p in self._files(split, key):
            rows.extend(_read_csv(p) if self.path == "csv" else _read_json(p))
        if not rows:
            raise self.tf.error((key,), f"split {split!r} has no rows")
        return rows

    def _hub(self, split: str, key: str) -> list[dict[str, Any]]:
        try:
            import datasets
        except ImportError:
            raise self.tf.error(
                ("dataset_path",),
                f"dataset {self.path!r} is read through Hugging Face datasets, which is not installed "
                "(pip install 'assay[hf]'); local files: dataset_path: json with dataset_kwargs.data_files",
            ) from None
        try:
            ds = datasets.load_dataset(self.path, self.name, split=split, **self.kwargs)
        except Exception as err:
            raise self.tf.error(
                ("dataset_path",), f"loading split {split!r} failed: {type(err).__name__}: {err}"
            ) from None
        return [dict(r) for r in ds]


def _read_json(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        data = json.loads(text)
        rows = data if isinstance(data, list) else []
    else:
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ConfigError(f"{path}:{n}: invalid JSON: {err.msg}") from None
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise ConfigError(f"{path}: row {n} is not an object")
    return rows


def _read_csv(path: Path) -> list[dict[str, Any]]:
    try:
        import datasets  # types inferred as lm-eval sees them (a column of digits is a number)

        return [dict(r) for r in datasets.load_dataset("csv", data_files=str(path), split="train")]
    except ImportError:
        with path.open(newline="", encoding="utf-8") as fh:
            return [dict(r) for r in csv.DictReader(fh)]
