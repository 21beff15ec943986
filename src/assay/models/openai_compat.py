"""The OpenAI-compatible chat-completions provider: hosted APIs, vLLM, Ollama, llama.cpp server, LiteLLM, ….

Only the standard protocol is used (``POST {base_url}/chat/completions``), over one pooled aiohttp session per event
loop. The hot path keeps per-request work small (a shared JSON encoder, headers and URL built once); validating the
Response with pydantic costs ~3 µs of the ~150 µs of client CPU per request (benchmarks/bench_client.py).
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import math
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import ValidationError

from assay.errors import ConfigError
from assay.models.base import Model, ModelError, Request, Response, ToolCall, Usage
from assay.secrets import has_redactions, redact_params, redact_url

if TYPE_CHECKING:
    import aiohttp

    from assay.models.dns import OwnThreadResolver

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx
_encode = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps builds a new encoder per call when given kwargs
_decode = json.loads


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


_NUMBER = ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool))
_INT = ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
_BOOL = ("true or false", lambda v: isinstance(v, bool))
_STR = ("a string", lambda v: isinstance(v, str))
_OBJECT = ("an object", lambda v: isinstance(v, dict))
# the standard chat-completions parameters and the JSON type each takes; others pass through unchecked
STANDARD_PARAMS: dict[str, tuple[str, Any]] = {
    "temperature": _NUMBER,
    "top_p": _NUMBER,
    "frequency_penalty": _NUMBER,
    "presence_penalty": _NUMBER,
    "max_tokens": _INT,
    "max_completion_tokens": _INT,
    "n": _INT,
    "seed": _INT,
    "top_logprobs": _INT,
    "logprobs": _BOOL,
    "parallel_tool_calls": _BOOL,
    "store": _BOOL,
    "stream": ("false (streaming is not supported)", lambda v: v is False),
    "stop": (
        "a string or a list of strings",
        lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
    ),
    "logit_bias": _OBJECT,
    "response_format": _OBJECT,
    "metadata": _OBJECT,
    "user": _STR,
    "reasoning_effort": _STR,
    "tool_choice": ("a string or an object", lambda v: isinstance(v, str | dict)),
}


def check_params(params: Mapping[str, Any], where: str) -> None:
    """Raise ConfigError naming the first standard parameter whose value has the wrong JSON type
    (``--param temperature=hot``); None means "not set"; unknown parameters pass, as servers differ."""
    for name, value in params.items():
        rule = STANDARD_PARAMS.get(name)
        if rule is None or value is None:
            continue
        expected, ok = rule
        if not ok(value):
            raise ConfigError(f"{where}: parameter {name!r} must be {expected}, got {value!r}")


def _endpoint(base_url: str, path: str) -> str:
    """``base_url`` + ``/path``, keeping a query string (``…/v1?api-version=…``) at the end where it belongs."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path))


def split_credentials(url: str) -> tuple[str, str | None]:
    """The URL without ``user:password@``, and those credentials as a Basic ``Authorization`` value (or None).

    aiohttp refuses a request whose URL carries credentials when an Authorization header is set too, so the
    credentials always travel as the header instead."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return urlunsplit(parts._replace(netloc=netloc)), "Basic " + base64.b64encode(user_pass.encode()).decode()


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP-date); None if absent/bad.

    A negative or past value is 0 (retry now); a value that is not a finite number is no hint at all."""
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = headers.get("Retry-After")
    if not value:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _seconds(value: str | None) -> float | None:
    try:
        number = float(value) if value else None
    except ValueError:
        return None
    return max(0.0, number) if number is not None and math.isfinite(number) else None


