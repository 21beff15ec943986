"""A promptfoo config's prompts render as promptfoo's nunjucks renders them (assay's ``promptfoo`` template dialect):
an undefined var is empty text, values are written as JavaScript writes them, the ``load`` filter is JSON.parse and
``dump`` JSON.stringify, ``env`` is the process environment under the config's env. assay's own tasks stay strict;
the sandbox's limits hold in both. JSON prompt files that are templates of JSON are refused naming their line."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.tasks import Task
from assay.tasks.importers.promptfoo import load_promptfoo
from assay.tasks.template import TemplateLimitError, compile_template


def write(tmp_path: Path, text: str, **files: str) -> Path:
    for name, body in files.items():
        (tmp_path / name.replace("__", ".")).write_text(body)
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(text)
    return path


def rendered(task: Task) -> list[str]:
    return [task._render(s)[-1]["content"] for s in task.samples()]


def test_load_filter_env_global_and_undefined_vars_as_promptfoo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """simple-csv's `{{ (style_config | load).tone }}`, `{{ env.X }}` from the config's env and the process's, and a
    var no test gives, rendered as promptfoo 0.123.1 renders them."""
    monkeypatch.setenv("ASSAY_TEST_FROM_PROCESS", "proc")
    monkeypatch.delenv("ASSAY_TEST_UNSET", raising=False)
    path = write(
        tmp_path,
        "env: {STYLE: formal, UNUSED_SECRET: s3cret}\nprompts: [file://p.txt]\nproviders: [echo]\ntests:\n"
        '  - vars: {style_config: \'{"tone": "warm", "n": [1, 2]}\', flag: true, none: null, f: 2.0}\n',
        p__txt="{{ (style_config | load).tone }}|{{ (style_config | load).n }}|{{ missing }}|{{ missing.deep }}|"
        "{% for x in missing %}X{% endfor %}|{% if env['STYLE'] %}{{ env.STYLE }}{% endif %}|"
        "{{ env.ASSAY_TEST_FROM_PROCESS }}|{{ env.ASSAY_TEST_UNSET }}|{{ flag }}|{{ none }}|{{ f }}|"
        "{{ style_config | load | dump }}",
    )
    (task,) = load_promptfoo(path)
    assert rendered(task) == ["warm|1,2||||formal|proc||true||2|" + '{"tone":"warm","n":[1,2]}']
    # only the config's env entries the prompt names are written into the task (and so its run folder)
    assert task.config.template_dialect is not None
    assert task.config.template_dialect.env == {"STYLE": "formal"}


def test_a_config_without_prompts_runs_promptfoos_default_prompt(tmp_path: Path) -> None:
    """promptfoo's '{{prompt}}' with no `prompt` var renders '' (an empty user message), as promptfoo sends."""
    path = write(tmp_path, "providers: [echo]\ntests:\n  - vars: {year: 1950}\n  - vars: {prompt: hi}\n")
    (task,) = load_promptfoo(path)
    assert rendered(task) == ["", "hi"]


def test_the_dialect_keeps_the_sandbox_and_its_limits() -> None:
    template = compile_template("{{ 'a' * 10**7 }}", "t", "promptfoo")
    with pytest.raises(TemplateLimitError):
        template.render({})
    from jinja2.exceptions import SecurityError

    # an unsafe attribute is an undefined value (empty text, as any undefined of the dialect); using it raises
    assert compile_template("{{ ''.__class__.__mro__ }}", "t", "promptfoo").render({}) == ""
    probe = compile_template("{{ ''.__class__.__mro__[1].__subclasses__() }}", "t", "promptfoo")
    with pytest.raises(SecurityError):
        probe.render({})
    loop = compile_template(
        "{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}", "t", "promptfoo"
    )
    with pytest.raises(TemplateLimitError):
        loop.render({})


def test_assay_templates_stay_strict_and_without_env_or_load() -> None:
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        compile_template("{{ x }}", "t").render({})
    with pytest.raises(ConfigError, match="No filter named 'load'"):
        compile_template("{{ x | load }}", "t")
    with pytest.raises(jinja2.UndefinedError):
        compile_template("{{ env.HOME }}", "t").render({})


def test_a_dialect_template_pickles_with_its_dialect(monkeypatch: pytest.MonkeyPatch) -> None:
    template = compile_template("{{ x }}[{{ env.A }}]", "t", "promptfoo", {"A": "1"})
    again = pickle.loads(pickle.dumps(template))
    assert again.render({}) == "[1]"


def test_the_dialect_changes_the_task_hash_and_is_written_back(tmp_path: Path) -> None:
    from assay.tasks.identity import task_config

    path = write(tmp_path, "prompts: ['Say {{ a }}']\nproviders: [echo]\ntests:\n  - vars: {a: x}\n")
    (task,) = load_promptfoo(path)
    written = task_config(task)
    assert written["template_dialect"] == {"name": "promptfoo", "env": {}}
    rebuilt = Task.from_config(written, base_dir=tmp_path)
    assert rebuilt.hash == task.hash
    del written["template_dialect"]
    assert Task.from_config(written, base_dir=tmp_path).hash != task.hash


def test_a_json_prompt_file_that_is_a_template_is_refused_naming_its_line(tmp_path: Path) -> None:
    """config-multi-turn's prompt.json: promptfoo renders the text, then reads chat messages from it."""
    path = write(
        tmp_path,
        "prompts: [file://prompt.json]\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n",
        prompt__json='[\n  {"role": "system", "content": "s"},\n  {% for c in _conversation %}\n'
        '  {"role": "user", "content": "{{ c.output }}"},\n  {% endfor %}\n'
        '  {"role": "user", "content": "{{ q }}"}\n]\n',
    )
    with pytest.raises(ConfigError) as err:
        load_promptfoo(path)
    message = str(err.value)
    assert message.startswith(f"{path}:1: prompts[0]: not supported by assay's promptfoo reader: ")
    assert f"{tmp_path / 'prompt.json'}:3: not JSON" in message and "_conversation" in message
