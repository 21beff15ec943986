"""``env_check``: run a command, or the row's tests with pytest, in the sample's environment after the agent stopped,
and score it: by the command's exit code, or by SWE-bench's rule on each test's outcome (:mod:`.swebench`).

Before it runs, protected files go back to how the workspace was made and the check's hidden files are written in
(:mod:`.protect`); pytest runs through a launcher the workspace cannot shadow (:mod:`.pytest_launcher`).
"""

from __future__ import annotations

import importlib.resources
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from assay.environments.base import CHECK_DIR, Environment
from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Options
from assay.evaluators.environment import swebench
from assay.evaluators.environment.observing import (
    ObservingEvaluator,
    file_texts,
    row_value,
    string_list,
    tail,
    workspace_path,
)
from assay.evaluators.environment.protect import DEFAULT_PROTECT, prepare_workspace
from assay.evaluators.registry import register
from assay.verdict import Verdict

LAUNCHER = "assay_run_pytest.py"  # the launcher's name under CHECK_DIR
SHOWN = 20  # failing tests named in a reason, feedback or details list
PYTEST_EXITS = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


class EnvCheckOptions(Options):
    command: str | None = Field(
        None,
        description="a shell line run with bash -c in the workspace after the loop, passed when it exits 0; null: "
        "the row's FAIL_TO_PASS / PASS_TO_PASS tests are run with pytest and scored as SWE-bench scores them",
    )
    mode: Literal["auto", "pytest", "exit_code"] = Field(
        "auto",
        description="'exit_code' runs command; 'pytest' runs the listed tests; 'auto': command when one is given, "
        "else pytest when the row lists tests",
    )
    check_files: str = Field(
        "check_files",
        description="the row key whose value (workspace path -> text) holds hidden files written into the "
        "workspace after the loop, over what the agent left there (a test patch)",
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="hidden files for every sample (workspace path -> text), written in as check_files are",
    )
    protect: list[str] | None = Field(
        None,
        description="globs of workspace files put back as the workspace was made before the check (removed when "
        "they were not there), so the agent cannot decide its own tests; null: conftest.py files, pytest's and "
        "setup's configuration (pytest.ini, tox.ini, setup.cfg, pyproject.toml), sitecustomize.py, pytest.py and "
        "_pytest/, in either mode; [] protects nothing (a task whose agent must edit pyproject.toml); add your "
        "tests folder (tests/**) to keep the agent from editing the PASS_TO_PASS tests",
    )
    fail_to_pass: str = Field(
        "FAIL_TO_PASS",
        description="the row key of the tests the change must make pass (a list or a JSON list of pytest node "
        "ids; the lowercase key is read too)",
    )
    pass_to_pass: str = Field(
        "PASS_TO_PASS",
        description="the row key of the tests that must keep passing (a list or a JSON list of node ids)",
    )
    pytest_args: list[str] | None = Field(
        None,
        description="what pytest runs (paths, node ids, options); null: the files of the listed tests",
    )
    python: str = Field("python3", description="the Python inside the environment that runs pytest")
    timeout_s: float = Field(600.0, gt=0, description="seconds the command or the tests may run")


