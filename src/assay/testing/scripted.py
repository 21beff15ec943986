"""Scripted replies for the test server (:mod:`assay.testing.server`): reply functions of the request, and reply
scripts read from a YAML or JSON file (``python -m assay.testing.server --script FILE``, :meth:`ReplyScript.load`).

A reply script is a list of rules, the first matching rule answering::

    replies:
      - prompt: "What is 2 + 2?"          # the last user message is exactly this
        reply: "4"
      - contains: weather                 # ... contains this (with `in: any`: any message of the request does)
        reply: {tool_calls: [{name: get_weather, arguments: {city: Paris}}]}
      - regex: "^Translate .* to French"  # re.search on the last user message
        reply: Bonjour
      - turn: 2                           # the request holds 1 assistant message: the model's 2nd turn
        model: gpt-4o-mini                # and the request's model is this one (conditions combine with AND)
        replies: [{status: 503}, "done"]  # one per matching request, in order, then the last one again
    default: echo                         # a reply, `echo`, or absent: HTTP 500 naming the unmatched request
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.tasks.taskfile import ConfigContext, KeyPath

Reply = Callable[[dict[str, Any]], Any]  # request JSON -> str | dict (or an awaitable of one)
# /v1/completions: (one prompt: text or token ids, the request JSON) -> str | dict with COMPLETION_KEYS
CompletionReply = Callable[[str | list[int], dict[str, Any]], Any]
REPLY_KEYS = frozenset(
    {"text", "tool_calls", "finish_reason", "usage", "status", "error", "headers", "logprobs"}
    | {"reasoning_content", "reasoning"}
)
COMPLETION_KEYS = frozenset(
    {"text", "logprobs", "finish_reason", "prompt_tokens", "completion_tokens", "status", "error", "headers"}
)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def last_user_text(request: Mapping[str, Any]) -> str:
    """The text of the last user message of a chat request ("" when there is none)."""
    for message in reversed(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message)
    return ""


class ScriptedReplies:
    """A reply function: the first key found in the last user message picks the reply (a str or reply dict).

    Requests matching no key get ``default`` (a str, dict or reply function), or an echo of the last user message.
    :meth:`load` reads a reply script from a file instead (rules by exact prompt, substring, regex, turn, ...).
    """

    def __init__(
        self, replies: Mapping[str, str | dict[str, Any]], default: str | dict[str, Any] | Reply | None = None
    ):
        self.replies = dict(replies)
        self.default = default

    @staticmethod
    def load(path: str | Path) -> ReplyScript:
        """The reply script of a ``.yaml``/``.yml``/``.json`` file (see :class:`ReplyScript`)."""
        return ReplyScript.load(path)

    def __call__(self, request: dict[str, Any]) -> Any:
        text = last_user_text(request)
        for key, reply in self.replies.items():
            if key in text:
                return reply
        if self.default is None:
            return text
        return self.default(request) if callable(self.default) else self.default


@dataclass(frozen=True)
class Conversation:
    """A chat request read as a conversation: the last user message and what happened since it (tool results)."""

    messages: list[dict[str, Any]]
    user: str  # the text of the last user message
    tool_results: list[dict[str, Any]]  # tool messages after it, in order: {"name", "content", "tool_call_id"}
    tools: list[str]  # the names of the tools the request offers
    user_turns: int  # user messages so far

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> Conversation:
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        results = [
            {"name": m.get("name"), "content": message_text(m), "tool_call_id": m.get("tool_call_id")}
            for m in messages[last_user + 1 :]
            if m.get("role") == "tool"
        ]
        names = [str((t.get("function") or {}).get("name")) for t in request.get("tools") or [] if isinstance(t, dict)]
        user = message_text(messages[last_user]) if last_user >= 0 else ""
        turns = sum(m.get("role") == "user" for m in messages)
        return cls(messages, user, results, names, turns)


class ConversationReplies:
    """A reply function of the conversation so far: ``step(Conversation)`` gives the reply (str or reply dict), so
    a scripted model can call a tool first and then answer with the tool's actual result (proving it ran)."""

    def __init__(self, step: Callable[[Conversation], Any]) -> None:
        self.step = step

    def __call__(self, request: dict[str, Any]) -> Any:
        return self.step(Conversation.of(request))


