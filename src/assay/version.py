"""The version of assay, in a module of its own: the runner and the report record it without the package root."""

__version__ = "0.1.0"
