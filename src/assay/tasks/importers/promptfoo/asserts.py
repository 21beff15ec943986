"""A test's assertions and options checked at load, each problem naming its file, line and key path: every key
decided (keys.py), every type one row_checks can judge, every ``file://`` reference found. Python/JavaScript files
(assertion values, transforms, rubric prompts) are made absolute so row_checks finds them from any folder; a
non-code assertion value from a ``.txt``/``.json``/``.yaml`` file is read now, as promptfoo reads it when it runs
the assertion; graders (``provider``) are checked and kept as promptfoo has them (row_checks reads them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from assay.tasks.importers.promptfoo.files import CODE, FILE, Files, split_function, strip_file
from assay.tasks.importers.promptfoo.keys import check_keys
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import LineDict, LineList, load_yaml12, plain

CODE_TYPES = ("python", "javascript")
SET = "assert-set"


def refusal(kind: str) -> str | None:
    """Why row_checks cannot judge a promptfoo assertion type (None when it can), in the assertion engine's words."""
    from assay.tasks.checks.catalog import refusal as engine_refusal

    return engine_refusal(kind)


class Checker:
    """Checks one config's assertions and options (``files`` relative to the config's folder)."""

    def __init__(self, files: Files, grader: Callable[[Any, At], Any]) -> None:
        self.files = files
        self.grader = grader

    def assertions(self, items: Any, at: At) -> LineList:
        """A list of assertions (or assert-sets), each checked; the same list with files resolved."""
        if items is None:
            return LineList()
        if not isinstance(items, list):
            raise at.error(f"assert is a list of assertions, got {items!r}")
        out = LineList(source=getattr(items, "source", at.file), line=getattr(items, "line", at.line))
        out.lines.extend(getattr(items, "lines", []))
        out.extend(self.assertion(item, at.key(items, i)) for i, item in enumerate(items))
        return out

    def assertion(self, item: Any, at: At) -> Any:
        if not isinstance(item, dict):
            raise at.error(f"an assertion is a mapping like {{type: contains, value: …}}, got {item!r}")
        kind = item.get("type")
        if not isinstance(kind, str):
            raise (at.key(item, "type") if "type" in item else at).error(f"an assertion needs a type, got {kind!r}")
        check_keys(item, "assert_set" if kind == SET else "assertion", at)  # first: it drops unknown keys
        out = LineDict(item, source=getattr(item, "source", at.file), line=getattr(item, "line", at.line))
        out.lines.update(getattr(item, "lines", {}))
        if kind == SET:
            out["assert"] = self.assertions(item.get("assert"), at.key(item, "assert"))
            return out
        why = refusal(kind)
        if why is not None:
            raise at.key(item, "type").error(f"assertion type {kind!r} is refused at load: {why}")
        base = kind[4:] if kind.startswith("not-") else kind
        if "value" in item:
            out["value"] = self.value(item["value"], at.key(item, "value"), code=base in CODE_TYPES)
        for key in ("transform", "contextTransform"):
            if isinstance(item.get(key), str) and item[key].startswith(FILE):
                out[key] = self.code_ref(item[key], at.key(item, key))
        if isinstance(item.get("rubricPrompt"), str) and item["rubricPrompt"].startswith(FILE):
            out["rubricPrompt"] = self.rubric(item["rubricPrompt"], at.key(item, "rubricPrompt"))
        if item.get("provider") is not None:
            self.grader(item["provider"], at.key(item, "provider"))
        return out

    def rubric(self, ref: str, at: At) -> str:
        """A ``file://`` rubric prompt read now, as promptfoo's loadRubricPrompt reads it (its text)."""
        spec, _ = split_function(strip_file(ref))
        if spec.endswith(CODE[1:]):
            raise at.error(f"{ref!r}: a rubric prompt made by JavaScript is not run by assay")
        return self.files.text(self.files.paths(ref if spec == strip_file(ref) else spec, at)[0], at)

    def value(self, value: Any, at: At, *, code: bool) -> Any:
        """An assertion's value: file references checked (code kept as a reference, data read now)."""
        if isinstance(value, list) and not code:
            return [self.value(v, at.key(value, i), code=False) for i, v in enumerate(value)]
        if not isinstance(value, str) or not value.startswith(FILE):
            return value
        spec, _ = split_function(strip_file(value))
        if code or spec.endswith(CODE) or spec.endswith(".rb"):
            if spec.endswith(".rb"):
                raise at.error(f"{value!r}: Ruby assertions are not run by assay")
            return self.code_ref(value, at)
        path = self.files.paths(value, at)[0]
        suffix = path.suffix.lower()
        if suffix in (".json", ".yaml", ".yml"):
            return plain(load_yaml12(self.files.text(path, at), str(path)))
        if suffix == ".txt":
            return self.files.text(path, at).strip()
        raise at.error(
            f"{value!r}: an assertion value file is .txt, .json, .yaml or code (promptfoo refuses "
            f"{suffix or 'this'} files too)"
        )

    def code_ref(self, ref: str, at: At) -> str:
        """A ``file://`` reference checked to exist, made absolute (``file:///abs/x.py:fn``)."""
        spec, function = split_function(strip_file(ref))
        if not spec.endswith(CODE):
            return FILE + str(self.files.paths(spec, at)[0])
        path, function = self.files.code(ref, at)
        return FILE + str(path) + (f":{function}" if function else "")

    def options(self, options: Mapping[str, Any], at: At) -> LineDict:
        """A test's merged options, checked (keys.SECTIONS['options']), files and grader resolved."""
        if not isinstance(options, dict):
            raise at.error(f"options are a mapping, got {options!r}")
        check_keys(options, "options", at)
        out = LineDict(options, source=getattr(options, "source", at.file), line=getattr(options, "line", at.line))
        out.lines.update(getattr(options, "lines", {}))
        repeat = options.get("repeat")
        if repeat is not None and repeat != 1:
            raise at.key(options, "repeat").error(
                f"not supported by assay's promptfoo reader: repeat {repeat!r} of one test (assay's --repeats "
                "repeats every row)"
            )
        for key in ("transform", "postprocess"):
            if isinstance(options.get(key), str) and options[key].startswith(FILE):
                out[key] = self.code_ref(options[key], at.key(options, key))
        if isinstance(options.get("rubricPrompt"), str) and options["rubricPrompt"].startswith(FILE):
            out["rubricPrompt"] = self.rubric(options["rubricPrompt"], at.key(options, "rubricPrompt"))
        if options.get("provider") is not None:
            self.grader(options["provider"], at.key(options, "provider"))
        for key in ("prefix", "suffix"):
            if options.get(key) is not None and not isinstance(options[key], str):
                raise at.key(options, key).error(f"{key} is a text, got {options[key]!r}")
        return out
