"""The two programs of a ``code_exec`` run: ``wire.py`` followed by ``serve.py`` (inside the sandbox) or by
``runner.py`` (the trusted test process), each started as ``python -c``.

Passing the program rather than a path keeps assay's files out of the sandbox (an installed assay may live where
the sandbox's user cannot read) and needs nothing on ``sys.path``. It goes as bytecode compiled once here, on the
program's stdin behind a tiny ``-c`` loader, when the Python that runs it has this one's version (compiling the
~45 KB of source took longer than starting the interpreter), else as source. The parts are modules of this
package, linted and tested as such; composing drops their imports of each other and all but the first
``__future__`` import.
"""

from __future__ import annotations

import functools
import marshal
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
_LOCAL_IMPORT = re.compile(r"^from assay\.evaluators\.code\.\w+ import [\w, ]+\n", re.MULTILINE)
_FUTURE = "from __future__ import annotations\n"
LOADER = "import marshal, sys\nb = sys.stdin.buffer\nexec(marshal.loads(b.read(int.from_bytes(b.read(8), 'big'))))\n"
PARTS = {"serve": ("wire", "serve"), "runner": ("wire", "runner")}


@functools.cache
def compose(*modules: str) -> str:
    """The source of a program made of these modules of this package, in order (cached)."""
    parts = []
    for i, name in enumerate(modules):
        source = (HERE / f"{name}.py").read_text(encoding="utf-8")
        source = _LOCAL_IMPORT.sub("", source)
        if i:
            source = source.replace(_FUTURE, "", 1)
        parts.append(source)
    program = "\n".join(parts)
    compile(program, f"<{'+'.join(modules)}>", "exec")  # a composing mistake shows here, not in every sample
    return program


@functools.cache
def _bytecode(name: str) -> bytes:
    code = compile(compose(*PARTS[name]), f"<{name}>", "exec")
    data = marshal.dumps(code)
    return len(data).to_bytes(8, "big") + data


def launch(name: str, python_version: str) -> tuple[str, bytes]:
    """``(text for -c, bytes to write first on its stdin)`` that run program ``name`` ("serve" or "runner") in
    a Python of ``python_version`` ("3.11")."""
    if python_version == f"{sys.version_info[0]}.{sys.version_info[1]}":
        return LOADER, _bytecode(name)
    return compose(*PARTS[name]), b""


def serve_program() -> str:
    """What runs in the sandbox: the code under test, answering calls as data (as source)."""
    return compose(*PARTS["serve"])


def runner_program() -> str:
    """What runs the task's tests, outside the sandbox (as source)."""
    return compose(*PARTS["runner"])
