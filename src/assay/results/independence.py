"""Notice when a task's samples are not independent, so the summary can say its intervals are too narrow.

Several questions about one passage, turns of one conversation or the same input asked twice are correlated: an
interval that treats them as independent covers far less than it says (33–62 % for 50 clusters of 20 samples at
intra-cluster correlations of 0.2–0.5). ``--cluster-key FIELD`` fixes that; this module finds the fields a run
should have named, from the first records of each task (bounded memory whatever the run's size).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from assay.record import SampleRecord
from assay.results.aggregate import as_record_dict

OBSERVED_RECORDS = 20_000  # per task: enough to see shared fields, bounded for runs of millions of samples
LONG_TEXT = 200  # a text field this long that several samples share is a passage, whatever its name
MIN_SHARING_SHARE = 0.2  # the share of samples whose value another sample has too
# names that say "a context several samples hang off"; ordinary category fields (kind, label) are not clusters
_CONTEXT_NAME = re.compile(
    r"passage|context|document|article|conversation|dialog|thread|session|story|paragraph|cluster|group|parent"
    r"|(^|_)(source|topic|chunk|page|user)_?id$|_id$",
    re.IGNORECASE,
)
PROMPT_FIELD = "(the prompt)"


def _digest(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class SharedContext:
    """Counts, per candidate field, how often samples share a value; ``fields()`` names the shared ones."""

    def __init__(self, limit: int = OBSERVED_RECORDS, *, keep: bool = False) -> None:
        self.limit = limit
        self.seen = 0
        self._values: dict[str, Counter[str]] = {}
        # with ``keep``: each observed record's (field, digest) pairs, so another instance can take them in order
        self.kept: list[list[tuple[str, str]]] | None = [] if keep else None

    def observe(self, record: SampleRecord | Mapping[str, Any]) -> None:
        """Look at one record or its dict (past ``limit`` records this does nothing)."""
        if self.seen >= self.limit:
            return
        rec = as_record_dict(record)
        pairs = [(PROMPT_FIELD, rec["prompt"])]
        for source in (rec["doc"], rec.get("metadata") or {}):
            pairs.extend(_candidates(source, rec["sample_id"]))
        self._take([(name, _digest(value)) for name, value in pairs if value is not None and value != ""])

    def _take(self, digests: list[tuple[str, str]]) -> None:
        self.seen += 1
        for name, digest in digests:
            self._values.setdefault(name, Counter())[digest] += 1
        if self.kept is not None:
            self.kept.append(digests)

    def merge(self, later: SharedContext) -> None:
        """Observe the records ``later`` kept (records read after this instance's), up to this one's limit."""
        if later.kept is None:
            raise ValueError("merge needs an instance made with keep=True")
        for digests in later.kept[: max(0, self.limit - self.seen)]:
            self._take(digests)

    def fields(self) -> list[tuple[str, int, int]]:
        """(field, samples sharing a value, distinct values) for each field samples share, most shared first."""
        found = []
        for name, counts in self._values.items():
            total = sum(counts.values())
            shared = sum(c for c in counts.values() if c > 1)
            if len(counts) >= 2 and total >= 4 and shared >= MIN_SHARING_SHARE * total:
                found.append((name, shared, len(counts)))
        return sorted(found, key=lambda f: -f[1])


def _candidates(source: Mapping[str, Any], sample_id: str) -> Iterable[tuple[str, Any]]:
    for name, value in source.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        if str(value) == sample_id:
            continue
        if (isinstance(value, str) and len(value) >= LONG_TEXT) or _context_name(str(name)):
            yield str(name), value


@functools.lru_cache(maxsize=4096)
def _context_name(name: str) -> bool:
    """Whether a field's name says "a context several samples hang off" (the same few names in every record)."""
    return _CONTEXT_NAME.search(name) is not None


def independence_warning(task: str, detector: SharedContext, cluster_key: str | None) -> str | None:
    """The summary's warning for one task whose samples share a field, unless the run clusters on one."""
    if cluster_key is not None:
        return None
    shared = detector.fields()
    if not shared:
        return None
    name, n_shared, distinct = shared[0]
    if name == PROMPT_FIELD:
        what = f"{n_shared} samples repeat an input another sample has (the same prompt)"
        fix = "give repeated inputs a shared field and pass it as --cluster-key FIELD"
    else:
        what = f"{n_shared} samples share a value of {name!r} with other samples ({distinct} distinct values)"
        fix = f"pass --cluster-key {name} (cluster_key={name!r} in Python)"
    return (
        f"task {task!r}: {what}; its intervals assume independent samples and are too narrow when samples that "
        f"share a context succeed or fail together: {fix}"
    )
