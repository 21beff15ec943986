"""lm-eval's ``filter_list`` as assay filter pipelines, step for step with lm-eval's meaning."""

from __future__ import annotations

import re
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.yamlfile import TaskFile

LMEVAL_DEFAULT_PATTERN = r"#### (\-?[0-9\.\,]+)"  # lm-eval's RegexFilter default
SAME_NAME = ("take_first", "majority_vote", "lowercase", "uppercase", "remove_whitespace")


def convert_filters(tf: TaskFile) -> list[dict[str, Any]]:
    """assay ``filters:`` entries from ``filter_list`` (none when it is absent: assay's ``none`` pipeline)."""
    raw = tf.data.get("filter_list")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise tf.error(("filter_list",), "a list of {name, filter: [...]} pipelines")
    out = []
    for i, entry in enumerate(raw):
        at: tuple[str | int, ...] = ("filter_list", i)
        if not isinstance(entry, dict) or "name" not in entry:
            raise tf.error(at, "a pipeline is {name: ..., filter: [{function: ...}, ...]}")
        extra = sorted(set(entry) - {"name", "filter"})
        if extra:
            raise tf.error((*at, extra[0]), "not supported (a pipeline has 'name' and 'filter')")
        steps: list[dict[str, Any]] = []
        for j, step in enumerate(entry.get("filter") or []):
            steps.extend(_step(tf, (*at, "filter", j), step))
        out.append({"name": str(entry["name"]), "steps": steps})
    return out


def _step(tf: TaskFile, at: tuple[str | int, ...], step: Any) -> list[dict[str, Any]]:
    if not isinstance(step, dict) or not isinstance(step.get("function"), str):
        raise tf.error(at, "a filter step is {function: NAME, ...}")
    fn = step["function"]
    options = {k: v for k, v in step.items() if k != "function"}
    if fn == "regex":
        return _regex(tf, at, options)
    if fn in SAME_NAME:
        if options:
            raise tf.error((*at, next(iter(options))), f"filter {fn!r} takes no options here")
        return [{"type": fn}]
    supported = ", ".join(("regex", *SAME_NAME))
    raise tf.error((*at, "function"), f"lm-eval filter {fn!r} is not supported (supported: {supported})")


def _regex(tf: TaskFile, at: tuple[str | int, ...], options: dict[str, Any]) -> list[dict[str, Any]]:
    unknown = sorted(set(options) - {"regex_pattern", "group_select", "fallback"})
    if unknown:
        raise tf.error((*at, unknown[0]), "not a regex filter option (regex_pattern, group_select, fallback)")
    pattern = str(options.get("regex_pattern", LMEVAL_DEFAULT_PATTERN))
    try:
        groups = re.compile(pattern).groups
    except re.error as err:
        raise tf.error((*at, "regex_pattern"), f"invalid regular expression: {err}") from None
    select = options.get("group_select", 0)
    if select not in (0, -1):
        raise tf.error((*at, "group_select"), f"0 (the first match) or -1 (the last) are supported, got {select!r}")
    # lm-eval takes re.findall's item: the whole match (no groups), the group (one), or the first non-empty group
    if groups <= 1:
        group = groups
    elif _alternatives_are_groups(pattern):
        group = 0  # (a)|(b)|...: the whole match is the one group that matched
    else:
        raise ConfigError(
            f"{tf.where(*at, 'regex_pattern')}: a pattern with {groups} groups is supported when it is an "
            "alternation of groups, (a)|(b), whose first non-empty group is the whole match"
        )
    step: dict[str, Any] = {"type": "regex", "pattern": pattern, "group": group}
    step["select"] = "first" if select == 0 else "last"
    if "fallback" in options:
        step["fallback"] = options["fallback"]
    return [step, {"type": "strip"}]  # lm-eval strips the match


def _alternatives_are_groups(pattern: str) -> bool:
    """True when ``pattern`` is ``(...)|(...)|...`` with each top-level branch one capturing group."""
    branches, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    branches.append(pattern[start:])
    return all(_one_group(b) for b in branches)


def _one_group(branch: str) -> bool:
    if not (branch.startswith("(") and branch.endswith(")")) or branch.startswith("(?"):
        return False
    depth, i, in_class = 0, 0, False
    while i < len(branch):
        ch = branch[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(branch) - 1:
                return False
        i += 1
    return True