def tool_then_answer(
    calls: Callable[[str], list[dict[str, Any]]], answer: Callable[[str, list[str]], str]
) -> ConversationReplies:
    """A tool-calling model: for a new user message, the tool calls ``calls(user_text)`` (``[{"name",
    "arguments"}]``; none: answer at once); once their results are back, ``answer(user_text, results)``."""

    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            wanted = calls(conv.user)
            if wanted:
                return {"tool_calls": wanted}
        return answer(conv.user, [r["content"] for r in conv.tool_results])

    return ConversationReplies(step)


# -- reply scripts ----------------------------------------------------------------------------------------------------

CONDITIONS = ("prompt", "contains", "regex", "turn", "system", "model")
TEXT_CONDITIONS = ("prompt", "contains", "regex")  # the ones `in: any` widens to every message
RULE_KEYS = (*CONDITIONS, "in", "reply", "replies")
SCRIPT_KEYS = ("replies", "default")
SCOPES = ("last", "any")
ECHO = "echo"
_CHAT_ONLY = ("tool_calls", "logprobs", "reasoning_content", "reasoning")


@dataclass(frozen=True)
class Seen:
    """What the rules of a script look at in one request."""

    last: str  # the last user message (a completions request: its prompt)
    messages: tuple[str, ...]  # every message's text, in order
    system: tuple[str, ...]  # the system (and developer) messages' texts
    turn: int  # 1 + the assistant messages of the request
    model: Any
    what: str = "the last user message"

    @classmethod
    def of_chat(cls, request: Mapping[str, Any]) -> Seen:
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        system = tuple(message_text(m) for m in messages if m.get("role") in ("system", "developer"))
        turn = 1 + sum(m.get("role") == "assistant" for m in messages)
        texts = tuple(message_text(m) for m in messages)
        return cls(last_user_text(request), texts, system, turn, request.get("model"))

    @classmethod
    def of_completion(cls, prompt: str, request: Mapping[str, Any]) -> Seen:
        return cls(prompt, (prompt,), (), 1, request.get("model"), "the prompt")

    def describe(self) -> str:
        shown = self.last if len(self.last) <= 200 else self.last[:200] + "…"
        return f"{self.what} {shown!r} (model {self.model!r}, turn {self.turn})"


@dataclass(frozen=True)
class Rule:
    """One rule of a reply script: its conditions (None: not asked) and its replies, the n-th match getting the
    n-th reply (the last one once they run out)."""

    where: str  # "script.yaml:12: replies[3]", for messages
    replies: tuple[Any, ...]
    prompt: str | None = None
    contains: str | None = None
    regex: re.Pattern[str] | None = None
    turn: int | None = None
    system: str | None = None
    model: str | None = None
    scope: str = "last"

    def matches(self, seen: Seen) -> bool:
        texts = seen.messages if self.scope == "any" else (seen.last,)
        if self.prompt is not None and self.prompt not in texts:
            return False
        if self.contains is not None and not any(self.contains in t for t in texts):
            return False
        if self.regex is not None and not any(self.regex.search(t) for t in texts):
            return False
        if self.turn is not None and seen.turn != self.turn:
            return False
        if self.system is not None and not any(self.system in t for t in seen.system):
            return False
        return self.model is None or seen.model == self.model


