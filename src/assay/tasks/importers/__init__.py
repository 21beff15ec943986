"""Importers: another tool's task files read into the same :class:`assay.tasks.Task` (nothing downstream knows
where a task came from)."""
