"""Dataset readers: JSONL, CSV/TSV, JSON, inline rows, and Hugging Face datasets (the ``hf`` extra)."""

from assay.data.readers import Dataset, as_spec, read_dataset, read_rows
from assay.data.spec import DatasetSpec

__all__ = ["Dataset", "DatasetSpec", "as_spec", "read_dataset", "read_rows"]
