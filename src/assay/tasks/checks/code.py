"""Code in a promptfoo config, run as promptfoo 0.123.1 runs it: ``python`` and ``javascript`` assertions (inline,
or ``file://x.py[:fn]`` / ``file://x.js[:fn]``), transforms (``options.transform``, an assertion's ``transform``),
and their results read as promptfoo reads them.

The code is the config author's, trusted as the config is (a config is code, like an lm-eval ``utils.py``):
Python runs in this process, JavaScript in one Node.js worker (:mod:`assay.tasks.checks.node`). The model's output
reaches it only as the data value ``output``, never as code."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from assay.tasks.checks.node import NodeError, NodeWorker

FILE = "file://"
JS_SUFFIXES = (".js", ".cjs", ".mjs")
TS_SUFFIXES = (".ts", ".cts", ".mts")


class CheckError(Exception):
    """A check that cannot run as promptfoo would run it: promptfoo throws, and the test is an error (not a fail)."""


def plain(value: Any) -> Any:
    """``value`` as JSON gives it to code (what promptfoo hands Python: dicts, lists, str, numbers)."""
    return json.loads(json.dumps(value, default=str))


def split_file(ref: str, last_colon: bool) -> tuple[str, str | None]:
    """``file://path[:fn]`` -> (path, fn). Transforms split at the last colon (after a drive letter), assertion
    values at the first, as promptfoo does."""
    rest = ref[len(FILE) :]
    at = rest.rfind(":") if last_colon else rest.find(":")
    if (last_colon and at > 1) or (not last_colon and at != -1):
        return rest[:at], rest[at + 1 :] or None
    return rest, None


class CodeRunner:
    """Runs a config's code for one row_checks evaluator: Node.js for JavaScript, this process for Python."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self.node = NodeWorker(base_dir)
        self._modules: dict[tuple[Path, float], ModuleType] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (CodeRunner, (self.base_dir,))  # a copy starts afresh: no process, no imported modules

    def path(self, name: str) -> Path:
        return (self.base_dir / name).resolve()

    def module(self, name: str) -> ModuleType:
        """A Python file of the config (``file://x.py``), imported once per modification time."""
        path = self.path(name)
        try:
            key = (path, path.stat().st_mtime)
        except OSError as err:
            raise CheckError(f"cannot read {path}: {err.strerror}") from None
        if key not in self._modules:
            spec = importlib.util.spec_from_file_location(f"assay_promptfoo_{abs(hash(key))}", path)
            if spec is None or spec.loader is None:
                raise CheckError(f"cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.path.insert(0, str(path.parent))  # the file may import its neighbours, as promptfoo's runner allows
            try:
                spec.loader.exec_module(module)
            finally:
                sys.path.remove(str(path.parent))
            self._modules[key] = module
        return self._modules[key]

    def python_function(self, name: str, fn: str) -> Any:
        function = getattr(self.module(name), fn, None)
        if not callable(function):
            raise CheckError(f"{name} has no function {fn!r}")
        return function

    async def javascript(self, spec: dict[str, Any], *args: Any) -> tuple[Any, bool]:
        """Run JavaScript (``{code}`` or ``{file, fn}``, ``kind``: assert | transform) -> (value, undefined)."""
        reply = await self.node.request({"op": "call", "spec": spec, "args": list(args)})
        if reply.get("type") in ("function", "symbol", "bigint"):
            raise NodeError(f"the code returned a {reply['type']}")
        return reply.get("value"), bool(reply.get("undef"))

    async def transform(self, code: Any, value: Any, context: Mapping[str, Any]) -> Any:
        """promptfoo's ``transform()``: inline JavaScript (an expression, or a function body when it has a line
        break), or ``file://x.js[:fn]`` / ``file://x.py[:fn]`` (Python's default function ``get_transform``)."""
        if not isinstance(code, str):
            raise CheckError(f"a transform is JavaScript code or a file:// reference, got {type(code).__name__}")
        label = transform_label(code)
        try:
            if code.startswith(FILE):
                name, fn = split_file(code, last_colon=True)
                if name.endswith(".py"):
                    result, undefined = (
                        self.python_function(name, fn or "get_transform")(plain(value), plain(context)),
                        False,
                    )
                elif name.endswith(JS_SUFFIXES):
                    spec = {"file": str(self.path(name)), "fn": fn, "kind": "transform"}
                    result, undefined = await self.javascript(spec, value, context)
                elif name.endswith(TS_SUFFIXES):
                    raise CheckError(f"TypeScript transform {name}: assay runs plain Node.js (compile it to .js)")
                else:
                    raise CheckError(f"Unsupported transform file format: {code}")
            else:
                result, undefined = await self.javascript({"code": code, "kind": "transform"}, value, context)
        except CheckError:
            raise
        except Exception as err:
            raise CheckError(f"Transform failed ({label}): {err}") from None
        if undefined or result is None:
            raise CheckError(f"Transform function did not return a value ({label})")
        return result

    async def value_from_script(self, ref: str, output: Any, context: Mapping[str, Any]) -> tuple[Any, str | None]:
        """An assertion value ``file://x.js[:fn]`` / ``file://x.py[:fn]`` run on the output -> (value, failure):
        a Python file that raises is a failing check (promptfoo), a JavaScript one an error."""
        name, fn = split_file(ref, last_colon=False)
        if name.endswith(".py"):
            try:
                return self.python_function(name, fn or "get_assert")(plain(output), plain(context)), None
            except Exception as err:
                return None, f"{type(err).__name__}: {err}"
        spec = {"file": str(self.path(name)), "fn": fn, "kind": "assert"}
        try:
            value, undefined = await self.javascript(spec, output, context)
        except NodeError as err:
            raise CheckError(str(err)) from None
        return (None if undefined else value), None

    async def aclose(self) -> None:
        await self.node.aclose()


def transform_label(code: str) -> str:
    if code.startswith(FILE):
        return "[file transform]"
    single = re.sub(r"\s+", " ", code).strip()
    return "[inline transform]: " + (single if len(single) <= 80 else single[:79] + "…")


def is_code_file(value: Any) -> bool:
    """A ``file://`` assertion value promptfoo runs (JavaScript or Python) rather than reads."""
    if not isinstance(value, str) or not value.startswith(FILE):
        return False
    name = split_file(value, last_colon=False)[0]
    return name.endswith((*JS_SUFFIXES, *TS_SUFFIXES, ".py", ".rb"))


def python_script(code: str) -> str:
    """promptfoo's ``buildPythonScript``: a one-line check is returned; a multi-line one is a function body,
    indented by its own first indentation."""
    if "\n" not in code:
        return f"import json\n\ndef main(output, context):\n    return {code}\n"
    match = re.search(r"^(?!\s*$)\s+", code, re.MULTILINE)
    indent = match.group(0) if match else "    "
    body = "\n".join(indent + line for line in code.split("\n"))
    return f"import json\n\ndef main(output, context):\n{body}\n"


def run_python(code: str, output: Any, context: Mapping[str, Any]) -> Any:
    """Run an inline python check (the config author's code) on plain copies of the output and context."""
    namespace: dict[str, Any] = {"__name__": "assay_python_check"}
    exec(compile(python_script(code), "<python check>", "exec"), namespace)  # the config's code, trusted as it is
    return namespace["main"](plain(output), plain(context))
