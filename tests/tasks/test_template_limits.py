"""A sandboxed template cannot hang or exhaust the run: what it may build is bounded, with the template line named."""

from __future__ import annotations

import pytest

from assay.errors import ConfigError
from assay.tasks import load_task


def task_with(template: str) -> dict:
    return {
        "name": "t",
        "dataset": {"rows": [{"q": "What?", "a": "x"}]},
        "fields": {"input": "q", "target": "a"},
        "template": template,
        "evaluators": ["exact_match"],
    }


@pytest.mark.parametrize(
    ("template", "line", "what"),
    [
        ("{{ q }}\n{{ 'a' * 10**10 }}", 2, "a repetition with a length of 10,000,000,000"),
        ("{{ [q] * 10**9 }}", 1, "a repetition"),
        ("{{ 10 ** (10 ** 10) }}", 1, "a power"),
        ("{{ q }}\n\n{{ q.ljust(10**10) }}", 3, "a padded string"),
        ("{{ '%999999999d' % 1 }}", 1, "a formatted field"),
        ("{{ '{:>999999999}'.format(1) }}", 1, "a formatted field"),
        ("{{ q | center(10**10) }}", 1, "a center filter"),
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", 1, "loops run more"),
        (
            "{% set ns = namespace(s='ab') %}\n{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
            2,
            "a concatenation",
        ),
    ],
)
def test_a_template_that_builds_too_much_is_a_task_error_naming_the_line(template: str, line: int, what: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_task(task_with(template))
    message = str(info.value)
    assert f"template limit exceeded on template line {line}" in message, message
    assert what in message


def test_ordinary_templates_are_untouched() -> None:
    template = (
        "{% for w in q.split() %}[{{ loop.index }}:{{ w }}]{% endfor %} {{ '-' * 3 }} {{ '%5s' % q }}"
        " {{ '{:>6}'.format('x') }} {{ 2 ** 10 }} {{ range(3) | list }}"
    )
    task = load_task(task_with(template))
    sample = task.samples()[0]
    text = task.build_request(sample, 0).messages[-1]["content"]
    assert text == "[1:What?] --- What?      x 1024 [0, 1, 2]"


def test_a_template_pickles_as_its_source_and_keeps_its_limits() -> None:
    """Ray workers get a task's prompt pickled: compiled again from its source, with the same sandbox and limits."""
    import pickle

    from assay.tasks.template import TemplateLimitError, compile_template

    template = compile_template("{% for x in xs %}{{ x }},{% endfor %}{{ q }}", "t.yaml:3: template")
    copy = pickle.loads(pickle.dumps(template))
    assert (copy.label, copy.source, copy.variables) == (template.label, template.source, template.variables)
    assert copy.render({"xs": [1, 2], "q": "?"}) == template.render({"xs": [1, 2], "q": "?"}) == "1,2,?"
    loop = pickle.loads(pickle.dumps(compile_template("{% for x in xs %}{% endfor %}", "t.yaml:4: template")))
    with pytest.raises(TemplateLimitError, match="loops run more than 1,000,000 times"):
        loop.render({"xs": range(10**7)})
