"""``assay audit``: can this eval be gamed? Degenerate answers scored through a task's real scoring, with no model."""

from assay.audit.battery import OracleFigure, ProbeFigure, TaskAudit, aaudit_task, audit_task
from assay.audit.probes import Probe, ProbeContext, probe, probes

__all__ = [
    "OracleFigure",
    "Probe",
    "ProbeContext",
    "ProbeFigure",
    "TaskAudit",
    "aaudit_task",
    "audit_task",
    "probe",
    "probes",
]
