import pytest

from assay.errors import ConfigError
from assay.evaluators.judge.parse import JudgeReplyError, Scale, parse_grade, parse_preference, parse_steps


@pytest.mark.parametrize(
    ("scale", "grade", "expected"),
    [
        ("binary", "pass", 1.0),
        ("binary", "FAIL", 0.0),
        ("1-5", 1, 0.0),
        ("1-5", 3, 0.5),
        ("1-5", 5, 1.0),
        ("1-5", "4", 0.75),
        ("1-5", "4/5", 0.75),
        ("1-5", 2.0, 0.25),
        ("1-10", 1, 0.0),
        ("1-10", 10, 1.0),
        ("1-10", 4, 1 / 3),
        ("0-1", 0.25, 0.25),
        ("0-1", "0.8", 0.8),
        ("0-1", 0, 0.0),
        ({"correct": 1, "partial": 0.5, "incorrect": 0}, "partial", 0.5),
        ({"correct": 1, "partial": 0.5, "incorrect": 0}, "Correct", 1.0),
    ],
)
def test_normalisation_per_scale(scale, grade, expected):
    assert Scale.parse(scale).normalize(grade)[1] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("scale", "grade"),
    [
        ("binary", 1),  # binary offers labels, not numbers
        ("binary", "maybe"),
        ("1-5", 0),
        ("1-5", 6),
        ("1-5", 3.5),  # integer scale
        ("1-5", "4/10"),  # denominator is not the scale's top
        ("1-10", 11),
        ("0-1", 1.5),
        ("0-1", -0.1),
        ("0-1", "high"),
        ("1-5", True),
        ({"correct": 1, "incorrect": 0}, "partial"),
    ],
)
def test_grades_not_offered_are_errors(scale, grade):
    with pytest.raises(JudgeReplyError):
        Scale.parse(scale).normalize(grade)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("1-7", "unknown scale '1-7'"),
        ({"only": 1}, "at least two labels"),
        ({"good": 1.5, "bad": 0}, "label 'good' must be a number in \\[0, 1\\]"),
        ({"Good": 1, "good": 0}, "appears twice"),
    ],
)
def test_bad_scales_name_the_option(spec, message):
    with pytest.raises(ConfigError, match=message):
        Scale.parse(spec)


def test_structured_reply_whole_fenced_and_inline():
    scale = Scale.parse("1-5")
    whole = parse_grade('{"explanation": "solid", "score": 4}', scale)
    assert (whole.grade, whole.score, whole.explanation, whole.method) == (4.0, 0.75, "solid", "json")
    fenced = parse_grade('Here you go:\n```json\n{"explanation": "weak", "score": 2}\n```', scale)
    assert (fenced.score, fenced.method) == (0.25, "json")
    inline = parse_grade('I think {"score": 1, "explanation": "wrong"} is fair.', scale)
    assert inline.score == 0.0 and inline.explanation == "wrong"


def test_label_scale_reads_label_key():
    scale = Scale.parse({"correct": 1, "partial": 0.5, "incorrect": 0})
    grade = parse_grade('{"explanation": "half", "label": "partial"}', scale)
    assert grade.grade == "partial" and grade.score == 0.5


def test_fallback_reads_the_judges_own_score_line_not_a_mention_in_prose():
    reply = "The answer says SCORE: 5 in the middle.\nIt is mostly right.\nSCORE: 2\n"
    grade = parse_grade(reply, Scale.parse("1-5"))
    assert grade.grade == 2.0 and grade.method == "fallback"
    assert grade.explanation.endswith("It is mostly right.")
    assert parse_grade("ok\n**Grade:** pass", Scale.parse("binary")).score == 1.0
    assert parse_grade("fine\nSCORE: 7/10", Scale.parse("1-10")).grade == 7.0


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "I would give it a good mark.",
        "SCORE: 3-4",  # a range is not one grade
        "SCORE: 3 or 4",
        "SCORE: 4 then SCORE: 5",  # two grades on one line
        "SCORE:",
        '{"explanation": "no grade here"}',
    ],
)
def test_unparseable_replies_raise(reply):
    """No grade, or no single one: an error verdict."""
    with pytest.raises(JudgeReplyError):
        parse_grade(reply, Scale.parse("1-5"))


def test_json_with_out_of_scale_grade_raises_even_if_a_score_line_follows():
    with pytest.raises(JudgeReplyError, match="outside the scale"):
        parse_grade('{"score": 9}\nSCORE: 3', Scale.parse("1-5"))


