"""Evaluations isolated from the test session that runs them: an agent that calls ``os._exit``, raises
``KeyboardInterrupt`` or ``SystemExit`` fails its own test instead of ending pytest.

With ``fork`` (the pytest plugin's default where the platform has it), each ``assert_eval`` runs its evaluation in a
forked child: the child inherits everything the test set up (an agent defined in the test, a server running in a
thread), writes the run folder and sends back its path (or the exception it ended with); however the child ends,
this process carries on. One fork per ``assert_eval`` call, not per agent call: the run's samples share one child,
and what the run needs is imported here first, so that a child does not import it again each time.

Without fork (``none``, or a platform without it), the evaluation runs in this process and only what can be caught
is caught: an exception that is not an ``Exception`` (``KeyboardInterrupt`` raised by the agent, ``SystemExit``)
fails the test; a Ctrl-C the user presses still stops the session, since the SIGINT it sends is told apart.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from assay.testing.failure import EvalAssertionError

T = TypeVar("T")
MODES = ("fork", "none")


def default_mode() -> str:
    """``fork`` where the platform forks (Linux, macOS), else ``none``."""
    return "fork" if hasattr(os, "fork") else "none"


class AgentEnded(EvalAssertionError):
    """The code under evaluation ended the evaluation's process, or raised an exception that is not an Exception."""


def _warm() -> None:
    """Import what a run needs here, once, and ask git for the commit runs record (cached per working directory and
    repository state), so that each forked child has them already instead of doing it again and losing it."""
    import assay.api
    import assay.results.loader
    import assay.runner.scheduler  # noqa: F401
    from assay.runner.gitinfo import git_hash

    git_hash()


def _ended(what: str, runs: Path, since: float) -> AgentEnded:
    made = _new_run_dirs(runs, since)
    where = f"; its run folder keeps the samples finished before: {made[0]}" if len(made) == 1 else ""
    return AgentEnded(f"the evaluation did not finish: {what}{where}", made[0] if len(made) == 1 else None)


def _new_run_dirs(runs: Path, since: float) -> list[Path]:
    try:
        found = [p for p in runs.iterdir() if p.is_dir() and (p / "run.json").exists()]
        return [p for p in found if p.stat().st_ctime >= since]
    except OSError:
        return []


def _described(error: BaseException) -> str:
    name = type(error).__name__
    text = str(error)
    return f"the code under evaluation raised {name}" + (f": {text}" if text else "")


def _send(write_fd: int, outcome: tuple[str, Any]) -> None:
    try:
        data = pickle.dumps(outcome)
    except Exception:  # an exception that does not pickle: its type and text are enough
        kind, value = outcome
        data = pickle.dumps(("raised", AgentEnded(_described(value))) if kind == "raised" else outcome)
    with os.fdopen(write_fd, "wb") as out:
        out.write(data)


def _child(call: Callable[[], T], write_fd: int) -> None:
    """In the forked child: run ``call``, send back what came of it, and end without running anything of pytest's."""
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            outcome: tuple[str, Any] = ("ok", call())
        except BaseException as err:  # an agent's KeyboardInterrupt or SystemExit is sent back too
            outcome = ("raised", err)
        _send(write_fd, outcome)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)


def _read_all(fd: int) -> bytes:
    chunks = []
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read(1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)


def _reap(pid: int, *, stop: bool) -> int:
    """Wait for the child; when ``stop`` (this process is being interrupted), interrupt it first, then kill it."""
    if stop:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"its process was killed by {name}"
    code = os.waitstatus_to_exitcode(status)
    return f"its process exited with code {code} (os._exit or a crash) before it could report"


def in_fork(call: Callable[[], T], runs: Path) -> T:
    """``call()`` in a forked child: its result, or the exception it raised (an ``AgentEnded`` for one that is not
    an Exception, or when the child ended without a word). ``runs``: where the evaluation writes its run folder."""
    __tracebackhide__ = True
    _warm()
    for stream in (sys.stdout, sys.stderr):  # what is buffered here must not be written by the child too
        with contextlib.suppress(Exception):
            stream.flush()
    since = time.time()
    read_fd, write_fd = os.pipe()
    pid = -1
    frozen = gc.get_freeze_count() == 0
    if frozen:  # the child's collections then never walk (and so copy) the pages of what the session holds
        gc.freeze()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12 warns about forking with threads
            pid = os.fork()
    finally:
        if frozen and pid != 0:
            gc.unfreeze()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read_fd)
        _child(call, write_fd)
    os.close(write_fd)
    try:
        data = _read_all(read_fd)
    except BaseException:
        _reap(pid, stop=True)
        raise
    status = _reap(pid, stop=False)
    if not data:
        raise _ended(_status(status), runs, since)
    kind, value = pickle.loads(data)  # our own child's message
    if kind == "ok":
        return value
    if not isinstance(value, Exception):
        raise _ended(_described(value), runs, since)
    raise value


@contextlib.contextmanager
def _sigint_seen() -> Iterator[list[bool]]:
    """While it is open, a SIGINT (a real Ctrl-C) is noted before KeyboardInterrupt is raised, so that one the code
    under evaluation raised itself can be told apart. Only in the main thread (where signal handlers live)."""
    seen = [False]
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous = signal.getsignal(signal.SIGINT)

    def noted(signum: int, frame: Any) -> None:
        seen[0] = True  # then whatever handled SIGINT before (Python's own raises KeyboardInterrupt)
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, noted)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def in_process(call: Callable[[], T], runs: Path) -> T:
    """``call()`` here; a KeyboardInterrupt no Ctrl-C caused, or a SystemExit, becomes an ``AgentEnded``."""
    __tracebackhide__ = True
    since = time.time()
    with _sigint_seen() as seen:
        try:
            return call()
        except Exception:
            raise
        except KeyboardInterrupt as err:
            if seen[0]:
                raise
            raise _ended(_described(err), runs, since) from None
        except BaseException as err:
            raise _ended(_described(err), runs, since) from None


def isolated(mode: str, call: Callable[[], T], runs: Path) -> T:
    """``call()`` isolated as ``mode`` says (``fork`` falls back to this process where the platform cannot fork)."""
    __tracebackhide__ = True
    if mode == "fork" and hasattr(os, "fork"):
        return in_fork(call, runs)
    return in_process(call, runs)
