"""The two programs of a ``code_exec`` run, as source text for ``python -c``: ``wire.py`` followed by ``serve.py``
(inside the sandbox) or by ``runner.py`` (the trusted test process).

Passing source rather than a path keeps assay's files out of the sandbox (an installed assay may live where the
sandbox's user cannot read) and needs nothing on ``sys.path``. The parts are modules of this package, linted and
tested as such; composing drops their imports of each other and all but the first ``__future__`` import.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

HERE = Path(__file__).parent
_LOCAL_IMPORT = re.compile(r"^from assay\.evaluators\.code\.\w+ import [\w, ]+\n", re.MULTILINE)
_FUTURE = "from __future__ import annotations\n"


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


def serve_program() -> str:
    """What runs in the sandbox: the code under test, answering calls as data."""
    return compose("wire", "serve")


def runner_program() -> str:
    """What runs the task's tests, outside the sandbox."""
    return compose("wire", "runner")
