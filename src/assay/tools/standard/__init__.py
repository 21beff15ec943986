"""The standard agent tools, with the schemas agents are trained on (inspect's and Anthropic's): ``bash``,
``python``, ``text_editor`` and ``think``. They act in the sample's environment (``SampleTools.environment``) and
record what each call changed there (:mod:`assay.tools.standard.changes`). ``submit`` is the loop's own
(``agent: {submit: true}``)."""

from __future__ import annotations

from collections.abc import Mapping

from assay.tools.base import Tool
from assay.tools.standard.bash import BashTool
from assay.tools.standard.changes import CHANGES, MAX_TRACKED_FILES, changes_of
from assay.tools.standard.editor import TextEditorTool
from assay.tools.standard.python import PythonCodeTool
from assay.tools.standard.think import ThinkTool

# name -> class; each takes keyword options (its OPTIONS, and name)
STANDARD_TOOLS: Mapping[str, type[Tool]] = {
    "bash": BashTool,
    "python": PythonCodeTool,
    "text_editor": TextEditorTool,
    "think": ThinkTool,
}

__all__ = [
    "CHANGES",
    "MAX_TRACKED_FILES",
    "STANDARD_TOOLS",
    "BashTool",
    "PythonCodeTool",
    "TextEditorTool",
    "ThinkTool",
    "changes_of",
]
