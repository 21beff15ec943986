"""Models and agents behind one async interface."""

from assay.models.base import Message, Model, ModelError, Request, Response, ToolCall, Usage

__all__ = ["Message", "Model", "ModelError", "Request", "Response", "ToolCall", "Usage"]