class ReplyScript:
    """A reply function following a script of rules (see the module's docstring for the file format): the first
    rule whose conditions all hold answers; no rule: ``default`` (a reply, ``"echo"`` for the last user message,
    or None for an HTTP 500 naming the request). Also answers ``/v1/completions`` (:meth:`completion`), a text
    prompt read as the last user message of a first turn with no system message.

    Passed as the test server's ``reply``, it answers both endpoints; :meth:`reset` (called by the server's
    ``reset()``) restarts every rule's list of replies.
    """

    def __init__(self, rules: list[Rule], default: Any = None, source: str = "reply script") -> None:
        self.rules = list(rules)
        self.default = default
        self.source = source
        self._lock = threading.Lock()
        self._used = [0] * len(self.rules)

    @classmethod
    def load(cls, path: str | Path) -> ReplyScript:
        """Read a ``.yaml``/``.yml`` or ``.json`` reply script; a bad one raises ConfigError naming the file, the
        line (YAML and, where it also parses as YAML, JSON) and the rule."""
        from assay.tasks.taskfile import parse_yaml

        p = Path(path)
        source = str(path)
        suffix = p.suffix.lower()
        if suffix not in (".yaml", ".yml", ".json"):
            raise ConfigError(f"{source}: a reply script is a .yaml, .yml or .json file")
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"{source}: cannot read the reply script: {err}") from None
        if suffix == ".json":
            try:
                data = json.loads(text)
            except ValueError as err:
                raise ConfigError(f"{source}: invalid JSON: {err}") from None
            try:
                _, lines = parse_yaml(text, source)  # only for the lines of keys, where it parses as YAML
            except ConfigError:
                lines = {}
        else:
            data, lines = parse_yaml(text, source)
        return cls.from_data(data, source, lines)

    @classmethod
    def from_data(
        cls, data: Any, source: str = "reply script", lines: Mapping[KeyPath, int] | None = None
    ) -> ReplyScript:
        """The script of already parsed data (``{"replies": [...], "default": ...}``); ``lines`` maps key paths
        to lines for the messages."""
        from assay.tasks.taskfile import ConfigContext, did_you_mean

        ctx = ConfigContext(source, dict(lines or {}))
        if not isinstance(data, dict):
            raise ctx.error((), "a reply script is a mapping with 'replies' (a list of rules) and 'default'")
        for key in data:
            if key not in SCRIPT_KEYS:
                hint = did_you_mean(str(key), SCRIPT_KEYS)
                raise ctx.error((str(key),), f"unknown key{hint}; a reply script takes replies and default")
        items = data.get("replies", [])
        if not isinstance(items, list):
            raise ctx.error(("replies",), f"must be a list of rules, got {type(items).__name__}")
        rules = [_rule(item, ("replies", i), ctx) for i, item in enumerate(items)]
        default = data.get("default")
        if default is not None and default != ECHO:
            _check_reply(default, ("default",), ctx)
        return cls(rules, default, source)

    def reset(self) -> None:
        """Start every rule's list of replies from its first again."""
        with self._lock:
            self._used = [0] * len(self.rules)

    def pick(self, seen: Seen) -> tuple[Rule | None, Any]:
        """The first matching rule and its reply for this request (counted as used), or (None, default)."""
        for i, rule in enumerate(self.rules):
            if rule.matches(seen):
                with self._lock:
                    n = self._used[i]
                    self._used[i] += 1
                return rule, copy.deepcopy(rule.replies[min(n, len(rule.replies) - 1)])
        return None, copy.deepcopy(self.default)

    def unmatched(self, seen: Seen) -> str:
        return f"{self.source}: no rule matches {seen.describe()}, and the script has no default"

    def __call__(self, request: dict[str, Any]) -> Any:
        """The chat reply: a str or reply dict; None (``default: echo``) makes the server echo."""
        seen = Seen.of_chat(request)
        rule, reply = self.pick(seen)
        if rule is None and reply is None:
            return {"status": 500, "error": self.unmatched(seen)}
        return None if rule is None and reply == ECHO else reply

    def completion(self, prompt: str | list[int], request: dict[str, Any]) -> Any:
        """The ``/v1/completions`` reply to one prompt; a prompt of token ids is answered as without a script."""
        if not isinstance(prompt, str):
            return None
        seen = Seen.of_completion(prompt, request)
        rule, reply = self.pick(seen)
        if rule is None and reply is None:
            raise LookupError(self.unmatched(seen))
        if rule is None and reply == ECHO:
            return prompt
        if isinstance(reply, str):
            return reply
        chat_only = [k for k in _CHAT_ONLY if reply.get(k) is not None]
        if chat_only:
            where = rule.where if rule is not None else f"{self.source}: default"
            raise ValueError(f"{where}: a completions request cannot be answered with {chat_only}")
        out = {k: v for k, v in reply.items() if k not in (*_CHAT_ONLY, "usage")}
        return {**out, **(reply.get("usage") or {})}  # prompt_tokens, completion_tokens


