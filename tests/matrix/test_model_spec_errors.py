"""A ``--model`` JSON spec that is not JSON, not an object, or not a valid model spec is refused before anything
runs (exit 2, no folder, no traceback), the message naming the ``--model`` value and the problem, and never
echoing a credential the spec holds. A model option that would reach no model is refused, not ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.e2e_support import run_cli
from tests.matrix.matrix_support import write_task

SECRET = "sk-never-echoed-9d1e"


def refused(tmp_path: Path, *args: str) -> str:
    task = write_task(tmp_path)
    proc = run_cli("run", str(task), *args, "-o", "runs", "-q", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and SECRET not in proc.stdout + proc.stderr
    assert not (tmp_path / "runs").exists()
    return proc.stderr


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('alpha={"provider": "openai", "model": "alpha",}', """'alpha={"provider": "openai", "model": "alpha",}'"""),
        ('{"provider": "openai" "model": "alpha"}', "Expecting ',' delimiter at character 23 of the spec"),
        ("alpha={", "'alpha={': not valid JSON"),
    ],
)
def test_json_that_does_not_parse_is_named(tmp_path: Path, value: str, said: str) -> None:
    err = refused(tmp_path, "--model", value, "--model", "openai:beta")
    assert "Invalid value for --model" in err and "not valid JSON" in err and said in err


def test_a_spec_with_a_credential_is_named_without_its_body(tmp_path: Path) -> None:
    value = f'alpha={{"provider": "openai", "model": "alpha", "api_key": "{SECRET}",}}'
    err = refused(tmp_path, "--model", value)
    assert "alpha={…} (its body not shown: it may hold credentials): not valid JSON" in err
    headers = f'{{"provider": "openai", "headers": {{"X-Auth": "{SECRET}"}}'  # unclosed, unnamed
    err = refused(tmp_path, "--model", headers)
    assert "{…} (its body not shown: it may hold credentials): not valid JSON" in err


@pytest.mark.parametrize(
    ("value", "kind"), [("alpha=[1, 2]", "a list"), ("[]", "a list"), ('b=["openai:beta"]', "a list")]
)
def test_json_that_is_not_an_object_is_named(tmp_path: Path, value: str, kind: str) -> None:
    err = refused(tmp_path, "--model", value)
    assert f"{value!r}: a JSON model spec must be an object" in err and f"got {kind}" in err


def test_a_bad_key_is_named_as_in_a_task_file(tmp_path: Path) -> None:
    value = f'alpha={{"provider": "openai", "model": "a", "bse_url": "http://127.0.0.1:9/v1", "api_key": "{SECRET}"}}'
    err = refused(tmp_path, "--model", value, "--model", "openai:beta")
    assert "model alpha: model 'openai': unknown option 'bse_url'" in err and "base_url" in err
    err = refused(tmp_path, "--model", 'agent={"provider": "python", "targte": "m:f"}')
    assert "unknown option 'targte'" in err and "target" in err
    err = refused(tmp_path, "--model", 'x={"provider": "nope", "model": "m"}')
    assert "unknown model provider 'nope'" in err
    err = refused(tmp_path, "--model", 'x={"model": "m"}')
    assert "model spec needs a 'provider' key" in err


def test_an_option_that_reaches_no_model_is_refused(tmp_path: Path) -> None:
    own = '{"provider": "openai", "model": "alpha", "base_url": "http://127.0.0.1:9/v1"}'
    agent = '{"provider": "python", "target": "m:f"}'
    err = refused(tmp_path, "--model", f"alpha={own}", "--model", f"agent={agent}", "--base-url", "http://x:1/v1")
    assert "--base-url applies to none of the models given" in err
    err = refused(tmp_path, "--model", f"agent={agent}", "--param", "temperature=0")
    assert "--param applies to none of the models given" in err
