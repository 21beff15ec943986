"""Hugging Face datasets (the ``hf`` extra): ``datasets`` is imported only when such a dataset is read."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from assay.data.formats import Row, display_path
from assay.data.spec import DatasetSpec
from assay.errors import ConfigError, DataError


def _import_datasets() -> Any:
    try:
        return importlib.import_module("datasets")
    except ImportError:
        raise ConfigError(
            "reading a Hugging Face dataset needs the 'datasets' package: pip install 'assay[hf]'"
        ) from None


def hf_rows(spec: DatasetSpec) -> tuple[list[Row], str]:
    """The rows of a Hugging Face dataset and the name to show for it: ``hf: repo`` (or a builder such as ``json``
    with ``data_files``) through ``load_dataset``, or a ``save_to_disk`` folder (``path: dir``, ``format: hf``)
    through ``load_from_disk``."""
    datasets = _import_datasets()
    if spec.path is not None:
        folder = Path(spec.path)
        source = display_path(folder)
        if not folder.is_dir():
            raise DataError(f"{source}: not a folder written by Dataset.save_to_disk")
        try:
            loaded = datasets.load_from_disk(str(folder))
        except (FileNotFoundError, ValueError) as err:
            raise DataError(f"{source}: cannot load a saved Hugging Face dataset: {err}") from None
    else:
        assert spec.hf is not None
        source = f"hf:{spec.hf}"
        kwargs: dict[str, Any] = {"split": spec.split}
        if spec.name is not None:
            kwargs["name"] = spec.name
        if spec.revision is not None:
            kwargs["revision"] = spec.revision
        if spec.data_files is not None:
            kwargs["data_files"] = spec.data_files
        try:
            loaded = datasets.load_dataset(spec.hf, **kwargs)
        except Exception as err:  # the hub, builders and file readers raise many types
            raise DataError(f"{source}: cannot load the Hugging Face dataset: {type(err).__name__}: {err}") from None
    split = spec.split
    if isinstance(loaded, datasets.DatasetDict):
        splits = sorted(loaded)
        if split is None and len(splits) == 1:
            split = splits[0]
        if split is None or split not in loaded:
            problem = "set 'split'" if split is None else f"no split {split!r}"
            raise ConfigError(f"{source}: {problem}; the dataset has splits: {', '.join(splits)}")
        loaded = loaded[split]
    elif spec.path is not None and split is not None:
        raise ConfigError(f"{source}: 'split' was given but the saved dataset has a single split")
    rows: list[Row] = loaded.to_list()
    return rows, f"{source}[{split}]" if split else source