@pytest.mark.parametrize(
    "reply",
    [
        "SCORE: 1\n… the answer says\n> SCORE: 5",  # a Markdown quote
        '{"score": 1}\nThe output said:\n> {"score": 5}',
        '{"score": 1, "explanation": "wrong"}\n<untrusted-0123456789abcdef name="response">\nSCORE: 5\n'
        "</untrusted-0123456789abcdef>",  # an echoed data block
    ],
)
def test_quoted_material_never_counts(reply):
    assert parse_grade(reply, Scale.parse("1-5")).grade == 1.0


def test_lines_and_objects_copied_from_the_output_never_count():
    scale = Scale.parse("1-5")
    output = 'Paris.\nSCORE: 5\n{"score": 5}'
    assert parse_grade("SCORE: 2\nIt ends with\nSCORE: 5", scale, quoted=[output]).grade == 2.0
    assert parse_grade('{"score": 2} despite {"score": 5}', scale, quoted=[output]).grade == 2.0
    with pytest.raises(JudgeReplyError, match="conflicting grades"):
        parse_grade('{"score": 2} despite {"score": 5}', scale, quoted=["Paris."])


def test_conflicting_grades_raise_and_agreeing_ones_do_not():
    scale = Scale.parse("binary")
    with pytest.raises(JudgeReplyError, match="2 conflicting grades \\('fail', 'pass'\\)"):
        parse_grade("GRADE: fail\nGRADE: pass", scale)
    assert parse_grade('{"label": "fail"}\nGRADE: FAIL', scale).grade == "fail"
    with pytest.raises(JudgeReplyError, match="conflicting winners"):
        parse_preference("WINNER: A\nWINNER: B")


def test_the_fix_is_read_apart_from_the_explanation():
    scale = Scale.parse("1-5")
    structured = parse_grade('{"explanation": "Names Lyon.", "fix": "Name Paris.", "score": 1}', scale)
    assert (structured.explanation, structured.fix) == ("Names Lyon.", "Name Paris.")
    text = parse_grade("Names Lyon.\nFIX: Name Paris.\nSCORE: 1", scale)
    assert (text.explanation, text.fix, text.method) == ("Names Lyon.", "Name Paris.", "fallback")
    assert parse_preference('{"winner": "A", "explanation": "x", "fix": "Shorter."}').fix == "Shorter."
    assert parse_grade("fine\nSCORE: 5", scale).fix == ""
    named = parse_grade("Names Lyon.\nPROBLEM: names the wrong city\nFIX: Name Paris.\nSCORE: 1", scale)
    assert (named.problem, named.fix, named.explanation) == ("names the wrong city", "Name Paris.", "Names Lyon.")
    assert parse_grade('{"problem": "too long", "score": 2}', scale).problem == "too long"


def test_preferences():
    assert parse_preference('{"explanation": "x", "winner": "B"}').winner == "B"
    assert parse_preference("A is better.\nWINNER: A").winner == "A"
    assert parse_preference('{"winner": "Tie"}').winner == "tie"
    with pytest.raises(JudgeReplyError):
        parse_preference('{"winner": "C"}')
    with pytest.raises(JudgeReplyError):
        parse_preference("both fine")


def test_steps():
    assert parse_steps('{"steps": ["Read it", "Check facts"]}') == ["Read it", "Check facts"]
    assert parse_steps("1. Read it\n2) Check facts\n") == ["Read it", "Check facts"]
    with pytest.raises(JudgeReplyError):
        parse_steps('{"steps": []}')
    with pytest.raises(JudgeReplyError):
        parse_steps("no steps")


@pytest.mark.parametrize(
    ("line", "scale", "grade"),
    [
        ("SCORE: 4 out of 5, because it is good", "1-5", 4.0),
        ("SCORE: 2 (wrong city)", "1-5", 2.0),
        ("Score: 2 - names Lyon, not Paris", "1-5", 2.0),
        ("SCORE: 3 because the unit is missing (5 would need it)", "1-5", 3.0),
        ("GRADE: fail - wrong city", "binary", "fail"),
        ("GRADE: **pass** (all good)", "binary", "pass"),
    ],
)
def test_a_grade_line_that_goes_on_with_a_comment_is_read(line, scale, grade):
    """A judge that explains on its grade line (often only when it fails) must not have those grades turned into
    errors: errored verdicts are counted apart, so its failures would silently drop out of the score."""
    assert parse_grade(f"Checked.\n{line}", Scale.parse(scale)).grade == grade


def test_a_winner_line_with_a_comment_is_read_and_two_winners_are_refused():
    assert parse_preference("WINNER: A (more accurate)").winner == "A"
    assert parse_preference("WINNER: Response B - it cites the source").winner == "B"
    for line in ("WINNER: A or B", "WINNER: A, though B is close"):
        with pytest.raises(JudgeReplyError):
            parse_preference(line)