@register("env_check")
class EnvCheck(ObservingEvaluator):
    """Runs a command or the row's tests in the sample's environment after the agent stopped.

    With ``command``: passed when it exits 0. With the row's ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` lists (SWE-bench
    rows): pytest runs their files and the sample is resolved (score 1) only when every listed test passed or
    xfailed; a listed test that failed, errored, was skipped, xpassed or did not run is a failure (SWE-bench's
    harness rule). Hidden tests (``check_files``, ``files``) are written in only now, so the agent never saw them.
    The observation: ``{"mode": "pytest", "tests": {node id: outcome}, "exit_code", "timed_out", "output_tail",
    "prepared"}`` or ``{"mode": "exit_code", "command", "exit_code", "timed_out", "output_tail", "prepared"}``.
    """

    Options = EnvCheckOptions
    options: EnvCheckOptions

    def setup(self) -> None:
        o = self.options
        if o.mode == "pytest" and o.command is not None:
            raise ConfigError("env_check: command is run in mode 'exit_code'; pytest mode takes pytest_args")
        if o.mode == "exit_code" and not o.command:
            raise ConfigError("env_check: mode 'exit_code' needs a command")
        self._protect = DEFAULT_PROTECT if o.protect is None else list(o.protect)
        try:
            self._files = file_texts(o.files, "env_check option files")
        except EvaluationInputError as exc:
            raise ConfigError(str(exc)) from None

    def _lists(self, doc: Mapping[str, Any]) -> tuple[list[str], list[str], bool]:
        """The row's FAIL_TO_PASS and PASS_TO_PASS tests, and whether it has either key."""
        keys = [(k, k.lower()) for k in (self.options.fail_to_pass, self.options.pass_to_pass)]
        present = any(k in doc for pair in keys for k in pair)
        f2p, p2p = (string_list(row_value(doc, *pair), pair[0]) for pair in keys)
        return f2p, p2p, present

    def _mode(self, doc: Mapping[str, Any]) -> str:
        if self.options.mode != "auto":
            return self.options.mode
        if self.options.command:
            return "exit_code"
        if self._lists(doc)[2]:
            return "pytest"
        raise EvaluationInputError(
            f"env_check has nothing to run: give it a command, or rows with {self.options.fail_to_pass} / "
            f"{self.options.pass_to_pass} lists"
        )

    async def observe(self, env: Environment, doc: Mapping[str, Any]) -> Any:
        """Restore protected files, write the hidden ones, run the check; what it did and what came out."""
        try:
            mode = self._mode(doc)
            row_files = file_texts(doc.get(self.options.check_files), f"the row's {self.options.check_files}")
            files = {**self._files, **row_files}
            targets = self._targets(doc) if mode == "pytest" else []
        except EvaluationInputError as exc:
            return {"error": str(exc)}
        prepared = await prepare_workspace(env, self._protect, files, timeout_s=min(60.0, self.options.timeout_s))
        if mode == "exit_code":
            return await self._run_command(env, prepared)
        return await self._run_pytest(env, targets, prepared)

    def _targets(self, doc: Mapping[str, Any]) -> list[str]:
        if self.options.pytest_args is not None:
            return list(self.options.pytest_args)
        f2p, p2p, _ = self._lists(doc)
        files = sorted({workspace_path(t.split("::")[0], "a listed test") for t in f2p + p2p})
        if not files:
            raise EvaluationInputError("env_check: the row lists no tests to run and pytest_args is not set")
        return files

    async def _run_command(self, env: Environment, prepared: dict[str, Any]) -> dict[str, Any]:
        command = self.options.command or ""
        result = await env.exec(["bash", "-c", command], cwd=env.workspace, timeout_s=self.options.timeout_s)
        output = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
        return {
            "mode": "exit_code",
            "command": command,
            "exit_code": result.returncode,
            "timed_out": result.timed_out,
            "output_tail": tail(output),
            "prepared": prepared,
        }

    async def _run_pytest(self, env: Environment, targets: list[str], prepared: dict[str, Any]) -> dict[str, Any]:
        launcher = importlib.resources.files(__package__).joinpath("pytest_launcher.py").read_bytes()
        env.add_check_files({LAUNCHER: launcher})
        nonce = secrets.token_hex(16)
        argv = [self.options.python, "-I", f"{CHECK_DIR}/{LAUNCHER}", "--workspace", env.workspace, "--", *targets]
        result = await env.exec(
            argv,
            input=(nonce + "\n").encode(),
            cwd=env.workspace,
            timeout_s=self.options.timeout_s,
            check_files=True,
        )
        stdout = result.stdout.decode(errors="replace")
        block = re.compile(rf"\n?{nonce} BEGIN\n(.*?)\n{nonce} END\n?", re.DOTALL)
        reports = block.findall(stdout)
        observation: dict[str, Any] = {
            "mode": "pytest",
            "targets": targets,
            "tests": {},
            "exit_code": result.returncode,
            "timed_out": result.timed_out,
            "output_tail": tail(block.sub("", stdout) + result.stderr.decode(errors="replace")),
            "prepared": prepared,
        }
        if len(reports) > 1:
            observation["forged"] = (
                f"the test run's report appeared {len(reports)} times: code run by the tests wrote one (its outcomes "
                "are not trusted)"
            )
            return observation
        if not reports:
            return observation
        report = json.loads(reports[0])
        if report.get("error"):
            return {"error": report["error"], "output_tail": observation["output_tail"]}
        observation["tests"] = dict(report.get("tests") or {})
        observation["pytest_exit_code"] = report.get("exit_code")
        if report.get("ended"):
            observation["ended"] = report["ended"]
        return observation

    def score(self, observation: Any, doc: Mapping[str, Any], expected: Any) -> Verdict:
        """The exit code's verdict, or SWE-bench's on the listed tests' outcomes."""
        if not isinstance(observation, Mapping) or observation.get("mode") not in ("pytest", "exit_code"):
            raise EvaluationInputError(f"env_check: the recorded observation is not env_check's: {observation!r:.200}")
        if observation["mode"] == "exit_code":
            return _exit_code_verdict(observation, self.options.timeout_s)
        f2p, p2p, _ = self._lists(doc)
        if not f2p and not p2p:
            raise EvaluationInputError(
                f"env_check: the row lists no tests in {self.options.fail_to_pass} or {self.options.pass_to_pass}"
            )
        return _tests_verdict(observation, swebench.grade(observation.get("tests") or {}, f2p, p2p), self.options)


