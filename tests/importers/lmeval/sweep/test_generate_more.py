"""More registry generation tasks, unchanged but for their data, asked of one scripted server by lm_eval and by
assay: triviaqa and nq_open (normalising filters, list targets, few-shot), a bbh chain-of-thought subtask (few-shot
samples from the YAML, a regex filter), ifeval (function-valued aggregations, nltk), MATH (process_docs, string and
sympy answer checks, few-shot samples from a function), mgsm in Japanese (multilingual, two filters) and drop (F1 in
process_results). Text prompts through completions, and chat mode for triviaqa, nq_open, mgsm and ifeval."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer, last_user_text
from tests.importers.lmeval.parity import assay_run, assert_parity, inside, lm_eval_generate, registry_copy

pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("tenacity", reason="lm-eval's API models need lm-eval[api] (tenacity)")

BOOTSTRAP = 1000


class Script:
    """Replies by document: the key that occurs LAST in the prompt (the asked document comes after the few-shot
    examples) picks the reply, so one script answers text prompts and chats alike."""

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies

    def answer(self, text: str) -> str:
        found = [(text.rfind(key), key) for key in self.replies if key in text]
        assert found, f"no scripted reply for {text[-200:]!r}"
        return self.replies[max(found)[1]]

    def chat(self, body: dict[str, Any]) -> str:
        return self.answer(last_user_text(body))

    def completion(self, prompt: Any, body: dict[str, Any]) -> str:
        return self.answer(str(prompt))


def compare(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    task: str,
    path: Path,
    script: Script,
    *,
    chat: bool,
    **options: Any,
) -> int:
    """Run ``task`` (the copy at ``path``) with assay and with lm_eval against one scripted server; assert parity."""
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    if chat:
        options["apply_chat_template"] = True
    with OpenAITestServer(script.chat, completion=script.completion) as server, inside(tmp_path):
        provider = "openai" if chat else "openai-completions"
        model = {"provider": provider, "model": "test-model", "base_url": server.base_url}
        run_dir = assay_run([path], model, tmp_path, lmeval={**options, "bootstrap_iters": BOOTSTRAP})
        theirs = lm_eval_generate(server.base_url, [task], tmp_path, chat=chat, bootstrap_iters=BOOTSTRAP, **options)
    n = assert_parity(run_dir, theirs)
    figures = {k: v for k, v in theirs["results"][task].items() if "," in k and "_stderr" not in k}
    assert figures and all(0 < v < 1 for v in figures.values()), f"degenerate figures: {figures}"
    return n


# ---- triviaqa: rc.nocontext rows; a list of aliases as the target; remove_whitespace + take_first ----------------


def _trivia(i: int, question: str, value: str, aliases: list[str]) -> dict[str, Any]:
    return {
        "question": question,
        "question_id": f"tc_{i}",
        "question_source": "http://www.triviacountry.com/",
        "entity_pages": {"doc_source": [], "filename": [], "title": [], "wiki_context": []},
        "search_results": {"description": [], "filename": [], "rank": [], "title": [], "url": [], "search_context": []},
        "answer": {
            "aliases": aliases,
            "normalized_aliases": [a.lower() for a in aliases],
            "matched_wiki_entity_name": "",
            "normalized_matched_wiki_entity_name": "",
            "normalized_value": value.lower(),
            "type": "WikipediaEntity",
            "value": value,
        },
    }


TRIVIA_TRAIN = [
    _trivia(1, "Which German city is home to the Brandenburg Gate", "Berlin", ["Berlin", "Berlín"]),
    _trivia(2, "Who composed the opera Carmen", "Georges Bizet", ["Georges Bizet", "Bizet"]),
    _trivia(3, "What is the chemical symbol for gold", "Au", ["Au", "AU"]),
    _trivia(4, "Which river flows through Budapest", "Danube", ["Danube", "Donau", "Duna"]),
    _trivia(5, "In which country is the city of Kraków", "Poland", ["Poland", "Polska"]),
]
TRIVIA_VALIDATION = [
    _trivia(
        11,
        "Which Czech composer wrote the New World Symphony",
        "Antonín Dvořák",
        ["Antonín Dvořák", "Dvořák", "Dvorak"],
    ),
    _trivia(12, "What is the capital city of Iceland", "Reykjavík", ["Reykjavík", "Reykjavik"]),
    _trivia(13, "Which planet is known as the Red Planet", "Mars", ["Mars", "Planet Mars"]),
    _trivia(14, "Who painted The Persistence of Memory", "Salvador Dalí", ["Salvador Dalí", "Dalí", "Dali"]),
    _trivia(15, "How many strings does a standard violin have", "4", ["4", "Four"]),
    _trivia(16, "Which Swiss city hosts CERN", "Geneva", ["Geneva", "Genève", "Genf"]),
]
TRIVIA = Script(
    {
        "New World Symphony": " DVOŘÁK",  # case ignored
        "capital city of Iceland": " Reykjavik!",  # punctuation ignored
        "Red Planet": " Jupiter",
        "Persistence of Memory": "  Salvador Dalí",
        "standard violin": " Four strings",
        "hosts CERN": " Zürich",
        # the few-shot examples are never asked, but their questions are keys the prompt holds
        "Brandenburg Gate": "-",
        "opera Carmen": "-",
        "symbol for gold": "-",
        "through Budapest": "-",
        "city of Kraków": "-",
    }
)


@pytest.mark.parametrize(
    ("chat", "options"),
    [
        (False, {}),
        # --apply_chat_template alone: lm-eval 0.4.13 then lays the few-shot examples out as turns by default
        (True, {}),
        # --apply_chat_template --fewshot_as_multiturn false: the examples stay in the one user message
        (True, {"fewshot_as_multiturn": False}),
    ],
    ids=["text", "chat", "chat-one-turn"],
)
def test_triviaqa_equal_to_lm_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: bool, options: dict[str, Any]
) -> None:
    path = registry_copy("triviaqa", tmp_path, {"train": TRIVIA_TRAIN, "validation": TRIVIA_VALIDATION})
    n = compare(tmp_path, monkeypatch, "triviaqa", path, TRIVIA, chat=chat, num_fewshot=2, **options)
    assert n == len(TRIVIA_VALIDATION)


# ---- nq_open: a list of answers rendered by "{{answer}}"; articles ignored; a description; chat, multi-turn -------

NQ_TRAIN = [
    {"question": "who wrote the novel the magic mountain", "answer": ["Thomas Mann"]},
    {"question": "what is the longest river in france", "answer": ["the Loire", "Loire"]},
    {"question": "who sang the song non, je ne regrette rien", "answer": ["Édith Piaf"]},
    {"question": "what currency is used in japan", "answer": ["yen", "Japanese yen"]},
    {"question": "where is the headquarters of fifa", "answer": ["Zürich", "Zurich, Switzerland"]},
]
NQ_VALIDATION = [
    {"question": "who discovered penicillin in 1928", "answer": ["Alexander Fleming"]},
    {"question": "what is the tallest mountain in the alps", "answer": ["Mont Blanc", "Monte Bianco"]},
    {"question": "which instrument did yo-yo ma play", "answer": ["the cello", "cello"]},
    {"question": "who was the first woman to win a nobel prize", "answer": ["Marie Curie", "Marie Skłodowska-Curie"]},
    {"question": "what is the capital of the canadian province of québec", "answer": ["Québec City"]},
    {"question": "how many players are on a rugby union team", "answer": ["15", "fifteen"]},
]
NQ = Script(
    {
        "penicillin in 1928": "Alexander Fleming",
        "mountain in the alps": "The Matterhorn",
        "did yo-yo ma play": "A cello",  # the article is ignored
        "win a nobel prize": " marie skłodowska-curie.",
        "province of québec": "Montréal",
        "rugby union team": "Fifteen players",
        "magic mountain": "-",
        "river in france": "-",
        "je ne regrette rien": "-",
        "used in japan": "-",
        "headquarters of fifa": "-",
    }
)


def test_nq_open_chat_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = registry_copy("nq_open", tmp_path, {"train": NQ_TRAIN, "validation": NQ_VALIDATION})
    options = {"num_fewshot": 3, "fewshot_as_multiturn": True}
    n = compare(tmp_path, monkeypatch, "nq_open", path, NQ, chat=True, **options)
    assert n == len(NQ_VALIDATION)


# ---- bbh: chain-of-thought few-shot samples from the YAML; the "get-answer" regex filter ------------------------

BBH_TEST = [
    {"input": "not ( True ) and ( True ) is", "target": "False"},
    {"input": "True and not not ( not False ) is", "target": "True"},
    {"input": "not True or ( False and True ) is", "target": "False"},
    {"input": "False or not ( True ) and False is", "target": "False"},
    {"input": "( not False ) or ( False ) is", "target": "True"},
    {"input": "not not not not ( True ) is", "target": "True"},
]
BBH = Script(
    {
        "Q: not ( True ) and ( True ) is": "not ( True ) = False, and False and True = False. So the answer is False.",
        "Q: True and not not ( not False ) is": "not False = True. So the answer is True",  # no final ".": "Tru"
        "Q: not True or ( False and True ) is": "A = False, B = False. So the answer is True.",
        "Q: False or not ( True ) and False is": "Hard to say.",  # no match: [invalid]
        "Q: ( not False ) or ( False ) is": "Z = True or False = True. So the answer is True.\n\nQ: next",
        "Q: not not not not ( True ) is": "Four nots cancel. So the answer is True.",
    }
)


def test_bbh_cot_fewshot_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = "bbh_cot_fewshot_boolean_expressions"
    path = registry_copy(task, tmp_path, {"test": BBH_TEST})
    n = compare(tmp_path, monkeypatch, task, path, BBH, chat=False)
    assert n == len(BBH_TEST)


# ---- drop: process_docs builds the answer sets; em and F1 in process_results --------------------------------------

_NO_DATE = {"day": "", "month": "", "year": ""}


def _drop(
    i: int, passage: str, question: str, *, number: str = "", spans: list[str] | None = None, valid: list[Any] = ()
) -> dict[str, Any]:
    def answer(number: str, spans: list[str]) -> dict[str, Any]:
        return {"number": number, "date": _NO_DATE, "spans": spans, "worker_id": "", "hit_id": ""}

    validated = [answer(*v) for v in valid]
    return {
        "section_id": f"history_{i}",
        "query_id": f"q{i:04d}",
        "passage": passage,
        "question": question,
        "answer": answer(number, spans or []),
        "validated_answers": {
            "number": [v["number"] for v in validated],
            "date": [v["date"] for v in validated],
            "spans": [v["spans"] for v in validated],
            "worker_id": ["" for _ in validated],
            "hit_id": ["" for _ in validated],
        },
    }


GAME = "The Bears scored 3 touchdowns in the first half, and Müller kicked 2 field goals of 41 and 37 yards."
CITY = "In 1871 the city of Köln had 129,233 inhabitants; by 1900 it had grown to 372,529, ahead of Düsseldorf."
DROP_TRAIN = [
    _drop(1, GAME, "How many field goals did Müller kick?", number="2", valid=[("2", [])]),
    _drop(2, CITY, "Which city is mentioned second?", spans=["Düsseldorf"], valid=[("", ["Düsseldorf"])]),
    _drop(3, GAME, "How long was the longest field goal?", number="41", valid=[("41", [])]),
    _drop(4, CITY, "In which year did Köln have 372,529 inhabitants?", number="1900"),
    _drop(5, GAME, "Who kicked the field goals?", spans=["Müller"]),
]
DROP_VALIDATION = [
    _drop(11, GAME, "How many touchdowns did the Bears score in the first half?", number="3", valid=[("3", [])]),
    _drop(12, GAME, "Which field goals did Müller kick?", spans=["41", "37"], valid=[("", ["41 yards", "37 yards"])]),
    _drop(13, CITY, "How many more inhabitants did Köln have in 1900 than in 1871?", number="243296"),
    _drop(14, CITY, "Which city had fewer inhabitants?", spans=["Düsseldorf"], valid=[("", ["Düsseldorf"])]),
    _drop(15, GAME, "Which team scored touchdowns?", spans=["the Bears"], valid=[("", ["Bears"])]),
    _drop(16, CITY, "In which year is the first count given?", number="1871", valid=[("1871", [])]),
]
DROP = Script(
    {
        "How many touchdowns": " 3 touchdowns",  # F1 2/3, em 0
        "Which field goals": " 41 yards and 37 yards",
        "How many more inhabitants": " 243296",
        "Which city had fewer": " Düsseldorf",
        "Which team scored": " The Bears of Chicago",
        "first count given": " 1900",
    }
)


def test_drop_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = registry_copy("drop", tmp_path, {"train": DROP_TRAIN, "validation": DROP_VALIDATION})
    n = compare(tmp_path, monkeypatch, "drop", path, DROP, chat=False)
    assert n == 2 * len(DROP_VALIDATION)


# ---- mgsm_direct_ja: Japanese prompts ("問題："), remove_whitespace and flexible-extract; chat, multi-turn -------

MGSM_TRAIN = [
    {
        "question": "問題：ロジャーはテニスボールを5個持っています。テニスボールが3個入った缶を2つ買いました。"
        "彼は今何個のテニスボールを持っていますか？",
        "answer": "ステップごとの答え：ロジャーは最初5個のボールを持っていました。"
        "3個入りの缶2つで6個です。5 + 6 = 11。答えは11です。",
        "answer_number": 11,
        "equation_solution": "5 + 6 = 11.",
    },
    {
        "question": "問題：サーバールームには9台のコンピューターがありました。"
        "月曜から木曜まで毎日5台ずつ追加されました。今何台ありますか？",
        "answer": "ステップごとの答え：4日間で5 * 4 = 20台追加されました。9 + 20 = 29。答えは29です。",
        "answer_number": 29,
        "equation_solution": "5 * 4 = 20. 9 + 20 = 29.",
    },
    {
        "question": "問題：リアは32個、妹は42個のチョコレートを持っていました。35個食べたら、残りは何個ですか？",
        "answer": "ステップごとの答え：32 + 42 = 74。74 - 35 = 39。答えは39です。",
        "answer_number": 39,
        "equation_solution": "32 + 42 = 74. 74 - 35 = 39.",
    },
    {
        "question": "問題：駐車場に車が3台あり、さらに2台来ました。駐車場には何台の車がありますか？",
        "answer": "ステップごとの答え：3 + 2 = 5。答えは5です。",
        "answer_number": 5,
        "equation_solution": "3 + 2 = 5.",
    },
    {
        "question": "問題：ジェイソンは20個の飴を持っていました。"
        "デニーに何個かあげて、残りは12個です。何個あげましたか？",
        "answer": "ステップごとの答え：20 - 12 = 8。答えは8です。",
        "answer_number": 8,
        "equation_solution": "20 - 12 = 8.",
    },
]
MGSM_TEST = [
    {"question": f"{q}", "answer": None, "answer_number": n, "equation_solution": None}
    for q, n in [
        ("花子さんはりんごを7個持っていて、さらに8個買いました。りんごは全部で何個ですか？", 15),
        ("1箱に12本の鉛筆が入っています。3箱では鉛筆は何本ですか？", 36),
        ("電車に45人乗っていて、駅で18人降りました。電車には何人残っていますか？", 27),
        ("太郎君は毎日250円貯金します。4日間でいくら貯まりますか？", 1000),
        ("クッキーが1,200枚あり、4人で等しく分けます。1人何枚ですか？", 300),
        ("気温は朝-3度で、昼までに10度上がりました。昼の気温は何度ですか？", 7),
    ]
]
MGSM = Script(
    {
        "りんごを7個": "15",
        "鉛筆が入っています": " 36本です。",  # flexible-extract finds 36; the whole text does not match
        "電車に45人": "27人",
        "毎日250円": "$1,000",
        "クッキーが1,200枚": "答えは1,200 ÷ 4 = 300枚です",  # flexible-extract takes the last number
        "朝-3度": "朝は-3度、昼は13度",  # flexible-extract takes the last number
        "テニスボール": "-",
        "コンピューター": "-",
        "チョコレート": "-",
        "駐車場": "-",
        "飴": "-",
    }
)


def test_mgsm_direct_ja_chat_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = registry_copy("mgsm_direct_ja", tmp_path, {"train": MGSM_TRAIN, "test": MGSM_TEST})
    options = {"num_fewshot": 2, "fewshot_as_multiturn": True, "system_instruction": "数字だけで答えてください。"}
    n = compare(tmp_path, monkeypatch, "mgsm_direct_ja", path, MGSM, chat=True, **options)
    assert n == 2 * len(MGSM_TEST)


# ---- MATH: hendrycks_math_algebra (no extras); leaderboard_math_algebra_hard (math-verify, antlr4 4.11) -----------

MATH_TRAIN = [
    {
        "problem": "What is the value of $2x + 3$ when $x = 4$?",
        "level": "Level 1",
        "type": "Algebra",
        "solution": "Substituting gives $2 \\cdot 4 + 3 = \\boxed{11}$.",
    },
    {
        "problem": "Solve for $y$: $3y - 7 = 11$.",
        "level": "Level 2",
        "type": "Algebra",
        "solution": "Adding 7 gives $3y = 18$, so $y = \\boxed{6}$.",
    },
    {
        "problem": "Simplify $\\frac{6}{8}$.",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "Dividing by 2 gives $\\boxed{\\frac{3}{4}}$.",
    },
    {
        "problem": "What is the slope of the line $y = -2x + 5$?",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "The slope is the coefficient of $x$, $\\boxed{-2}$.",
    },
    {
        "problem": "Find the sum of the roots of $x^2 - 5x + 6 = 0$.",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "By Vieta, the sum is $\\boxed{5}$.",
    },
]
MATH_TEST = [
    {
        "problem": "If $a + b = 10$ and $a - b = 4$, what is $a$?",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "Adding the equations gives $2a = 14$, so $a = \\boxed{7}$.",
    },
    {
        "problem": "Evaluate $\\sqrt{49} + \\sqrt{16}$.",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "$7 + 4 = \\boxed{11}$.",
    },
    {
        "problem": "What is $\\frac{1}{2} + \\frac{1}{4}$?",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "The sum is $\\frac{2}{4} + \\frac{1}{4} = \\boxed{\\frac{3}{4}}$.",
    },
    {
        "problem": "Solve $5z = 2$ for $z$.",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "Dividing, $z = \\boxed{\\frac{2}{5}}$.",
    },
    {
        "problem": "What is the product of $(x + 1)(x - 1)$ when $x = 3$?",
        "level": "Level 3",
        "type": "Algebra",
        "solution": "It is $x^2 - 1 = \\boxed{8}$.",
    },
    {
        "problem": "Find the domain of $f(x) = \\frac{1}{x - 2}$ as an interval union.",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "All reals but 2: $\\boxed{(-\\infty, 2) \\cup (2, \\infty)}$.",
    },
    {
        "problem": "What is $3^4$?",
        "level": "Level 5",
        "type": "Algebra",
        "solution": "$3^4 = \\boxed{81}$.",
    },
]
MATH = Script(
    {
        "what is $a$?": " $7$",
        "\\sqrt{49}": " $11.0$",
        "\\frac{1}{4}$?": " The sum is $0.75$.\nFinal Answer: The final answer is $0.75$. I hope it is correct.",
        "$5z = 2$": " $z = 2/5$.\nFinal Answer: The final answer is $\\frac25$. I hope it is correct.",
        "(x - 1)$": " $8$",
        "interval union": " Final Answer: The final answer is $(-\\infty,2)\\cup(2,\\infty)$.",
        "$3^4$?": " $64$",
    }
)


def test_hendrycks_math_algebra_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = registry_copy("hendrycks_math_algebra", tmp_path, {"train": MATH_TRAIN, "test": MATH_TEST})
    n = compare(tmp_path, monkeypatch, "hendrycks_math_algebra", path, MATH, chat=False, num_fewshot=2)
    assert n == len(MATH_TEST)


def _antlr4_11() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("antlr4-python3-runtime").startswith("4.11")
    except PackageNotFoundError:
        return False


@pytest.mark.skipif(
    importlib.util.find_spec("math_verify") is None or not _antlr4_11(),
    reason="leaderboard math needs lm-eval[math]: math-verify and antlr4-python3-runtime 4.11",
)
def test_leaderboard_math_algebra_hard_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = "leaderboard_math_algebra_hard"
    path = registry_copy(task, tmp_path, {"train": MATH_TRAIN, "test": MATH_TEST})
    n = compare(tmp_path, monkeypatch, task, path, MATH, chat=False)
    assert n == 2 * sum(r["level"] == "Level 5" for r in MATH_TEST)


# ---- ifeval: instruction checkers (nltk's punkt_tab from a local folder); list-valued per-document values --------

_IFEVAL_KWARGS = [
    "num_highlights",
    "relation",
    "num_words",
    "num_placeholders",
    "prompt_to_repeat",
    "num_bullets",
    "section_spliter",
    "num_sections",
    "capital_relation",
    "capital_frequency",
    "keywords",
    "num_paragraphs",
    "language",
    "let_relation",
    "letter",
    "let_frequency",
    "end_phrase",
    "forbidden_words",
    "keyword",
    "frequency",
    "num_sentences",
    "postscript_marker",
    "first_word",
    "nth_paragraph",
]


def _ifeval(key: int, prompt: str, instructions: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A google/IFEval row: every kwargs dict has all the dataset's keys, None where the instruction takes none."""
    return {
        "key": key,
        "prompt": prompt,
        "instruction_id_list": [name for name, _ in instructions],
        "kwargs": [{k: given.get(k) for k in _IFEVAL_KWARGS} for _, given in instructions],
    }


