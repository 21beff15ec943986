"""The sample logs' line assembly gives json.dumps' exact text and lm-eval's doc hash (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.results.samplelog import _TaskSpool
from assay.results.schema import doc_hash

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30)
)
DOCS = st.dictionaries(
    st.text(max_size=10),
    st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(st.text(max_size=5), SCALARS, max_size=3)),
    max_size=6,
)


@given(DOCS)
def test_a_sample_log_line_encodes_its_doc_as_json_dumps(doc: dict[str, Any]) -> None:
    spool = _TaskSpool(Path("unused"), "t")  # encodes only: no file is opened before a record is added
    try:
        expected = json.dumps(doc, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or infinity: the line is refused, as json.dumps(line, allow_nan=False) refused it
        with pytest.raises(ValueError, match="Out of range float"):
            spool._doc(doc)
        return
    assert spool._doc(doc) == (expected, doc_hash(doc))
