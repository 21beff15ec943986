"""What looks like a secret: names whose values never reach logs, error messages or result files."""

from __future__ import annotations

import re

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