class OpenAIModel(Model):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``params`` (temperature, max_tokens, seed, …) are sent with every request and overridden by the request's own
    params; None values are not sent. The API key comes from ``api_key`` or the ``api_key_env`` variable; without
    one no Authorization header is sent (local servers). It never appears in repr, identity, describe or errors.
    """

    provider: ClassVar[str] = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        params: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        max_connections: int = 256,
        headers: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"openai: 'model' must be a non-empty string, got {model!r}")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"openai: 'base_url' must start with http:// or https://, got {base_url!r}")
        if timeout_s <= 0:
            raise ConfigError(f"openai: 'timeout_s' must be > 0, got {timeout_s!r}")
        if max_connections < 1:
            raise ConfigError(f"openai: 'max_connections' must be >= 1, got {max_connections!r}")
        self.model = self.name = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.params = {k: v for k, v in (params or {}).items() if v is not None}
        check_params(self.params, "openai: params")
        self.timeout_s = float(timeout_s)
        self.max_connections = int(max_connections)
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env) or None
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        endpoint, basic = split_credentials(_endpoint(self.base_url, "chat/completions"))
        if basic is not None:  # credentials in the URL name this endpoint's own login: they win over a global key
            self._headers["Authorization"] = basic
        elif self._api_key:
            self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._headers.update(headers or {})
        self._url = endpoint
        self._shown_url = redact_url(self._url)  # what messages show: no credentials in the URL
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._resolver: OwnThreadResolver | None = None  # its thread ends with the client (aclose)

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    def identity(self) -> dict[str, Any]:
        """Provider, endpoint, model and default params: what changes answers (never the key or headers, and no
        credentials from the URL or from secret-looking params: this is recorded in run.json and results.json)."""
        return {
            "provider": self.provider,
            "base_url": redact_url(self.base_url),
            "model": self.model,
            "params": redact_params(self.params),
        }

    def check_params(self, params: dict[str, Any], where: str) -> None:
        """The standard parameters' JSON types (a task's ``generation``): a wrong type fails before the run."""
        check_params(params, where)

    def check(self) -> None:
        """A server other than this machine needs an API key: without one, say which variable to set."""
        if (
            self._api_key
            or has_redactions(self.base_url)
            or any(k.lower() not in ("content-type", "accept") for k in self._headers)
        ):
            return  # a key, or headers of the caller's own (e.g. another auth scheme)
        host = (urlsplit(self.base_url).hostname or "").lower()
        if host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.") or host.endswith(".localhost"):
            return  # local servers (vLLM, Ollama, llama.cpp, the test server) usually need no key
        raise ConfigError(
            f"openai: no API key for {redact_url(self.base_url)}: the environment variable {self.api_key_env} is not "
            "set; "
            f"set it, or name the variable that holds the key with --api-key-env / api_key_env "
            f"(a server that needs no key accepts any value, e.g. {self.api_key_env}=EMPTY)"
        )

    def describe(self) -> dict[str, Any]:
        """The identity plus client settings; a valid ``load_model`` spec (headers are left out: they may hold
        secrets)."""
        return {
            **self.identity(),
            "api_key_env": self.api_key_env,
            "timeout_s": self.timeout_s,
            "max_connections": self.max_connections,
        }

    # -- the session ------------------------------------------------------------------------------------------------

    def _open(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        """The session of the running loop, created on first use (again if the loop changed, e.g. asyncio.run)."""
        import aiohttp

        from assay.models.dns import OwnThreadResolver

        old = self._session
        if old is not None and not old.closed:
            old.detach()  # bound to a finished loop: its sockets went with it
        if self._resolver is not None:
            self._resolver.shutdown(wait=False)
        self._resolver = OwnThreadResolver()  # its thread ends with the client: results may then fork
        connector = aiohttp.TCPConnector(
            limit=self.max_connections, limit_per_host=self.max_connections, resolver=self._resolver
        )
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, raise_for_status=False)
        self._session_loop = loop
        return self._session

    async def aclose(self) -> None:
        """Close the pooled connections (a new session opens if the model is used again)."""
        session, self._session = self._session, None
        resolver, self._resolver = self._resolver, None
        if session is not None and not session.closed:
            if self._session_loop is asyncio.get_running_loop():
                await session.close()
            else:
                session.detach()
        if resolver is not None:
            await resolver.close()
        self._session_loop = None

    # -- requests ---------------------------------------------------------------------------------------------------

    def payload(self, request: Request) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        body: dict[str, Any] = {"model": self.model, "messages": request.messages}
        if self.params:
            body.update(self.params)
        if request.params:
            body.update({k: v for k, v in request.params.items() if v is not None})
        if request.tools:
            body["tools"] = request.tools
        if request.response_format is not None:
            body["response_format"] = request.response_format
        return body

    async def generate(self, request: Request) -> Response:
        """Send one chat-completion request; raise ModelError (retryable for 429/408/409/5xx, network, timeouts)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        session = self._session if self._session_loop is loop and self._session is not None else self._open(loop)
        data = _encode(self.payload(request)).encode()
        start = time.perf_counter()
        try:
            async with session.post(self._url, data=data, headers=self._headers) as resp:
                raw = await resp.read()
                status = resp.status
                headers = resp.headers
        except aiohttp.ServerDisconnectedError as err:
            raise ModelError(
                f"{self._shown_url}: the server closed the connection without a response", retryable=True
            ) from err
        except TimeoutError as err:
            raise ModelError(f"{self._shown_url}: no response within {self.timeout_s:g}s", retryable=True) from err
        except aiohttp.ClientError as err:  # refused/reset connections, truncated bodies, …
            permanent = isinstance(err, aiohttp.InvalidURL | aiohttp.ClientSSLError)  # retrying cannot fix these
            msg = self._redact(f"{self._shown_url}: {type(err).__name__}: {err}")
            raise ModelError(msg, retryable=not permanent) from err
        latency = time.perf_counter() - start
        if not 200 <= status < 300:
            raise self._http_error(status, headers, raw)
        return self._parse(raw, latency)

    def _http_error(self, status: int, headers: Mapping[str, str], raw: bytes) -> ModelError:
        retryable = status in RETRYABLE_STATUS or status >= 500
        excerpt = self._excerpt(raw)
        msg = f"HTTP {status} from {self._shown_url}: {excerpt}"
        fatal = status in (401, 403, 404)  # every later request would get the same answer
        if status == 401 and not self._api_key:
            msg += f" (no API key was sent: set ${self.api_key_env} or pass api_key)"
        elif status in (401, 403):
            what = "rejected the API key" if status == 401 else "refused access with the API key"
            msg += (
                f" (the server {what} in ${self.api_key_env}: fix the key, or name another variable with --api-key-env)"
            )
        elif fatal:
            msg += (
                f" (model {self.model!r} or its endpoint was not found at {redact_url(self.base_url)}: check the model "
                "name given to --model and the --base-url)"
            )
        retry_after = parse_retry_after(headers) if retryable else None
        return ModelError(self._redact(msg), retryable=retryable, retry_after=retry_after, fatal=fatal, status=status)

    def _excerpt(self, raw: bytes, limit: int = 300) -> str:
        """The error message of an OpenAI-style error body, else the start of the body."""
        text = raw.decode("utf-8", "replace")
        try:
            obj = _decode(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            error = obj.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            if message:
                text = str(message)
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def _redact(self, text: str) -> str:
        text = text.replace(self._url, self._shown_url).replace(self.base_url, redact_url(self.base_url))
        return text.replace(self._api_key, "***") if self._api_key else text

    def _parse(self, raw: bytes, latency: float) -> Response:
        try:
            obj = _decode(raw)
        except ValueError:
            obj = None
        try:
            return self._response(obj, latency)
        except (KeyError, IndexError, TypeError, AttributeError, ValidationError) as err:
            raise self._not_a_completion(obj, raw, err) from None

    def _response(self, obj: Any, latency: float) -> Response:
        choice = obj["choices"][0]
        message = choice["message"]
        metadata: dict[str, Any] = {}
        text = message.get("content")
        if isinstance(text, list):  # content parts
            text = "".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
        elif text is not None and not isinstance(text, str):
            text = str(text)
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:
            metadata["reasoning"] = reasoning
        tool_calls = [self._tool_call(c, metadata) for c in message.get("tool_calls") or ()]
        if isinstance(message.get("function_call"), dict):  # the legacy `functions` API's call, kept as sent (name,
            metadata["function_call"] = message["function_call"]  # raw arguments): promptfoo's output; no tool call
        if choice.get("logprobs"):  # sent only when asked for (params logprobs/top_logprobs): G-Eval judges read them
            metadata["logprobs"] = choice["logprobs"]
        usage = obj.get("usage") or {}
        return Response(
            text=text,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=usage.get("prompt_tokens") or 0, output_tokens=usage.get("completion_tokens") or 0
            ),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
            model=obj.get("model"),
            metadata=metadata,
        )

    def _not_a_completion(self, obj: Any, raw: bytes, err: Exception) -> ModelError:
        error = obj.get("error") if isinstance(obj, dict) else None
        if error:  # some gateways answer 200 with an error object
            code = error.get("code") if isinstance(error, dict) else None
            retryable = code in RETRYABLE_STATUS or (isinstance(code, int) and code >= 500)
            status = code if isinstance(code, int) and not isinstance(code, bool) else None  # a 429 backs off as one
            msg = self._redact(f"{self._shown_url}: {self._excerpt(raw)}")
            return ModelError(msg, retryable=retryable, status=status)
        what = "not JSON" if obj is None else f"not a chat completion ({type(err).__name__}: {err})"
        return ModelError(self._redact(f"{self._shown_url}: the response is {what}: {self._excerpt(raw)}"))

    @staticmethod
    def _tool_call(call: dict[str, Any], metadata: dict[str, Any]) -> ToolCall:
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        raw = function.get("arguments")
        arguments: Any
        if isinstance(raw, dict):  # some servers already decode them
            arguments = raw
        elif raw is None or (isinstance(raw, str) and not raw.strip()):
            arguments = {}
        else:
            try:
                arguments = _decode(raw)
            except (TypeError, ValueError):
                arguments = None
            if not isinstance(arguments, dict):
                arguments = {"_raw": raw}
                metadata.setdefault("unparsed_tool_arguments", []).append(name)
        return ToolCall(name=name, arguments=arguments, id=call.get("id"))