def _exit_code_verdict(observation: Mapping[str, Any], timeout_s: float) -> Verdict:
    code, command = observation.get("exit_code"), observation.get("command")
    details = {"mode": "exit_code", "exit_code": code, "output_tail": tail(observation.get("output_tail") or "", 1000)}
    details.update(_undone(observation))
    if observation.get("timed_out"):
        details["timed_out"] = True
        return Verdict.fail(
            f"`{command}` ran past {timeout_s:g} s",
            feedback="The check did not finish in time: look for something that hangs or is too slow.",
            details=details,
        )
    if code == 0:
        return Verdict.pass_(1.0, details)
    last = tail(observation.get("output_tail") or "", 600).strip()
    return Verdict.fail(
        f"`{command}` exited with {code}",
        feedback=f"The check `{command}` failed (exit code {code})" + (f"; its output ends:\n{last}" if last else "."),
        details=details,
    )


def _undone(observation: Mapping[str, Any]) -> dict[str, Any]:
    """The protected files the check put back or removed before it ran (shown, since the agent's edits to them did
    not count)."""
    prepared = observation.get("prepared") or {}
    undone = sorted([*prepared.get("restored", []), *prepared.get("removed", [])])
    return {"undone": undone} if undone else {}


def _named(failures: tuple[tuple[str, str], ...]) -> str:
    shown = ", ".join(f"{t} ({outcome})" for t, outcome in failures[:SHOWN])
    return shown + (f" and {len(failures) - SHOWN} more" if len(failures) > SHOWN else "")


def _tests_verdict(observation: Mapping[str, Any], report: swebench.Report, o: EnvCheckOptions) -> Verdict:
    halves = {o.fail_to_pass: report.fail_to_pass, o.pass_to_pass: report.pass_to_pass}
    details: dict[str, Any] = {
        "mode": "pytest",
        "resolution": report.status,
        "fraction_passing": round(report.fraction_passing, 6),
        "exit_code": observation.get("exit_code"),
        **_undone(observation),
    }
    for key, half in halves.items():
        details[key] = {
            "passed": len(half.success),
            "total": len(half.success) + len(half.failure),
            "failing": {t: outcome for t, outcome in half.failure[:SHOWN]},
        }
    if observation.get("forged"):
        details["forged"] = True
        return Verdict.fail(f"not resolved: {observation['forged']}", details=details)
    if report.resolved:
        return Verdict.pass_(1.0, details)
    parts = [
        f"{len(half.failure)} of {len(half.success) + len(half.failure)} {key} tests failed: {_named(half.failure)}"
        for key, half in halves.items()
        if half.failure
    ]
    why = ""
    if observation.get("timed_out"):
        why = f" (the tests ran past {o.timeout_s:g} s)"
    elif not observation.get("tests"):
        code = observation.get("pytest_exit_code", observation.get("exit_code"))
        ended = observation.get("ended") or (PYTEST_EXITS.get(code) if isinstance(code, int) else None)
        why = f" (no test outcomes were reported; exit code {code}" + (f": {ended})" if ended else ")")
    feedback = "Make these tests pass: " + _named(report.fail_to_pass.failure + report.pass_to_pass.failure) + "."
    return Verdict.fail("not resolved: " + "; ".join(parts) + why, feedback=feedback, details=details)
