"""Agents: a tool loop as a Model that wraps a model and tools, and conversations (issue 26)."""