IFEVAL_ROWS = [
    _ifeval(
        1000,
        "Write a short note about Zürich without using any commas. End it with the exact phrase 'Is there anything "
        "else I can help with?'",
        [
            ("punctuation:no_comma", {}),
            ("startend:end_checker", {"end_phrase": "Is there anything else I can help with?"}),
        ],
    ),
    _ifeval(
        1001,
        "List three reasons to visit Kyoto. Use exactly 3 markdown bullet points and mention the word 'temple'.",
        [
            ("detectable_format:number_bullet_lists", {"num_bullets": 3}),
            ("keywords:existence", {"keywords": ["temple"]}),
        ],
    ),
    _ifeval(
        1002,
        "Give the poem a title wrapped in double angular brackets, i.e. <<title>>, and write fewer than 30 words.",
        [
            ("detectable_format:title", {}),
            ("length_constraints:number_words", {"relation": "less than", "num_words": 30}),
        ],
    ),
    _ifeval(
        1003,
        "Describe the Danube in at least 3 sentences. Add a postscript starting with P.S.",
        [
            ("length_constraints:number_sentences", {"relation": "at least", "num_sentences": 3}),
            ("detectable_content:postscript", {"postscript_marker": "P.S."}),
        ],
    ),
    _ifeval(
        1004,
        "Wrap your entire response in double quotation marks. Tell me about crème brûlée.",
        [("startend:quotation", {})],
    ),
    _ifeval(
        1005,
        "Write about Ålesund in fewer than 12 words, with no commas.",
        [("length_constraints:number_words", {"relation": "less than", "num_words": 12}), ("punctuation:no_comma", {})],
    ),
]
IFEVAL = Script(
    {
        # ends in "**": strict fails the end phrase, loose (asterisks removed) passes
        "note about Zürich": "**Zürich** sits on a lake and has a fine old town.\n"
        "Is there anything else I can help with?**",
        "visit Kyoto": "* Its temples\n* Its food\n* Its gardens",  # the keyword is a regex: 'temples' has it
        "<<title>>": "**<<Autumn>>**\nLeaves fall on the quiet hill, gold and red, one by one.",
        "the Danube": "The Danube is long. It flows through Vienna. It ends in the Black Sea.\nP.S. Bring a map.",
        "crème brûlée": 'Crème brûlée is a custard with a burnt sugar top."',  # no opening quote
        "Ålesund": "Ålesund, a town of art nouveau, lies by the sea.",
    }
)


@pytest.fixture
def punkt_tab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local NLTK data folder with an (empty) English punkt_tab model, on NLTK's path before ifeval's utils load:
    they would download it otherwise. Both tools run here, in the same process, so they share it."""
    folder = tmp_path / "nltk_data"
    model = folder / "tokenizers" / "punkt_tab" / "english"
    model.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (model / name).write_text("", encoding="utf-8")
    monkeypatch.setenv("NLTK_DATA", str(folder))
    if "nltk.data" in sys.modules:  # imported before: its path was read from the environment then
        monkeypatch.setattr(sys.modules["nltk.data"], "path", [str(folder), *sys.modules["nltk.data"].path])
    return folder


def test_ifeval_chat_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, punkt_tab: Path) -> None:
    pytest.importorskip("langdetect", reason="ifeval needs lm-eval[ifeval] (langdetect)")
    pytest.importorskip("immutabledict", reason="ifeval needs lm-eval[ifeval] (immutabledict)")
    path = registry_copy("ifeval", tmp_path, {"train": IFEVAL_ROWS})
    n = compare(tmp_path, monkeypatch, "ifeval", path, IFEVAL, chat=True, system_instruction="Follow every rule.")
    assert n == 4 * len(IFEVAL_ROWS)