def _rule(item: Any, path: KeyPath, ctx: ConfigContext) -> Rule:
    from assay.tasks.taskfile import did_you_mean

    if not isinstance(item, dict):
        raise ctx.error(path, f"a rule is a mapping of conditions and a reply, got {type(item).__name__}")
    for key in item:
        if key not in RULE_KEYS:
            hint = did_you_mean(str(key), RULE_KEYS)
            raise ctx.error((*path, str(key)), f"unknown key{hint}; a rule takes {', '.join(RULE_KEYS)}")
    if ("reply" in item) == ("replies" in item):
        raise ctx.error(path, "a rule needs exactly one of 'reply' (one reply) and 'replies' (a list, in order)")
    found: dict[str, Any] = {}
    for key in ("prompt", "contains", "regex", "system", "model"):
        if key in item:
            if not isinstance(item[key], str):
                raise ctx.error((*path, key), f"must be a text, got {type(item[key]).__name__} (quote it)")
            found[key] = item[key]
    if "regex" in found:
        try:
            found["regex"] = re.compile(found["regex"])
        except re.error as err:
            raise ctx.error((*path, "regex"), f"bad regular expression {found['regex']!r}: {err}") from None
    if "turn" in item:
        turn = item["turn"]
        if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
            raise ctx.error((*path, "turn"), f"must be a whole number >= 1 (1: the first reply), got {turn!r}")
        found["turn"] = turn
    if "in" in item:
        if item["in"] not in SCOPES:
            raise ctx.error(
                (*path, "in"), f"must be 'last' (the last user message) or 'any' (any message), got {item['in']!r}"
            )
        if not any(k in item for k in TEXT_CONDITIONS):
            raise ctx.error((*path, "in"), f"applies to {', '.join(TEXT_CONDITIONS)}; the rule has none of them")
        found["scope"] = item["in"]
    if "reply" in item:
        replies = (_check_reply(item["reply"], (*path, "reply"), ctx),)
    else:
        listed = item["replies"]
        if not isinstance(listed, list) or not listed:
            raise ctx.error((*path, "replies"), "must be a non-empty list of replies (used in order, the last kept)")
        replies = tuple(_check_reply(r, (*path, "replies", i), ctx) for i, r in enumerate(listed))
    return Rule(where=ctx.where(path), replies=replies, **found)


_REPLY_TYPES: dict[str, tuple[type, ...]] = {
    "text": (str, type(None)),
    "tool_calls": (list,),
    "finish_reason": (str,),
    "usage": (dict,),
    "status": (int,),
    "error": (str,),
    "headers": (dict,),
    "logprobs": (dict,),
    "reasoning_content": (str,),
    "reasoning": (str,),
}


def _check_reply(reply: Any, path: KeyPath, ctx: ConfigContext) -> Any:
    """``reply`` when it is a text or a reply mapping the server accepts; a ConfigError naming the key otherwise."""
    from assay.tasks.taskfile import did_you_mean

    if isinstance(reply, str):
        return reply
    if not isinstance(reply, dict):
        hint = " (quote it)" if isinstance(reply, int | float | bool) else ""
        raise ctx.error(path, f"a reply is a text or a mapping, got {type(reply).__name__}{hint}")
    for key, value in reply.items():
        if key not in REPLY_KEYS:
            hint = did_you_mean(str(key), REPLY_KEYS)
            raise ctx.error((*path, str(key)), f"unknown reply key{hint}; known: {', '.join(sorted(REPLY_KEYS))}")
        types = _REPLY_TYPES[key]
        if not isinstance(value, types) or isinstance(value, bool):
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ctx.error((*path, key), f"must be {want}, got {type(value).__name__}")
    status = reply.get("status")
    if status is not None and not 100 <= status <= 599:
        raise ctx.error((*path, "status"), f"must be an HTTP status (100-599), got {status}")
    for i, call in enumerate(reply.get("tool_calls") or []):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ctx.error((*path, "tool_calls", i), "a tool call is a mapping with a 'name' (and 'arguments')")
        if not isinstance(call.get("arguments", {}), dict | str):
            raise ctx.error((*path, "tool_calls", i, "arguments"), "must be a mapping or a JSON text")
    for key, value in (reply.get("headers") or {}).items():
        if not isinstance(value, str):
            raise ctx.error((*path, "headers", str(key)), f"a header's value is a text, got {type(value).__name__}")
    for key, value in (reply.get("usage") or {}).items():
        if key not in ("prompt_tokens", "completion_tokens") or not isinstance(value, int) or isinstance(value, bool):
            raise ctx.error((*path, "usage", str(key)), "usage takes prompt_tokens and completion_tokens, numbers")
    return reply
