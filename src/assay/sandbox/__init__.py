"""The sandbox: a private work directory per sample and programs run in it under bubblewrap with limits.

``code_exec`` runs model-written code in one, the sandboxed agent tools (``{sandbox: python}``, ``{sandbox: bash}``)
keep one for a whole trajectory. ``box`` holds :class:`Sandbox`; ``bwrap`` finds bubblewrap and the Python it runs
and builds the command line; ``limits`` the per-program limits; ``cgroup`` and ``diskfs`` the memory and disk
totals where the machine allows them.
"""

from assay.sandbox.box import ExecResult, Sandbox, SandboxError, SandboxProcess
from assay.sandbox.bwrap import SandboxUnavailable
from assay.sandbox.limits import Limits

__all__ = ["ExecResult", "Limits", "Sandbox", "SandboxError", "SandboxProcess", "SandboxUnavailable"]
