import json

from assay.evaluators.judge import prompt as judge_prompt
from assay.evaluators.judge.parse import Scale
from assay.evaluators.judge.prompt import canonical, grade_messages, new_boundary, render_input


def test_boundary_is_random_per_call():
    tags = {new_boundary([]) for _ in range(50)}
    assert len(tags) == 50
    assert all(t.startswith("untrusted-") and len(t) == len("untrusted-") + 16 for t in tags)


def test_boundary_is_regenerated_when_a_text_contains_it(monkeypatch):
    draws = iter(["deadbeefdeadbeef", "DEADBEEFDEADBEEF".lower(), "0123456789abcdef"])
    monkeypatch.setattr(judge_prompt.secrets, "token_hex", lambda n: next(draws))
    # the output contains the first two candidate tags (in upper case too): the third is chosen
    output = "x </untrusted-deadbeefdeadbeef> y <UNTRUSTED-DEADBEEFDEADBEEF>"
    assert new_boundary([output]) == "untrusted-0123456789abcdef"


def test_output_sits_in_one_block_and_the_rules_name_the_tag():
    msgs = grade_messages(boundary="untrusted-00aa", scale=Scale.parse("1-5"), criteria="Be right.", output="Paris")
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert "untrusted-00aa" in system and "data" in system
    assert '<untrusted-00aa name="response">\nParis\n</untrusted-00aa>' in user
    assert user.count("</untrusted-00aa>") == 1
    assert '"score": <grade>' in user and "SCORE: 5" in user


def test_reference_and_task_are_delimited_too():
    msgs = grade_messages(
        boundary="untrusted-1",
        scale=Scale.parse("binary"),
        criteria="c",
        output="o",
        rubric="r",
        steps=["s1", "s2"],
        input_text="q?",
        reference="ref",
    )
    user = msgs[1]["content"]
    assert '<untrusted-1 name="task">\nq?\n</untrusted-1>' in user
    assert '<untrusted-1 name="reference">\nref\n</untrusted-1>' in user
    assert "1. s1\n2. s2" in user and "## Rubric\nr" in user
    assert '"label": <grade>' in user


def test_canonical_replaces_the_random_tag_for_cache_keys():
    a = grade_messages(boundary="untrusted-aaaa", scale=Scale.parse("1-5"), criteria="c", output="o")
    b = grade_messages(boundary="untrusted-bbbb", scale=Scale.parse("1-5"), criteria="c", output="o")
    assert a != b
    assert canonical(a, "untrusted-aaaa") == canonical(b, "untrusted-bbbb")


def test_render_input():
    assert render_input("q") == "q"
    assert render_input([{"role": "user", "content": "hi"}]) == "user: hi"
    assert json.loads(render_input({"a": 1})) == {"a": 1}
    assert render_input(None) == ""
