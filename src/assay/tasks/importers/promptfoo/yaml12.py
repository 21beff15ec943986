"""YAML as promptfoo reads it (YAML 1.2 core schema): ``Yes``, ``on``, ``no`` are strings, only true/false are
booleans; built on PyYAML's safe loader with the 1.1-only implicit types taken out."""

from __future__ import annotations

import re
from typing import Any

import yaml

from assay.errors import ConfigError


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's SafeLoader with YAML 1.2 core-schema booleans and numbers (no 1.1 ``Yes``/``on``, no ``1:30``)."""


_TIMESTAMP = "tag:yaml.org,2002:timestamp"  # not in the core schema: a date stays a string, as promptfoo reads it
_CORE = {  # YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
    "tag:yaml.org,2002:bool": (r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    "tag:yaml.org,2002:int": (r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    "tag:yaml.org,2002:float": (
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
}
Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _CORE and tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, (_pattern, _first) in _CORE.items():
    Yaml12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def load_yaml12(text: str, source: str) -> Any:
    """Parse YAML 1.2 text; a syntax error names the file and line."""
    try:
        return yaml.load(text, Loader=Yaml12Loader)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
