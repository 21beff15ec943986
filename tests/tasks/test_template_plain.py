"""Plain templates (literal text and ``{{ name }}`` alone) render without Jinja, to exactly Jinja's text, and leave
every error to Jinja."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import jinja2
import pytest

from assay.tasks.template import MAX_OUTPUT, Plain, Template, TemplateLimitError, compile_template, environment


class Shouty(str):
    """A str subclass with its own ``__str__``: Jinja calls ``str``, and so must the fast path."""

    def __str__(self) -> str:
        return self.upper()


class Broken:
    def __str__(self) -> str:
        raise ValueError("no text for you")


VALUES: list[Any] = [
    "plain",
    "",
    "Zürich 東京 Москва 🙂 \u0301e",
    "line\r\nbreak\rcr\n",
    "{{ not a template }} {% if %} <b>&amp;</b> 'quoted' \"double\"",
    None,
    True,
    False,
    0,
    -17,
    10**30,
    1.0,
    0.1 + 0.2,
    1e-7,
    1e100,
    math.inf,
    math.nan,
    Decimal("1.50"),
    [1, "a", None],
    {"k": "v", "n": [1, 2]},
    ("t", 1),
    Shouty("loud"),
    b"bytes",
]

PLAIN = [
    "{{ x }}",
    "Frage: {{ x }}",
    "{{ x }} and {{ y }}{{ x }}",
    "A\r\nB {{ x }}\rC\n",  # the lexer turns \r\n and \r into \n
    "{{- x -}}   \n  {{ y }}",  # whitespace control trims the literal text
    "{# a comment #}{{ x }}{# another #}",
    "{% raw %}{{ x }}{% endraw %} then {{ x }}",
    "trailing newline kept {{ x }}\n\n",
    "",
    "only literal text, ümlaut",
    "{{ input }} / {{ target }} / {{ doc }}",
    "{{ range }}",  # a global, as Jinja resolves it
]

NOT_PLAIN = [
    "{{ x | upper }}",
    "{{ x.y }}",
    "{{ x['y'] }}",
    "{{ 'const' }}",
    "{{ x ~ y }}",
    "{% if x %}{{ x }}{% endif %}",
    "{% for i in x %}{{ i }}{% endfor %}",
    "{{ self }}",
    "{{ none }}",
    "{% set x = 1 %}{{ x }}",
]


def compiled(source: str) -> Template:
    return compile_template(source, "test: template")


def jinja(template: Template, context: dict[str, Any]) -> str:
    """What the Jinja path renders (the plain path is bypassed)."""
    return template._render_jinja(context)


def outcome(render: Any, context: dict[str, Any]) -> tuple[str, str]:
    try:
        return "ok", render(context)
    except Exception as err:
        return type(err).__name__, str(err)


@pytest.mark.parametrize("source", PLAIN)
def test_plain_templates_are_recognised_and_render_as_jinja_does(source: str) -> None:
    template = compiled(source)
    assert template.plain is not None
    for x in VALUES:
        for y in (VALUES[0], VALUES[2], None):
            context = {"x": x, "y": y, "input": x, "target": [x], "doc": {"x": x}}
            assert template.render(context) == jinja(template, context)
            assert type(template.render(context)) is str


@pytest.mark.parametrize("source", NOT_PLAIN)
def test_other_templates_take_the_jinja_path(source: str) -> None:
    assert compiled(source).plain is None


def test_a_context_value_shadows_a_global_as_in_jinja() -> None:
    template = compiled("{{ range }}|{{ dict }}")
    assert template.plain is not None
    context = {"range": "my range"}
    assert template.render(context) == jinja(template, context) == f"my range|{template.globals['dict']}"


@pytest.mark.parametrize(
    "context",
    [
        {},  # x undefined: StrictUndefined raises
        {"y": 1},
        {"x": Broken()},  # str() raises
        {"x": jinja2.StrictUndefined(name="x")},  # an undefined value put in the context
        {"x": "a" * (MAX_OUTPUT + 1)},  # past the output limit
    ],
    ids=["missing", "other-name", "str-raises", "undefined-value", "too-long"],
)
def test_errors_are_jinjas_own(context: dict[str, Any]) -> None:
    template = compiled("say {{ x }}")
    assert template.plain is not None
    got, expected = outcome(template.render, context), outcome(lambda c: jinja(template, c), context)
    assert got == expected and got[0] != "ok"


def test_the_output_limit_is_the_same_error_at_the_edge() -> None:
    template = compiled("{{ x }}!")
    at_limit = {"x": "a" * (MAX_OUTPUT - 1)}
    assert template.render(at_limit) == jinja(template, at_limit)
    with pytest.raises(TemplateLimitError, match="longer than"):
        template.render({"x": "a" * MAX_OUTPUT})


def test_jinjas_missing_sentinel_in_the_context_is_left_to_jinja() -> None:
    from jinja2.utils import missing

    template = compiled("{{ x }}")
    assert outcome(template.render, {"x": missing}) == outcome(lambda c: jinja(template, c), {"x": missing})
    assert outcome(template.render, {"x": missing})[0] == "UndefinedError"


def test_a_prompt_that_cannot_fail_renders_and_the_others_are_left_to_the_render() -> None:
    from assay.tasks.prompt import Prompt
    from assay.tasks.sample import Sample

    prompt = Prompt(template=compiled("Q{{ q }} {{ input }}|{{ target }}|{{ doc }}|{{ fewshot }}|{{ metadata }}"))
    fine = [
        Sample(0, "a", {"q": "?", "input": "shadowed"}, input="hi", target=["t", 1], metadata={"m": None}),
        Sample(1, "b", {"q": 3.5}, input=None, target=None),
        Sample(2, "c", {"q": Shouty("x" * 100)}),
    ]
    for sample in fine:
        assert prompt.cannot_fail(sample)
        assert prompt.render(sample, [])[0]["content"]  # what the check vouched for renders
    failing = [
        Sample(3, "d", {"other": 1}),  # q missing
        Sample(4, "e", {"q": Broken()}),
        Sample(5, "f", {"q": "a" * MAX_OUTPUT}),
    ]
    for sample in failing:
        assert not prompt.cannot_fail(sample)
        with pytest.raises(Exception):  # noqa: B017 - each fails its own way; the render raises it
            prompt.render(sample, [])
    system = Prompt(template=compiled("{{ q }}"), system=compiled("be brief"))
    chat = Prompt(messages=(("user", compiled("{{ q }}")),))
    filtered = Prompt(template=compiled("{{ q | upper }}"))
    assert not any(p.cannot_fail(fine[0]) for p in (system, chat, filtered, Prompt()))


def test_an_offline_run_still_refuses_a_row_its_template_cannot_render(tmp_path: Any) -> None:
    import asyncio
    import json

    from assay.errors import DataError
    from assay.models.predictions import PredictionsModel
    from assay.runner.session import RunSettings, execute
    from assay.tasks import load_task

    rows = [{"id": f"s{i}", "q": f"{i}?", "a": str(i)} for i in range(30)]
    del rows[17]["q"]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": r["id"], "prediction": r["a"]}) + "\n" for r in rows))
    config = {"name": "t", "dataset": {"rows": rows}, "fields": {"target": "a"}, "template": "Q: {{ q }}"}
    config["evaluators"] = ["exact_match"]
    settings = RunSettings(output_dir=tmp_path / "runs", progress=False, cache=False)
    with pytest.raises(DataError, match="undefined variable 'q'"):
        asyncio.run(execute([load_task(config)], PredictionsModel(preds), settings))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # nothing written


SCANNED_OR_NOT = [
    *PLAIN,
    *NOT_PLAIN,
    "{{x}}",
    "{{\tx\t}}",
    "{{ x1 }}{{ _y }}",
    "{{ loop }} {{ caller }}",
    "{{{ x }}",
    "{{ x }}}",
    "{ {{ x }} }",
    "{{ true }}",
    "{{ None }}",
    "{{ and }}",
    "{{ x -}}",
    "{{ x }}\r\n",
    "{{\nx\n}}",
    "{{ é }}",
    "a {{ x }} b {{ y }} c\n",
]


@pytest.mark.parametrize("source", SCANNED_OR_NOT)
def test_a_template_recognised_without_jinja_has_the_pieces_of_jinjas_parse(source: str) -> None:
    """Plain.scan (no Jinja) is a strict subset of Plain.of (Jinja's parse): where it answers, it answers the same."""
    scanned = Plain.scan(source)
    if scanned is None:
        return
    parsed = Plain.of(environment().parse(source))
    assert parsed is not None and scanned.pieces == parsed.pieces


def test_simple_templates_are_recognised_without_jinja() -> None:
    assert all(Plain.scan(s) is not None for s in ("", "text", "{{ x }}", "Q: {{ question }}\nA:", "{{x}}{{ y }}"))
    assert all(Plain.scan(s) is None for s in ("{{ x | e }}", "{% if x %}{% endif %}", "{{ true }}", "{ {{ x }}"))


def test_a_scanned_template_reads_globals_and_reports_lines_through_jinja() -> None:
    template = compiled("{{ range }} and {{ x }}")
    assert template.plain is not None and template.variables == {"range", "x"}
    assert template.render({"x": 1}) == f"{template.globals['range']} and 1"
    with pytest.raises(jinja2.UndefinedError, match="'x' is undefined"):
        template.render({})
