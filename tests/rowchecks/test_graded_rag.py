"""answer-relevance and the context checks over a real local grading server (with an embeddings endpoint): promptfoo's
requests (hashes of the requests promptfoo 0.123.1 sent for the same tests, assay's delimiting taken out), its
embedding calls, and its verdicts on the same scripted replies (the numbers were checked against promptfoo 0.123.1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.tasks.checks.graded import judge_graded, use_run_cache
from tests.rowchecks.test_graded_server import (
    CONTEXT,
    LONG,
    PROMPT,
    SHORT,
    GradingServer,
    context,
    cosine,
    grader,
    grading_requests,
    judge,
    letter_vector,
)

GRADER = {"provider": "openai:chat:grader"}
FIRST_RUN = {  # the replies of promptfoo's first reference run
    "faith-statements": "Paris is the capital of France.\nParis has the Eiffel Tower.\nParis has ten million people.",
    "faith-nli": "1. Paris is the capital of France.\nExplanation: stated. Verdict: Yes.\n"
    "2. Paris has the Eiffel Tower.\nExplanation: stated. Verdict: Yes.\n3. Paris has ten million people.\n"
    "Explanation: not stated. Verdict: No.\nFinal verdict for each statement in order: Yes. Yes. No.",
    "recall": "1. Paris is the capital of France. The context says so. So [Attributed]\n2. It has a famous tower. "
    "Mentioned. So [Attributed]\n3. It hosted the 2024 Olympics. Not mentioned. So [Not Attributed]",
    "relevance": "Paris is the capital of France.",
    "answer-relevance": "What is the capital of France?",
}
RECALL = "Paris is the capital of France. It has a famous tower. It hosted the 2024 Olympics."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    with GradingServer(grader(FIRST_RUN)) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        yield s


# (check, output, promptfoo's score, pass, reason, the hashes of promptfoo's grading requests)
REFERENCE = [
    (
        {"type": "context-faithfulness"},
        SHORT,
        0.6666666666666667,
        True,
        "Faithfulness 0.67 is >= 0.5",
        ["b2aa98148f1790c6", "4c48c6e1453428c4"],
    ),
    (
        {"type": "context-faithfulness"},
        LONG,
        0.6666666666666667,
        True,
        "Faithfulness 0.67 is >= 0.5",
        ["229013bb01f55669", "4c48c6e1453428c4"],
    ),
    (
        {"type": "context-recall", "value": RECALL},
        SHORT,
        0.6666666666666666,
        True,
        "Recall 0.67 is >= 0.5",
        ["788fac3a30f4731c"],
    ),
    (
        {"type": "context-relevance"},
        LONG,
        0.3333333333333333,
        False,
        "Context relevance 0.33 is < 0.5",
        ["bea1fafd45c1d8e5"],
    ),
]


@pytest.mark.parametrize(("check", "output", "score", "passed", "reason", "hashes"), REFERENCE)
async def test_promptfoos_rag_prompts_and_verdicts(server, check, output, score, passed, reason, hashes):
    verdict = await judge(server, check, output, options=GRADER)
    assert (verdict.details["score"], verdict.passed, verdict.details["reason"]) == (score, passed, reason)
    sent = grading_requests(server)
    assert [r["hash"] for r in sent] == hashes
    b = sent[-1]["boundary"]
    assert f'<{b} name="context">\n{CONTEXT}\n</{b}>' in sent[-1]["messages"][-1]["content"]  # the context is data too
    assert verdict.details["context"] == CONTEXT


async def test_the_statements_drawn_from_the_output_are_one_block(server):
    await judge(server, {"type": "context-faithfulness"}, SHORT, options=GRADER)
    nli = grading_requests(server)[1]
    b = nli["boundary"]
    statements = FIRST_RUN["faith-statements"]
    assert f'statements:\n<{b} name="statements">\n{statements}\n</{b}>\nAnswer:\n' in nli["messages"][-1]["content"]


def case(n: int, **more: Any) -> dict[str, Any]:
    tag = f"[T{n:02d}]"
    question = f"{tag} What is the capital of France?"
    return {"vars": {"question": question, **more}, "prompt": f"Answer briefly: {question}"}


def out(n: int) -> str:
    return f"Paris [T{n:02d}]."


LIST = ["Paris is the capital of France.", "It is known for the Eiffel Tower.", "Bread is sold in bakeries."]
# promptfoo 0.123.1 on these replies: (test, check, its vars, replies, score, pass, reason, request hashes or None)
VERDICTS = [
    (
        13,
        {"type": "context-faithfulness"},
        {"query": "[T13] What is the capital of France?", "context": CONTEXT},
        {
            "faith-statements": "[T13] Paris is the capital of France.\nParis has ten million people.\n"
            "Paris is in Spain.",
            "faith-nli": "1. Explanation: stated. Verdict: Yes.\n2. Explanation: no. Verdict: No.\n"
            "3. Explanation: wrong. Verdict: No.",
        },
        0.33333333333333337,
        False,
        "Faithfulness 0.33 is < 0.5",
        None,
    ),
    (
        14,
        {"type": "context-recall", "value": "[T14] Lyon is the capital. It has two rivers."},
        {"context": CONTEXT},
        {
            "recall": "1. Lyon is the capital. Not in context. So [Not Attributed]\n"
            "2. It has two rivers. Not in context. So [Not Attributed]"
        },
        0,
        False,
        "Recall 0.00 is < 0.5",
        None,
    ),
    (
        16,
        {"type": "context-relevance"},
        {"query": "[T16] What is the capital of France?", "context": "Paris is the capital of France."},
        {"relevance": "Paris is the capital of France.\nIt is known for the Eiffel Tower."},
        1,
        True,
        "Context relevance 1.00 is >= 0.5",
        None,
    ),
    (
        17,
        {"type": "context-relevance"},
        {"query": "[T17] What is the capital of Spain?", "context": CONTEXT},
        {"relevance": "Insufficient Information"},
        0,
        False,
        "Context relevance 0.00 is < 0.5",
        None,
    ),
    (
        21,
        {"type": "not-context-recall", "value": "[T21] Paris is the capital. It has two rivers."},
        {"context": CONTEXT},
        {
            "recall": "1. Paris is the capital. Stated. So [Attributed]\n"
            "2. It has two rivers. Not stated. So [Not Attributed]"
        },
        0.5,
        False,
        "Recall 0.50 is >= 0.5",
        None,
    ),
    (  # a contextTransform's list: the caller puts it in vars["context"]
        31,
        {"type": "context-relevance", "contextTransform": repr(LIST)},
        {"query": "[T31] What is the capital of France?", "context": LIST},
        {"relevance": "1. Paris is the capital of France.\n2. It is known for the Eiffel Tower."},
        0.6666666666666666,
        True,
        "Context relevance 0.67 is >= 0.5",
        ["4419df53343b4671"],
    ),
    (
        32,
        {"type": "context-faithfulness", "contextTransform": repr(LIST)},
        {"query": "[T32] What is the capital of France?", "context": LIST},
        {
            "faith-statements": "[T32] Paris is the capital of France.\nParis is big.",
            "faith-nli": "Final verdict for each statement in order: Yes. No.",
        },
        0.5,
        True,
        "Faithfulness 0.50 is >= 0.5",
        ["fafb8d0de3d7f9c1", "573ed25ee16527be"],
    ),
    (  # a rubricPrompt pair: the statements prompt, then the verdicts prompt
        34,
        {
            "type": "context-faithfulness",
            "rubricPrompt": [
                "Split {{answer}} for {{question}} [T34S]",
                {"role": "user", "content": "Check {{statements|join(' | ')}} against {{context}} [T34N]"},
            ],
        },
        {"query": "[T34] q", "context": "Paris is the capital."},
        {"custom": {"[T34S]": "[T34] a\nb\nc", "[T34N]": "Final verdict for each statement in order: Yes. Yes. No."}},
        0.6666666666666667,
        True,
        "Faithfulness 0.67 is >= 0.5",
        ["eafaa39ad4f7bcd6", "18690afff309cb62"],
    ),
    (  # no context var: context-recall reads the prompt
        35,
        {"type": "context-recall", "value": "[T35] Paris is the capital."},
        {},
        {"recall": "1. Paris is the capital. So [Attributed]"},
        1,
        True,
        "Recall 1.00 is >= 0.5",
        ["cbf57da4e486b406"],
    ),
]


@pytest.mark.parametrize(("n", "check", "more", "replies", "score", "passed", "reason", "hashes"), VERDICTS)
async def test_rag_verdicts_as_promptfoo(monkeypatch, n, check, more, replies, score, passed, reason, hashes):
    with GradingServer(grader(replies)) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        verdict = await judge(s, check, out(n), options=GRADER, **case(n, **more))
        sent = grading_requests(s)
    assert verdict.error is None
    assert (verdict.details["score"], verdict.passed, verdict.details["reason"]) == (score, passed, reason)
    if hashes is not None:
        assert [r["hash"] for r in sent] == hashes


# promptfoo marks these grader errors (pass false, score 0); they are error verdicts here
ERRORS = [
    (
        15,
        {"type": "context-recall", "value": "[T15] x"},
        {"context": CONTEXT},
        {"recall": "The answer is fine."},
        "Grader returned no [Attributed]/[Not Attributed] classifications",
    ),
    (
        18,
        {"type": "context-relevance"},
        {"query": "q", "context": CONTEXT},
        {"relevance": "Madrid is the capital of Spain."},
        "Grader output does not quote the provided context",
    ),
    (
        13,
        {"type": "context-faithfulness"},
        {"query": "q", "context": CONTEXT},
        {"faith-statements": "\n \n"},
        "Could not extract context-faithfulness statements",
    ),
    (
        13,
        {"type": "context-faithfulness"},
        {"query": "q", "context": CONTEXT},
        {"faith-statements": "a.", "faith-nli": "All good."},
        "Could not parse context-faithfulness verdicts",
    ),
    (
        1,
        {"type": "context-relevance"},
        {"context": CONTEXT},
        {},
        'context-relevance assertion requires a "query" variable with the user question',
    ),
    (1, {"type": "context-faithfulness"}, {"query": "q"}, {}, "Context is required for context-based assertions."),
    (
        1,
        {"type": "context-relevance"},
        {"query": "q", "context": ["a", 3]},
        {},
        "Invalid context: expected an array of strings, but found int at index 1",
    ),
    (1, {"type": "context-recall", "value": ["x"]}, {}, {}, "context-recall assertion requires a string value"),
    (
        1,
        {"type": "context-faithfulness", "rubricPrompt": "one prompt"},
        {"query": "q", "context": "c"},
        {},
        "rubricPrompt must be an array",
    ),
]


@pytest.mark.parametrize(("n", "check", "more", "replies", "error"), ERRORS)
async def test_what_promptfoo_cannot_judge_is_an_error(monkeypatch, n, check, more, replies, error):
    with GradingServer(grader(replies)) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        verdict = await judge(s, check, out(n), options=GRADER, **case(n, **more))
    assert verdict.is_error and error in str(verdict.error), verdict.error


async def test_answer_relevance_embeds_like_promptfoos_default_embedding_provider(server):
    """No provider named: promptfoo generates three questions with its grader and embeds with its default
    text-embedding-3-large at the OpenAI base URL. promptfoo 0.123.1 gave 0.947330933431342 on these replies."""
    verdict = await judge(
        server, {"type": "answer-relevance"}, LONG, vars={"question": "What is the capital of France?"}
    )
    assert (verdict.passed, verdict.details["score"]) == (True, 0.947330933431342)
    assert verdict.details["reason"] == "Relevance 0.95 is greater than threshold 0.5"
    assert verdict.details["score"] == cosine(letter_vector(PROMPT), letter_vector(FIRST_RUN["answer-relevance"]))
    assert [r["hash"] for r in grading_requests(server)] == ["d677e51fedbbeade"] * 3
    question = FIRST_RUN["answer-relevance"]
    assert server.embedding_requests == [
        {"input": t, "model": "text-embedding-3-large"} for t in [PROMPT] + [question] * 3
    ]
    assert [q["question"] for q in verdict.details["generated_questions"]] == [question] * 3
    assert verdict.details["judge"]["calls"] == 7


async def test_answer_relevance_with_a_provider_map_and_the_query_var(server):
    """promptfoo 0.123.1: {text, embedding} providers, the query var embedded, threshold 0.95: 0.9287432920695053."""
    provider = {"text": "openai:chat:grader", "embedding": "openai:embedding:emb"}
    query = "Which city is the capital of France?"
    check = {"type": "answer-relevance", "threshold": 0.95, "provider": provider}
    verdict = await judge(server, check, LONG, vars={"query": query})
    assert (verdict.passed, verdict.details["score"]) == (False, 0.9287432920695053)
    assert verdict.reason == "Relevance 0.93 is less than threshold 0.95"
    assert {r["model"] for r in server.embedding_requests} == {"emb"} and server.embedding_requests[0]["input"] == query


async def test_answer_relevance_refuses_a_chat_model_as_embedder_as_promptfoo_does(server):
    verdict = await judge(server, {"type": "answer-relevance", "provider": "openai:chat:grader"}, LONG)
    assert verdict.is_error and "is not a valid embedding provider for 'answer relevancy check'" in str(verdict.error)
    assert server.requests == [] and server.embedding_requests == []


async def test_answer_relevance_is_cached_like_any_judgement(server, tmp_path):
    cache: dict[str, Any] = {}
    use_run_cache(cache, True, tmp_path / "responses.sqlite")
    check = {"type": "answer-relevance"}
    first = await judge_graded("answer-relevance", check, LONG, context(server, cache, vars={}))
    assert (len(server.requests), len(server.embedding_requests)) == (3, 2)  # same texts embedded once
    second = await judge_graded("answer-relevance", check, LONG, context(server, cache, vars={}))
    assert (len(server.requests), len(server.embedding_requests)) == (3, 2)
    assert first.details["score"] == second.details["score"] and second.details["judge"]["cached"]


async def test_a_not_rag_check_flips_pass_and_score(server):
    verdict = await judge(server, {"type": "not-context-relevance"}, LONG, options=GRADER)
    assert (verdict.passed, verdict.details["score"], verdict.details["inverse"]) == (
        True,
        1 - 0.3333333333333333,
        True,
    )
    assert json.dumps(verdict.details)  # JSON-safe
