"""The examples run against the scripted server: per example, what the server answers (the model under test by its
prompt, the grader by the output it grades), and per verdict how promptfoo's pass and score follow from its rules
(``why``; the numbers themselves are in ``expected/<example>.json``, written by real promptfoo 0.123.1 through
``record.py``). Replies are chosen so that both passing and failing tests occur.

Keys are ``PROVIDER|prompt-K|test-N`` (see support.py). In ``why``, "score = mean(a, b)" is promptfoo's
runAssertions: the weighted mean of the assertion scores (weight 1 unless given); a test passes when every assertion
passes, or, with a test threshold, when the mean reaches it.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.importers.promptfoo.examples.support import Example, between, body_text, grading_kind, rubric, undelimited


def last_user(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return undelimited(str(message.get("content")))
    return ""


def graded_output(body: dict[str, Any]) -> str:
    """The output an llm-rubric grading request grades (between <Output> and </Output> of the last user message;
    the system message's examples have their own)."""
    return between(last_user(body), "<Output>", "</Output>")


# -- csv-metadata: tests from CSV with __expected1/__expected2 shorthands and __metadata columns --------------------


def csv_metadata(body: dict[str, Any]) -> str:
    if grading_kind(body) == "llm-rubric":
        return rubric("temperature" not in graded_output(body))  # the grader fails only the climate answer
    topic = last_user(body).removeprefix("Tell me about ")
    return {
        "machine learning": "Machine learning fits an algorithm to data.",
        "quantum physics": "Quantum physics studies the very small.",  # 'Quantum': contains is case-sensitive
        "climate change": "Climate change raises the mean temperature.",
    }[topic]


CSV_METADATA = Example(
    "csv-metadata",
    csv_metadata,
    why={
        "openai:gpt-4.1|prompt-1|test-1": "contains 'algorithm' 1, rubric passes 1: mean 1, pass",
        "openai:gpt-4.1|prompt-1|test-2": "contains 'quantum' 0 (the reply has 'Quantum'), rubric 1: 0.5, fail",
        "openai:gpt-4.1|prompt-1|test-3": "contains 'temperature' 1, rubric 0 (grader fails it): 0.5, fail",
    },
)


# -- config-csv-metadata: the same with __config:__expected<N>:threshold columns -----------------------------------


def config_csv_metadata(body: dict[str, Any]) -> str:
    if grading_kind(body) == "llm-rubric":
        out = graded_output(body)
        score = {"algorithm": 0.85, "Quantum": 0.7, "temperature": 0.675}
        return rubric(next(v for k, v in score.items() if k in out))
    topic = last_user(body).removeprefix("Tell me about ")
    return {
        "machine learning": "Machine learning fits an algorithm to data.",
        "quantum physics": "Quantum physics studies the very small.",
        "climate change": "Climate change raises the mean temperature.",
    }[topic]


CONFIG_CSV_METADATA = Example(
    "config-csv-metadata",
    config_csv_metadata,
    why={
        "openai:gpt-5.4-mini|prompt-1|test-1": "contains 1 (threshold 0.9), rubric 0.85 >= 0.8: mean 0.925, pass",
        "openai:gpt-5.4-mini|prompt-1|test-2": "contains 'quantum' 0 < 0.85 fails; rubric 0.7 < 0.75 fails: "
        "mean 0.35, fail",
        "openai:gpt-5.4-mini|prompt-1|test-3": "contains 1 >= 0.7, rubric 0.675 >= 0.675 passes: mean 0.8375, pass",
    },
)


# -- json-output: is-json with a schema, javascript, test transform, per-assertion transform ------------------------


def json_output(body: dict[str, Any]) -> str:
    item = last_user(body).rsplit(": ", 1)[1]
    return {
        "Banana": '{"color": "yellow", "countries": ["Ecuador", "Philippines"]}',
        "Passion fruit": '{"color": "purple", "countries": ["Brazil", "Paraguay"]}',
    }[item]


JSON_OUTPUT = Example(
    "json-output",
    json_output,
    why={
        "openai:gpt-3.5-turbo|prompt-1|test-1": "is-json 1, JSON.parse(output).color yellow and Ecuador: 1, pass",
        "openai:gpt-3.5-turbo|prompt-1|test-2": "transform JSON.parse: is-json (schema: color string, countries "
        "string array) 1, javascript purple+Brazil 1, contains-any on output.countries (Brazil, Paraguay) finds none "
        "of Guatemala/Costa Rica/India/Indonesia 0: 2/3, fail",
    },
)


# -- simple-csv: two prompts from a file, a custom nunjucks filter (load), icontains from __expected ---------------

SIMPLE_CSV = {
    ("Rephrase", "French", "Hello world"): "Bonjour le monde",
    ("Rephrase", "French", "I'm hungry"): "J'ai faim",
    ("Rephrase", "Pirate", "Hello world"): "Ahoy, world!",
    ("Rephrase", "Pirate", "I'm hungry"): "I be starvin', matey",  # no 'grub'
    ("Translate", "French", "Hello world"): "Salut tout le monde",  # no 'bonjour'
    ("Translate", "French", "I'm hungry"): "J'ai FAIM",
    ("Translate", "Pirate", "Hello world"): "AHOY there",
    ("Translate", "Pirate", "I'm hungry"): "Where be me grub?",
}


def simple_csv(body: dict[str, Any]) -> str:
    text = last_user(body)
    verb = "Rephrase" if "Rephrase the following" in text else "Translate"
    language = "French" if "French" in text else "Pirate"
    said = "Hello world" if '"Hello world"' in text else "I'm hungry"
    return SIMPLE_CSV[(verb, language, said)]


SIMPLE_CSV_EXAMPLE = Example(
    "simple-csv",
    simple_csv,  # prompts.txt's `{{ (style_config | load).tone }}`: promptfoo's load filter (the promptfoo dialect)
    why={
        "openai:gpt-3.5-turbo|prompt-1|test-1": "icontains 'bonjour' in 'Bonjour le monde': 1, pass",
        "openai:gpt-3.5-turbo|prompt-1|test-2": "icontains 'faim' in \"J'ai faim\": 1, pass",
        "openai:gpt-3.5-turbo|prompt-1|test-3": "icontains 'Ahoy' in 'Ahoy, world!': 1, pass",
        "openai:gpt-3.5-turbo|prompt-1|test-4": "icontains 'grub' not in \"I be starvin', matey\": 0, fail",
        "openai:gpt-3.5-turbo|prompt-2|test-1": "icontains 'bonjour' not in 'Salut tout le monde': 0, fail",
        "openai:gpt-3.5-turbo|prompt-2|test-2": "icontains 'faim' in \"J'ai FAIM\" (case folded): 1, pass",
        "openai:gpt-3.5-turbo|prompt-2|test-3": "icontains 'Ahoy' in 'AHOY there': 1, pass",
        "openai:gpt-3.5-turbo|prompt-2|test-4": "icontains 'grub' in 'Where be me grub?': 1, pass",
    },
)


# -- python-assert-external: a python assertion from a file (get_assert) ------------------------------------------


def python_external(body: dict[str, Any]) -> str:
    topic = last_user(body).removeprefix("Tell me about ").removesuffix(" in three words")
    return {
        "yellow fruits": "Bananas, lemons, pineapples",
        "fruits high in potassium": "bananas, avocados, apricots",
        "fruits that are long and skinny": "Plantains, okra, cucumbers",
        "fruits that smell bad": "Durian, jackfruit, noni",
    }[topic]


PYTHON_ASSERT_EXTERNAL = Example(
    "python-assert-external",
    python_external,
    why={
        "openai:gpt-4-1106-preview|prompt-1|test-1": "'bananas' in output.lower() -> True: 1, pass",
        "openai:gpt-4-1106-preview|prompt-1|test-2": "'bananas' in output.lower() -> True: 1, pass",
        "openai:gpt-4-1106-preview|prompt-1|test-3": "no bananas -> False: 0, fail",
        "openai:gpt-4-1106-preview|prompt-1|test-4": "no bananas -> False: 0, fail",
    },
)


# -- python-assert (inline): an expression, and a function body returning a GradingResult dict ----------------------


def python_inline(body: dict[str, Any]) -> str:
    topic = last_user(body).removeprefix("Write a tweet about ")
    return {"bananas": "Nothing beats bananas in the morning! #fruit", "potatoes": "Expected output"}[topic]


PYTHON_ASSERT_INLINE = Example(
    "python-assert",
    python_inline,
    config="promptfooconfig-inline.yaml",
    why={
        "openai:gpt-4.1-mini|prompt-1|test-1": "context['vars']['topic'] in output -> True: 1, pass",
        "openai:gpt-4.1-mini|prompt-1|test-2": "output == 'Expected output' -> {pass: True, score: 0.5}: 0.5, pass",
    },
)


# -- eval-custom-grader-csv: javascript:file://customAssertion.ts from a CSV column --------------------------------


def custom_grader_csv(body: dict[str, Any]) -> str:
    text = last_user(body)
    return {
        "Rephrase this in French: Hello world": "Bonjour le monde",
        "Rephrase this in French: I'm hungry": "J'ai faim",
        "Rephrase this like a pirate: Hello world": "Ahoy, world",
        "Rephrase this like a pirate: I'm hungry": "Arr, me belly be empty",
    }[text]


EVAL_CUSTOM_GRADER_CSV = Example(
    "eval-custom-grader-csv",
    custom_grader_csv,
    why={  # the function returns true when the lower-cased output has 'ahoy' or 'bonjour'
        "openai:gpt-4.1-mini|prompt-1|test-1": "'bonjour le monde' has bonjour: 1, pass",
        "openai:gpt-4.1-mini|prompt-1|test-2": '"j\'ai faim" has neither: 0, fail',
        "openai:gpt-4.1-mini|prompt-1|test-3": "'bonjour le monde': 1, pass",
        "openai:gpt-4.1-mini|prompt-1|test-4": '"j\'ai faim": 0, fail',
        "openai:gpt-4.1-mini|prompt-2|test-1": "'ahoy, world' has ahoy: 1, pass",
        "openai:gpt-4.1-mini|prompt-2|test-2": "'arr, me belly be empty' has neither: 0, fail",
        "openai:gpt-4.1-mini|prompt-2|test-3": "'ahoy, world': 1, pass",
        "openai:gpt-4.1-mini|prompt-2|test-4": "'arr, me belly be empty': 0, fail",
    },
)


# -- multishot: chat prompts from JSON files (system + user), no assertions ----------------------------------------


def multishot(body: dict[str, Any]) -> str:
    return "The New York Yankees" if "sports historian" in body_text(body) else "The Yankees won."


MULTISHOT = Example(
    "multishot",
    multishot,
    why={
        f"openai:gpt-4o-mini|prompt-{p}|test-{t}": "no assertions: promptfoo passes the test, score 1"
        for p in (1, 2)
        for t in (1, 2, 3, 4)
    },
)


# -- csv-prompts: prompts (and a chat prompt) from a CSV file with labels, echo provider ----------------------------

CSV_PROMPTS = Example(
    "csv-prompts",
    lambda body: "unused: echo answers",
    why={
        f"echo|prompt-{p}|test-{t}": "no assertions: pass, score 1 (echo returns the rendered prompt)"
        for p in range(1, 6)
        for t in (1, 2, 3)
    },
)


# -- getting-started: two prompts x two providers (a reasoning model), contains / icontains --------------------------

GETTING_STARTED = {
    ("gpt-4.1", "Convert", "Hello world"): "Bonjour le monde",
    ("gpt-4.1", "Convert", "Where is the library?"): "¿DÓNDE ESTÁ LA BIBLIOTECA?",
    ("gpt-4.1", "Translate", "Hello world"): "bonjour le monde",
    ("gpt-4.1", "Translate", "Where is the library?"): "¿Dónde está la biblioteca?",
    ("o4-mini", "Convert", "Hello world"): "Bonjour le monde !",
    ("o4-mini", "Convert", "Where is the library?"): "¿Dónde queda la biblioteca?",
    ("o4-mini", "Translate", "Hello world"): "Salut le monde",
    ("o4-mini", "Translate", "Where is the library?"): "Dónde está la biblioteca, por favor",
}


def getting_started(body: dict[str, Any]) -> str:
    text = last_user(body)
    return GETTING_STARTED[(body["model"], text.split()[0], text.split(": ", 1)[1])]


GETTING_STARTED_EXAMPLE = Example(
    "getting-started",
    getting_started,
    why={
        "openai:gpt-4.1|prompt-1|test-1": "contains 'Bonjour le monde': 1, pass",
        "openai:gpt-4.1|prompt-1|test-2": "icontains 'Dónde está la biblioteca' in upper case (JS toLowerCase folds "
        "Ó): 1, pass",
        "openai:gpt-4.1|prompt-2|test-1": "contains is case-sensitive, 'bonjour le monde': 0, fail",
        "openai:gpt-4.1|prompt-2|test-2": "icontains: 1, pass",
        "openai:o4-mini|prompt-1|test-1": "contains 'Bonjour le monde' in 'Bonjour le monde !': 1, pass",
        "openai:o4-mini|prompt-1|test-2": "'Dónde queda la biblioteca': 0, fail",
        "openai:o4-mini|prompt-2|test-1": "'Salut le monde': 0, fail",
        "openai:o4-mini|prompt-2|test-2": "icontains in 'Dónde está la biblioteca, por favor': 1, pass",
    },
)


# -- simple-test: equals, icontains, is-json, javascript, python (a number), similar, llm-rubric, $ref ----------------

HELLO = "Ahoy, world! " + "Arr! " * 80  # 413 characters: python's max(0, len(output) - 300) is 113
SIMPLE_TEST = {
    "Yes": ("Yarr", "Aye"),
    "I'm hungry": ("Arr, I be needin' some grub!", "Me belly be rumblin'"),
    "Output the story of your life in JSON": ('{"life": "sailed the seven seas"}', "I sailed the seas"),
    "Hello world": (HELLO, "Hello, world"),
    "The quick brown fox jumps over the lazy dog": ("Arrr, the quick fox be leapin'", "The fox jumped, arrr"),
}


def simple_test(body: dict[str, Any]) -> str:
    if grading_kind(body) == "llm-rubric":
        return rubric(graded_output(body).startswith("Arrr"))
    text = last_user(body)
    said = text.split(": ", 1)[1]
    return SIMPLE_TEST[said][0 if text.startswith("Rephrase") else 1]


SIMPLE_TEST_EXAMPLE = Example(
    "simple-test",
    simple_test,
    slow=True,
    why={
        "openai:gpt-4.1-mini|prompt-1|test-1": "equals 'Yarr': 1, pass (YAML 1.2: body Yes is the text 'Yes')",
        "openai:gpt-4.1-mini|prompt-1|test-2": "icontains 'grub': 1, pass",
        "openai:gpt-4.1-mini|prompt-1|test-3": "is-json on a JSON object: 1, pass",
        "openai:gpt-4.1-mini|prompt-1|test-4": "javascript startsWith('Ahoy') 1, python returns 113 (a number: its "
        "own score, passing when > 0), similar to 'Ahoy, world' by the server's letter-count embeddings (promptfoo "
        "embeds with text-embedding-3-large at OPENAI_BASE_URL): mean of the three",
        "openai:gpt-4.1-mini|prompt-1|test-5": "rubric passes (starts with Arrr) 1, icontains 'arrr' 1: 1, pass",
        "openai:gpt-4.1-mini|prompt-2|test-1": "equals 'Yarr' on 'Aye': 0, fail",
        "openai:gpt-4.1-mini|prompt-2|test-2": "no 'grub': 0, fail",
        "openai:gpt-4.1-mini|prompt-2|test-3": "'I sailed the seas' is not JSON: 0, fail",
        "openai:gpt-4.1-mini|prompt-2|test-4": "startsWith('Ahoy') 0, python max(0, 12 - 300) = 0 (fails), similar "
        "by letter counts: mean, fail",
        "openai:gpt-4.1-mini|prompt-2|test-5": "rubric fails (does not start with Arrr) 0, icontains 'arrr' 1: 0.5, "
        "fail",
    },
)


# -- g-eval: one criterion per test, then four averaged ---------------------------------------------------------------

GEVAL_SCORES = {"Coherence": 8, "Consistency": 5, "Fluency": 9, "Relevance": 7}


def g_eval(body: dict[str, Any]) -> str:
    kind = grading_kind(body)
    text = body_text(body)
    criterion = next((c for c in GEVAL_SCORES if f"{c} - " in text), None)
    if kind == "geval-steps":
        return json.dumps({"steps": [f"Read the reply for {criterion}", "Rate it"]})
    if kind == "geval":
        return json.dumps({"score": GEVAL_SCORES[str(criterion)], "reason": f"scripted {criterion}"})
    return "I am fine, thank you! How can I help you today?"


G_EVAL = Example(
    "g-eval",
    g_eval,
    why={  # g-eval: the grader's score / 10, passing at >= 0.7 (the default threshold)
        "openai:gpt-4.1-mini|prompt-1|test-1": "Coherence 8/10 = 0.8 >= 0.7: pass",
        "openai:gpt-4.1-mini|prompt-1|test-2": "Consistency 5/10 = 0.5 < 0.7: fail",
        "openai:gpt-4.1-mini|prompt-1|test-3": "Fluency 9/10 = 0.9: pass",
        "openai:gpt-4.1-mini|prompt-1|test-4": "Relevance 7/10 = 0.7 >= 0.7: pass",
        "openai:gpt-4.1-mini|prompt-1|test-5": "four criteria graded one by one, their mean (0.8 + 0.5 + 0.9 + 0.7) "
        "/ 4 = 0.725 >= 0.7: pass",
    },
)


# -- eval-self-grading / self-grading: defaultTest llm-rubric + a javascript expression that returns a score -------

AI_WORDS = "As an AI chat assistant"


def self_grading_reply(prompt: int, name: str) -> str:
    """The reply for prompt 1 or 2 and the asker's name: its length decides the javascript score, an 'As an AI'
    confession fails the rubric."""
    size = {"Bob": 60, "Jane": 550, "Ben": 1200, "Dave": 100, "Jim": 190, "Alice": 400, "Sophie": 80, "Jessie": 1000,
            "Kim": 145, "Emily": 300}[name] + (0 if prompt == 1 else 45)  # fmt: skip
    head = (
        f"{AI_WORDS}, hi {name}! "
        if (prompt == 2) == (name in ("Bob", "Ben", "Jim", "Kim", "Emily"))
        else f"Hi {name}! "
    )
    return (head + "Our shoes are great for walking. " * 40)[:size]


def self_grading(body: dict[str, Any]) -> str:
    if grading_kind(body) == "llm-rubric":
        return rubric(AI_WORDS not in graded_output(body))
    text = last_user(body)
    name = text.split("question")[1].split(": ")[1]
    return self_grading_reply(2 if "rep for a shoe company" in body_text(body) else 1, name)


def _shorter(size: int) -> float:
    return max(0.0, min(1.0, 1 - (size - 100) / 900))


def _self_grading_why(provider: str, names: list[str]) -> dict[str, str]:
    out = {}
    for p in (1, 2):
        for t, name in enumerate(names, 1):
            reply = self_grading_reply(p, name)
            js, rub = _shorter(len(reply)), AI_WORDS not in reply
            out[f"{provider}|prompt-{p}|test-{t}"] = (
                f"{len(reply)} chars: javascript 1 - ({len(reply)} - 100) / 900 clamped = {js:.4f} (a number: passes "
                f"when > 0), rubric {'passes' if rub else 'fails (says As an AI)'} {int(rub)}: mean "
                f"{(js + rub) / 2:.4f}, {'pass' if rub and js > 0 else 'fail'}"
            )
    return out


EVAL_SELF_GRADING = Example(
    "eval-self-grading",
    self_grading,
    why=_self_grading_why("openai:gpt-5.2", ["Bob", "Jane"]),
)
SELF_GRADING = Example(
    "self-grading",
    self_grading,
    why=_self_grading_why(
        "openai:gpt-4.1", ["Bob", "Jane", "Ben", "Dave", "Jim", "Alice", "Sophie", "Jessie", "Kim", "Emily"]
    ),
)


# -- gpt-3.5-vs-4: two providers, defaultTest cost and latency, contains and llm-rubric --------------------------------

LONG = {5, 9}  # the riddles the dearer model answers at length, past the $0.002 cost threshold
RIDDLE_STARTS = ["I speak without", "You see a boat", "The more of this", "I have keys but no locks",
                 "I am not alive", "What can travel", "Forward I am heavy", "The person who makes it",
                 "I can be cracked", "What has keys", "I'm light as a feather", "I can fly without wings",
                 "I am taken from a mine", "David's father", "I am light as a feather"]  # fmt: skip


def riddles_for(dear: str, long_tokens: int, married_rubric: bool) -> Any:
    """Replies for the riddle configs: ``dear`` is the model that apologizes, answers test 3 in lower case and
    answers the LONG riddles with ``long_tokens`` completion tokens (prompt tokens are always 30)."""

    def reply(body: dict[str, Any]) -> Any:
        if grading_kind(body) == "llm-rubric":
            out, text = graded_output(body), last_user(body)
            if "Do not apologize" in text:
                return rubric("Sorry" not in out)
            return rubric(("married" if married_rubric else "below deck") in out)
        riddle = last_user(body).removeprefix("Solve this riddle: ")
        is_dear = body["model"] == dear
        answers = {
            "I speak without": ("Sorry, it is an echo." if is_dear else "An echo."),
            "You see a boat": ("They are all below deck." if is_dear else "Everyone on board was married."),
            "The more of this": ("darkness" if is_dear else "Darkness."),
        }
        text = next((v for k, v in answers.items() if riddle.startswith(k)), "A riddle's answer.")
        number = next(i for i, r in enumerate(RIDDLE_STARTS, 1) if riddle.startswith(r))
        completion = long_tokens if is_dear and number in LONG else 5
        return {"text": text, "usage": {"prompt_tokens": 30, "completion_tokens": completion}}

    return reply


def _riddles_why(prices: dict[str, tuple[float, float]], long_tokens: int, married_rubric: bool) -> dict[str, str]:
    """``prices``: provider -> promptfoo's (input, output) USD per token; the first provider is the dear one."""
    out = {}
    for n, (provider, (pin, pout)) in enumerate(prices.items()):
        dear = n == 0
        for t in range(1, 16):
            completion = long_tokens if dear and t in LONG else 5
            cost = 30 * pin + completion * pout
            parts = [f"cost 30 x {pin:g} + {completion} x {pout:g} = ${cost:.6f} {'<=' if cost <= 0.002 else '>'} "
                     f"0.002 ({int(cost <= 0.002)})", "latency under 3000 ms (1)"]  # fmt: skip
            ok = cost <= 0.002
            if t == 1:
                parts += ["contains 'echo' (1)", f"rubric Do not apologize ({0 if dear else 1})"]
                ok = ok and not dear
            if t == 2:
                wins = dear != married_rubric  # the cheap model says married, the dear one below deck
                parts.append(f"rubric {'married' if married_rubric else 'below deck'} ({int(wins)})")
                ok = ok and wins
            if t == 3:
                parts.append(f"contains 'darkness' ({1 if dear else 0}: {'darkness' if dear else 'Darkness.'})")
                ok = ok and dear
            out[f"{provider}|prompt-1|test-{t}"] = ", ".join(parts) + f": mean of them, {'pass' if ok else 'fail'}"
    return out


GPT_35_VS_4_WHY = _riddles_why({"openai:gpt-4": (30e-6, 60e-6), "openai:gpt-3.5-turbo": (0.5e-6, 1.5e-6)}, 30, False)
GPT_35_VS_4 = Example(
    "gpt-3.5-vs-4",
    riddles_for("gpt-4", 30, False),
    why=GPT_35_VS_4_WHY,
    latency_ms=3000,  # its latency check: a machine busier than that is not judged
)
GPT_4O_VS_4O_MINI_WHY = _riddles_why(
    {"openai:gpt-5": (1.25e-6, 10e-6), "openai:gpt-5-mini": (0.25e-6, 2e-6)}, 250, True
)
GPT_4O_VS_4O_MINI = Example(
    "gpt-4o-vs-4o-mini",
    riddles_for("gpt-5", 250, True),
    why=GPT_4O_VS_4O_MINI_WHY,
    latency_ms=3000,  # its latency check: a machine busier than that is not judged
)


# -- openai-tools-call: tools in the provider config, is-valid-openai-tools-call, transforms, similar ----------------


def tools_call(body: dict[str, Any]) -> Any:
    city = last_user(body).removeprefix("What is the weather like in ").removesuffix("?")
    location = {"Boston": "Boston, MA", "New York": "New York, NY", "Paris": "Paris"}.get(city)
    if location is None:
        return "I cannot look up the weather on Mars."
    return {"tool_calls": [{"name": "get_current_weather", "arguments": {"location": location}, "id": "call_1"}]}


OPENAI_TOOLS_CALL = Example(
    "openai-tools-call",
    tools_call,
    slow=True,
    why={
        "openai:chat:gpt-6-luna|prompt-1|test-1": "the output is the tool_calls array: is-json (an object) 1, "
        "valid against the provider's tools 1, output[0].function.name 1, arguments location 'Boston, MA' 1: 1, pass",
        "openai:chat:gpt-6-luna|prompt-1|test-2": "test transform output[0].function.name, equals "
        "get_current_weather: 1, pass",
        "openai:chat:gpt-6-luna|prompt-1|test-3": "equals on the transformed name 1; similar 'Paris' to 'Paris, "
        "France' by the server's letter counts (cosine 0.80 >= 0.5): mean, pass",
        "openai:chat:gpt-6-luna|prompt-1|test-4": "a text answer, no assertions: pass, 1",
    },
)


# -- openai-function-call: legacy functions (from a YAML file and inline), two labelled providers --------------------


def function_call(body: dict[str, Any]) -> Any:
    city = last_user(body).removeprefix("What is the weather like in ").removesuffix("?")
    location = {"Boston": "Boston, MA", "New York": "NYC"}.get(city)
    if location is None:
        return f"I cannot look up the weather in {city}."
    return {"function_call": {"name": "get_current_weather", "arguments": json.dumps({"location": location})}}


OPENAI_FUNCTION_CALL = Example(
    "openai-function-call",
    function_call,
    slow=True,
    why={
        **{
            f"{label}|prompt-1|test-1": "the output is the function_call object: is-json 1, valid against the "
            "provider's functions 1, output.name 1, arguments location 'Boston, MA' 1: 1, pass"
            for label in ("functions-defined-in-external-file", "functions-defined-in-config")
        },
        **{
            f"{label}|prompt-1|test-2": "equals on transform output.name 1; similar 'NYC' to 'NYC' (cosine 1 >= 0.5)"
            " 1: 1, pass"
            for label in ("functions-defined-in-external-file", "functions-defined-in-config")
        },
        **{
            f"{label}|prompt-1|test-{t}": "no assertions: pass, 1"
            for label in ("functions-defined-in-external-file", "functions-defined-in-config")
            for t in (3, 4)
        },
    },
)


# -- eval-customer-support-rubric: echo, five llm-rubrics with metrics and thresholds, a grader in defaultTest.options,
#    CSV __threshold (empty, or 0) and __metadata ------------------------------------------------------------------

RUBRIC_METRICS = {
    "is factually correct": "correct",
    "resolves the customer's issue": "resolved",
    "is honest about what it can": "honest",
    "offers a human handoff": "handoff",
    "is written in the same language": "language_fit",
}
SUPPORT_SCORES = {  # a reply's first words -> {metric: score}; unlisted metrics 0.9
    "Hola, lamento el doble cobro": {},
    "Hola, puedo cancelar": {"correct": 0.2, "resolved": 0.5, "honest": 0.1, "handoff": 0.3},
    "Sorry about the outage": {"handoff": 0.8},
    "Hola! Su tarifa": {"language_fit": 0.2},
    "Absolutely, as a loyal": {"correct": 0.1, "honest": 0.0},
    "I am sorry this happened": {"correct": 1.0, "resolved": 1.0, "honest": 1.0, "handoff": 1.0, "language_fit": 1.0},
    "Entiendo su frustracion": {"resolved": 0.3},
    "Yes, you can move": {"handoff": 0.75},
}


def support_rubric(body: dict[str, Any]) -> str:
    out, text = graded_output(body), last_user(body)
    metric = next(m for phrase, m in RUBRIC_METRICS.items() if phrase in text)
    scores = next(v for k, v in SUPPORT_SCORES.items() if out.startswith(k))
    score = scores.get(metric, 0.9)
    return (
        rubric(score, f"{metric} {score}")
        if score >= 0.5
        else json.dumps({"reason": f"{metric} {score}", "pass": False, "score": score})
    )


def _support_why() -> dict[str, str]:
    thresholds = [None, None, None, 0, 0, None, 0, None]
    out = {}
    for t, (start, scores) in enumerate(SUPPORT_SCORES.items(), 1):
        all_scores = [scores.get(m, 0.9) for m in RUBRIC_METRICS.values()]
        mean = sum(all_scores) / 5
        failing = [m for m in RUBRIC_METRICS.values() if scores.get(m, 0.9) < 0.8]
        if thresholds[t - 1] is None:
            verdict = "fail" if failing else "pass"
            rule = "no test threshold: every rubric must reach 0.8"
        else:
            verdict = "pass"
            rule = "__threshold 0 (a number, not 'no threshold'): the test passes on its mean reaching 0"
        out[f"Mock support assistant|prompt-1|test-{t}"] = (
            f"'{start}…': scores {all_scores} (a grader pass with score >= 0.8 passes; {failing or 'none'} below), "
            f"mean {mean:.2f}; {rule}: {verdict}"
        )
    return out


EVAL_CUSTOMER_SUPPORT_RUBRIC = Example("eval-customer-support-rubric", support_rubric, why=_support_why())


# -- custom-grading-prompt / eval-custom-grading-prompt: llm-rubric with a custom rubricPrompt (chat messages) -------

CUSTOM_RUBRIC = (("Grade the output by the following specifications", "custom-rubric"),)


def custom_grading(body: dict[str, Any]) -> str:
    if grading_kind(body, CUSTOM_RUBRIC) == "custom-rubric":
        out = last_user(body).removeprefix("Output: ")
        if "clarify" in out:
            return json.dumps({"pass": False, "score": 3, "reason": "Federal Reserve, macroeconomics, asks to clarify"})
        return json.dumps({"pass": True, "score": 2, "reason": "mentions the Federal Reserve and macroeconomics"})
    if "primer on macroeconomics" in last_user(body):
        return "The Federal Reserve steers macroeconomics. Could you clarify which part of the economy you mean?"
    return "The Federal Reserve sets rates; macroeconomics studies the whole economy."


CUSTOM_GRADING_PROMPT = Example(
    "custom-grading-prompt",
    custom_grading,
    grading_markers=CUSTOM_RUBRIC,
    why={
        "openai:gpt-4o-mini|prompt-1|test-1": "the custom rubric's grader answers pass true, score 2 (points, not "
        "0..1): llm-rubric with no threshold passes on the grader's pass and keeps its score, 2; pass"
    },
)
EVAL_CUSTOM_GRADING_PROMPT = Example(
    "eval-custom-grading-prompt",
    custom_grading,
    grading_markers=CUSTOM_RUBRIC,
    why={
        "openai:gpt-4.1-mini|prompt-1|test-1": "grader pass true, score 2; threshold 0: 2 >= 0 and pass: pass, 2",
        "openai:gpt-4.1-mini|prompt-2|test-1": "grader pass false, score 3 (asks to clarify): llm-rubric passes only "
        "when the grader's pass is true and the score reaches the threshold, so it fails with score 3; fail, 3",
    },
)


# -- french-greeting-test: weights, metrics, a test threshold, answer-relevance, a nested assert-set (cost, latency) --


FRENCH_QUESTIONS = (  # one per question request: promptfoo generates three questions and averages their relevance
    "How do you greet someone in French?",
    "What is a friendly French greeting?",
    "How would you say hello in French?",
)
ASKED = itertools.count()


def french_greeting(body: dict[str, Any]) -> str:
    kind = grading_kind(body)
    if kind == "llm-rubric":
        return rubric(True, "friendly, in French")
    if "Generate question for the given answer" in body_text(body):  # answer-relevance asks three times
        return FRENCH_QUESTIONS[next(ASKED) % 3]
    return "Bonjour ! Ravi de vous voir."


FRENCH_GREETING_TEST = Example(
    "french-greeting-test",
    french_greeting,
    latency_ms=150,  # its nested latency check: promptfoo's verdict was recorded with the call under 150 ms
    # tests[0].type (not in promptfoo's test schema) is ignored with a warning, as promptfoo's parse drops it
    why={
        "openai:gpt-5.4-mini|prompt-1|test-1": "contains 'Bonjour' 1 (weight 2); rubric 1; answer-relevance: the "
        "mean cosine of the prompt's and the three generated questions' embeddings (three requests, a different "
        "question each; the server's letter counts) >= 0.5; the nested assert-set (threshold 0.5): cost of 4 + 6 "
        "tokens at gpt-5.4-mini's price under $0.0008 1 and latency under 150 ms 1, so 1; the weighted mean "
        "(2 + 1 + relevance + 1) / 5 reaches the test's threshold 0.8: pass"
    },
)


# -- javascript-assert-external: defaultTest javascript from a file returning a GradingResult with componentResults ---


def fruits(body: dict[str, Any]) -> str:
    topic = last_user(body).removeprefix("Tell me about ").removesuffix(" in three words")
    return {
        "yellow fruits": "Bananas, lemons, yellow pineapples",
        "fruits high in potassium": "bananas, avocados, apricots",
        "fruits that are long and skinny": "Plantains, okra, cucumbers",
        "fruits that smell bad": "Durian, yellow jackfruit, noni",
    }[topic]


JAVASCRIPT_ASSERT_EXTERNAL = Example(
    "javascript-assert-external",
    fruits,
    why={
        f"openai:gpt-4o|prompt-1|test-{t}": "the function returns {pass: true, score: 0.75, componentResults: "
        f"[banana {b}, yellow {y}]}}: the assertion is that object's pass and score (its componentResults do not "
        "change them): 0.75, pass"
        for t, b, y in ((1, "yes", "yes"), (2, "yes", "no"), (3, "no", "no"), (4, "no", "yes"))
    },
)

EXAMPLES: list[Example] = [
    CSV_METADATA,
    CONFIG_CSV_METADATA,
    JSON_OUTPUT,
    SIMPLE_CSV_EXAMPLE,
    PYTHON_ASSERT_EXTERNAL,
    PYTHON_ASSERT_INLINE,
    EVAL_CUSTOM_GRADER_CSV,
    MULTISHOT,
    CSV_PROMPTS,
    GETTING_STARTED_EXAMPLE,
    SIMPLE_TEST_EXAMPLE,
    G_EVAL,
    EVAL_SELF_GRADING,
    SELF_GRADING,
    GPT_35_VS_4,
    OPENAI_TOOLS_CALL,
    OPENAI_FUNCTION_CALL,
    EVAL_CUSTOMER_SUPPORT_RUBRIC,
    CUSTOM_GRADING_PROMPT,
    EVAL_CUSTOM_GRADING_PROMPT,
    FRENCH_GREETING_TEST,
    GPT_4O_VS_4O_MINI,
    JAVASCRIPT_ASSERT_EXTERNAL,
]
