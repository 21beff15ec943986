"""Config round trips of the text evaluators and numeric: to_config -> JSON -> from_config gives an equal evaluator."""

import json

import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.registry import from_config

# (name, options, a probe pair whose verdict must survive the round trip)
CONFIGS = [
    ("exact_match", {}, ("Paris", "Paris")),
    (
        "exact_match",
        {"ignore_case": True, "ignore_punctuation": True, "regexes_to_ignore": ["^the "]},
        ("the PARIS!", "paris"),
    ),
    ("fuzzy_match", {}, ("Pari", "Paris")),
    (
        "fuzzy_match",
        {"algorithm": "jaro_winkler", "threshold": 0.95, "ignore_case": True, "strip": True, "ignore_articles": True},
        ("  MARTHA", "marhta"),
    ),
    ("contains", {"substrings": ["a", "b"]}, ("abc", None)),
    ("contains", {"substrings": [r"\d+", "x"], "mode": "any", "regex": True, "ignore_case": True}, ("X", None)),
    ("contains", {"mode": "none"}, ("as an AI", ["as an ai", "sorry"])),
    ("regex", {"pattern": r"\d+"}, ("a1", None)),
    (
        "regex",
        {"pattern": r"answer: (?P<a>\w+)", "mode": "fullmatch", "group": "a", "ignore_case": True, "dotall": True},
        ("ANSWER: B", "b"),
    ),
    ("regex", {"pattern": r"^(\w+)$", "group": 1, "multiline": True, "ignore_whitespace": True}, ("x\nB", "B")),
    ("token_f1", {}, ("Eiffel Tower in Paris", "Eiffel Tower")),
    ("token_f1", {"threshold": 0.9}, ("Eiffel Tower in Paris", "Eiffel Tower")),
    ("numeric", {}, ("so 42", 42)),
    (
        "numeric",
        {
            "policy": "first",
            "decimal": ",",
            "percent_as_fraction": True,
            "times_ten": False,
            "space_groups": False,
            "abs_tol": 0.5,
            "rel_tol": 0.01,
        },
        ("12,5 % und 3", 0.125),
    ),
]


@pytest.mark.parametrize(("name", "options", "probe"), CONFIGS)
def test_round_trip_through_json(name, options, probe):
    ev = evaluators.get(name, **options)
    config = ev.to_config()
    assert config == {"name": name, **options}  # only what differs from the defaults, under the option names
    rebuilt = from_config(json.loads(json.dumps(config)))
    assert rebuilt == ev and type(rebuilt) is type(ev) and rebuilt.options == ev.options
    assert rebuilt.evaluate(*probe).to_dict() == ev.evaluate(*probe).to_dict()


def test_defaults_are_omitted_and_explicit_defaults_compare_equal():
    assert evaluators.get("fuzzy_match", threshold=0.8, algorithm="ratio").to_config() == {"name": "fuzzy_match"}
    assert evaluators.get("numeric", policy="last") == evaluators.get("numeric")
    assert evaluators.get("token_f1", threshold=0.6) != evaluators.get("token_f1")


def test_from_config_reports_bad_options_by_name():
    with pytest.raises(ConfigError, match="fuzzy_match: option 'threshold'"):
        from_config({"name": "fuzzy_match", "threshold": 3})
    with pytest.raises(ConfigError, match="regex: option 'group'"):
        from_config({"name": "regex", "pattern": "a", "group": 1})
