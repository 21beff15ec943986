"""A simulated user (``user:``): a model that plays the user, from a goal and a persona in the row, and talks with
the model under test until it says its stop word or has said ``max_turns`` messages."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.agents.transcript import content_text
from assay.models.base import Message, Model, ModelError, Request
from assay.secrets import REDACTED

DEFAULT_PROMPT = (
    "You are role-playing a user talking with an AI assistant. Stay in character and write only the user's next "
    "message, briefly.{persona}\nYour goal: {goal}\nWhen the goal is reached (or cannot be), reply with exactly "
    "{stop} and nothing else."
)


class UserConfig(BaseModel):
    """The ``user:`` key: who plays the user, what they want, when they stop."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | dict[str, Any]  # a model spec, as --model takes (e.g. openai:gpt-4o-mini, or a dict)
    goal: str | None = None  # the same goal for every row; else the row's ``goal_field``
    goal_field: str = "goal"
    persona: str | None = None
    persona_field: str = "persona"
    max_turns: int = Field(default=3, ge=1)  # messages the simulated user writes after the opening one
    stop: str = "DONE"  # the simulated user ends the conversation by saying this
    prompt: str | None = None  # its system prompt; {goal}, {persona} and {stop} are filled in

    @field_validator("model")
    @classmethod
    def _credentials_present(cls, model: str | dict[str, Any]) -> str | dict[str, Any]:
        """A spec whose credential reads ``***`` came from a run.json, which never keeps one: say how to give it."""
        hidden = _redacted_keys(model) if isinstance(model, dict) else []
        if hidden:
            raise ValueError(
                f"user.model.{hidden[0]} is not recorded in run.json (credentials never are): give the key as "
                "api_key_env (the name of an environment variable, which is recorded), or resume with the task file"
            )
        return model


def _redacted_keys(spec: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys of ``spec`` whose value is the redaction mark."""
    out: list[str] = []
    for key, value in spec.items():
        if value == REDACTED:
            out.append(prefix + str(key))
        elif isinstance(value, dict):
            out += _redacted_keys(value, f"{prefix}{key}.")
    return out


def _flipped(transcript: list[Message]) -> list[Message]:
    """The conversation as the simulated user sees it: the assistant's words as 'user', its own as 'assistant';
    tool traffic left out (the user sees only what the assistant said)."""
    out: list[Message] = []
    for m in transcript:
        role, text = m.get("role"), content_text(m)
        if role == "assistant" and text:
            out.append({"role": "user", "content": text})
        elif role == "user":
            out.append({"role": "assistant", "content": text})
    return out


class SimulatedUser:
    """One conversation's simulated user (it counts its own messages)."""

    def __init__(self, model: Model, config: UserConfig, doc: dict[str, Any], sample_id: str) -> None:
        self.model = model
        self.config = config
        self.sample_id = sample_id
        goal = config.goal if config.goal is not None else doc.get(config.goal_field)
        if goal is None:
            raise ModelError(f"the simulated user has no goal: set user.goal or give the row a {config.goal_field!r}")
        persona = config.persona if config.persona is not None else doc.get(config.persona_field)
        template = config.prompt or DEFAULT_PROMPT
        self.system = template.format(goal=goal, persona=f"\nYou are: {persona}" if persona else "", stop=config.stop)
        self.said = 0
        self.why: str | None = None  # "user_done" (said the stop word) or "turns_done" (max_turns)

    async def next_message(self, transcript: list[Message]) -> str | None:
        """The user's next message, or None when the conversation is over (``why`` says which way)."""
        from assay.models.retry import RetryPolicy, call_with_retries

        if self.said >= self.config.max_turns:
            self.why = "turns_done"
            return None
        messages = [{"role": "system", "content": self.system}, *_flipped(transcript)]
        request = Request(sample_id=f"{self.sample_id}/user{self.said}", messages=messages)
        response, _ = await call_with_retries(lambda: self.model.generate(request), RetryPolicy())
        text = (response.text or "").strip()
        if not text or self.config.stop in text:
            self.why = "user_done"
            return None
        self.said += 1
        return text
