"""What looks like a secret: names whose values never reach logs, error messages or result files."""

from __future__ import annotations

import re
from typing import Any

# Broad, for redaction: an option or kwarg named like this is never echoed or recorded (``api_key_env``, the
# *name* of a variable, is the caller's to allow). Headers are included because they often carry tokens.
_SECRET_NAME = re.compile(r"key|token|secret|passw|credential|authorization|bearer|header", re.IGNORECASE)

# Anchored, for scrubbing recorded configs, where broad matching would drop ordinary keys like ``cluster_key``.
_SECRET_CONFIG_KEY = re.compile(
    r"(^|[_-])(api[_-]?key|secret|password|passwd|authorization|bearer|credentials?|(access|auth|refresh)?[_-]?token)$",
    re.IGNORECASE,
)


def looks_secret(name: object) -> bool:
    """True for option, kwarg or header names whose values must never be shown (api_key, token, headers, …)."""
    return bool(_SECRET_NAME.search(str(name)))


def is_secret_config_key(name: object) -> bool:
    """True for a config key that names a credential (api_key, auth_token, password, …) but not ``cluster_key``."""
    return bool(_SECRET_CONFIG_KEY.search(str(name)))


REDACTED = "***"

# Keys whose every value is a credential whatever its name: HTTP headers (``X-Custom-Auth``, ``Cookie``, a
# gateway's own scheme) cannot be told apart from ordinary ones by name, so none of their values is ever recorded.
_HEADER_KEYS = frozenset({"headers", "extra_headers", "default_headers", "http_headers"})


def holds_secrets(name: object) -> bool:
    """True for a key whose values are all secrets (a model's ``headers:``), whatever each one is called: such a
    key is recorded as ``***`` whole."""
    return str(name).lower() in _HEADER_KEYS


# Query parameters that carry credentials in URLs (``?api_key=``, ``?key=``, ``&sig=``, ``access_token``, …).
_SECRET_QUERY = re.compile(
    r"^(key|sig|signature|code|auth|x-api-key)$|key|token|secret|passw|credential|authorization", re.IGNORECASE
)


def redact_url(url: str) -> str:
    """``url`` without credentials: the userinfo's password (or a lone token) and secret-looking query values
    become ``***``; everything else (scheme, host, port, path, ordinary parameters) is kept as written."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}:{REDACTED}@{host}" if sep else f"{REDACTED}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_QUERY.search(k) for k, _ in pairs):
            query = urlencode([(k, REDACTED if _SECRET_QUERY.search(k) else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def has_redactions(url: str) -> bool:
    """True when ``redact_url`` would change ``url`` (it carries credentials)."""
    return redact_url(url) != url


def redact_params(params: dict[str, Any]) -> dict[str, Any]:
    """Generation or client parameters with the values of credential-named keys (``api_key``, …) replaced."""
    return {k: REDACTED if is_secret_config_key(k) else v for k, v in params.items()}


def redact_spec(value: Any) -> Any:
    """A model spec or config as it may be recorded: credential-named keys and every header value hidden, URLs
    redacted."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if is_secret_config_key(k) or holds_secrets(k):
                out[k] = REDACTED
            else:
                out[k] = redact_spec(v)
        return out
    if isinstance(value, list):
        return [redact_spec(v) for v in value]
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value


# a URL inside free text: up to whitespace, quotes, brackets or a closing angle (a repr, a log line, XML)
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{}`\\]+")
# ``name=value`` / ``"name": "value"`` / ``name: value`` for a credential-named key, as reprs and messages show them
_ASSIGNED = re.compile(
    r"""(?P<head>(?P<quote>['"]?)(?P<name>[A-Za-z_][\w-]*)(?P=quote)\s*(?:=|:(?!//))\s*)"""
    r"""(?P<value>'[^']*'|"[^"]*"|[^\s'",;&)\]}]*[^\s'",;&)\]}.:!?])"""
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}")


def _url_in_text(match: re.Match[str]) -> str:
    url = match[0]
    core = url.rstrip(".,:;!?")  # the sentence's punctuation, not the URL's
    return redact_url(core) + url[len(core) :]


def _assigned(match: re.Match[str]) -> str:
    bare = match["value"].strip("'\"")
    if not is_secret_config_key(match["name"]) or bare == REDACTED or bare.lower() in ("bearer", "basic"):
        return match[0]
    value = match["value"]
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match['head']}{quote}{REDACTED}{quote}"


def redact_text(text: str) -> str:
    """Free text (an error message, a traceback, a test report) without credentials: every URL in it through
    :func:`redact_url`, the values of credential-named keys (``api_key='…'``, ``"token": "…"``) and ``Bearer``
    tokens replaced by ``***``. What is written for people to read goes through this."""
    if not text:
        return text
    out = _URL_IN_TEXT.sub(_url_in_text, text)
    out = _BEARER.sub(lambda m: f"{m[1]} {REDACTED}", out)
    return _ASSIGNED.sub(_assigned, out)
