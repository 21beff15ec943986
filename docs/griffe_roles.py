"""A griffe extension for the API pages: the docstrings' Sphinx roles (:func:`run`, :class:`~assay.Task`) are
written as code, as the rest of each docstring's ``literals`` are, instead of showing the role's name; a paragraph
ending in reStructuredText's ``::`` (an indented example follows, which Markdown shows as code) ends in ``:``."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|mod|exc|obj|const):`(~?)([^`]+)`")
_LITERAL_BLOCK = re.compile(r"(?<=\S)::\n(?=\n)")


def _code(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _LITERAL_BLOCK.sub(":\n", _ROLE.sub(_code, obj.docstring.value))
