"""Running model-written code: a bubblewrap sandbox per sample (``sandbox``), a data-only boundary between the
code and the task's tests (``wire``, ``serve``, ``runner``), and the ``code_exec`` evaluator built on them."""

from assay.evaluators.code.bwrap import SandboxUnavailable
from assay.evaluators.code.limits import Limits
from assay.evaluators.code.sandbox import ExecResult, Sandbox, SandboxError, SandboxProcess

__all__ = ["ExecResult", "Limits", "Sandbox", "SandboxError", "SandboxProcess", "SandboxUnavailable"]
