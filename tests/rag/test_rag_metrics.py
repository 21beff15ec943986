"""The RAG metrics equal hand-computed values on a scripted judge (real HTTP), and list every item's support."""

from __future__ import annotations

import math
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.evaluators import get
from tests.evaluators.judge.judge_support import blocks
from tests.rag.rag_support import ScriptedJudge, judge_spec, purpose

QUESTION = "What is the refund policy?"
CHUNKS = [
    "Refunds are possible within 30 days.",
    "Our stores open at 9 am.",
    "Refunds are paid to the original card.",
    "Shoes come in sizes 36 to 48.",
    "A receipt is needed for every refund.",
]
ANSWER = "You can get a refund within 30 days, in cash, at any store. Returns are free."
CLAIMS = [
    "A refund can be had within 30 days.",
    "The refund is paid in cash.",
    "Refunds are given at any store.",
    "Returns are free.",
]


def sample(**doc: Any) -> dict[str, Any]:
    """The context the runner hands an evaluator."""
    return {"input": QUESTION, "prompt": QUESTION, "doc": {"contexts": CHUNKS, **doc}, "metadata": {}}


def faithfulness_judge() -> ScriptedJudge:
    verdicts = dict(zip(CLAIMS, ["yes", "no", "idk", "yes"], strict=True))
    return ScriptedJudge(extracted={ANSWER: CLAIMS}, verdicts=verdicts)


def test_faithfulness_is_supported_claims_over_claims(serve):
    server = serve(faithfulness_judge())
    evaluator = get("faithfulness", model=judge_spec(server), pass_threshold=0.7)
    verdict = evaluator.evaluate(ANSWER, None, context=sample())
    assert verdict.score == 2 / 4  # ragas: yes, yes of yes, no, idk, yes
    assert not verdict.passed
    claims = verdict.details["claims"]
    assert [(c["claim"], c["verdict"], c["supported"]) for c in claims] == [
        (CLAIMS[0], "yes", True),
        (CLAIMS[1], "no", False),
        (CLAIMS[2], "idk", False),
        (CLAIMS[3], "yes", True),
    ]
    assert all(c["reason"].startswith("because ") for c in claims)
    assert verdict.details["supported"] == 2 and verdict.details["total"] == 4
    assert "ragas" in verdict.details["definition"]
    for unsupported in CLAIMS[1:3]:
        assert repr(unsupported) in verdict.feedback and repr(unsupported) in verdict.reason
    assert repr(CLAIMS[0]) not in verdict.feedback
    # two calls for four claims: extraction, then every claim verified at once
    assert [purpose(r) for r in server.requests] == ["claims", "verify_claims"]
    assert verdict.details["judge"]["calls"] == 2


def test_faithfulness_deepeval_counts_only_contradictions(serve):
    server = serve(faithfulness_judge())
    evaluator = get("faithfulness", model=judge_spec(server), not_in_context="faithful", pass_threshold=0.7)
    verdict = evaluator.evaluate(ANSWER, None, context=sample())
    assert verdict.score == 3 / 4 and verdict.passed
    assert repr(CLAIMS[1]) in verdict.feedback and repr(CLAIMS[2]) not in verdict.feedback


def test_the_context_is_its_own_delimited_block_never_a_reference(serve):
    server = serve(faithfulness_judge())
    get("faithfulness", model=judge_spec(server)).evaluate(ANSWER, None, context=sample())
    verify = server.requests[1]
    found = blocks(verify)
    assert [found[f"context {k}"] for k in range(1, 6)] == CHUNKS
    assert found["question"] == QUESTION
    assert "reference" not in verify["messages"][-1]["content"].lower()
    extract = blocks(server.requests[0])
    assert extract["response"] == ANSWER and not any(n.startswith("context") for n in extract)


def test_answer_relevancy_is_relevant_statements_over_statements(serve):
    statements = ["A refund is possible within 30 days.", "Our shoes are the best.", "Keep the receipt."]
    judge = ScriptedJudge(
        extracted={ANSWER: statements}, verdicts=dict(zip(statements, ["yes", "no", "idk"], strict=True))
    )
    server = serve(judge)
    verdict = get("answer_relevancy", model=judge_spec(server)).evaluate(ANSWER, None, context=sample())
    assert verdict.score == pytest.approx(2 / 3)  # DeepEval: idk counts as relevant
    assert [s["relevant"] for s in verdict.details["statements"]] == [True, False, True]
    assert repr(statements[1]) in verdict.feedback
    strict = get("answer_relevancy", model=judge_spec(server), unsure="irrelevant")
    assert strict.evaluate(ANSWER, None, context=sample()).score == pytest.approx(1 / 3)


def chunk_judge(relevant: list[bool]) -> ScriptedJudge:
    return ScriptedJudge(verdicts={c: "yes" if r else "no" for c, r in zip(CHUNKS, relevant, strict=True)})


@pytest.mark.parametrize(
    ("relevant", "expected"),
    [
        # ranks 2, 3, 5 relevant: (1/2 + 2/3 + 3/5) / 3
        ([False, True, True, False, True], (1 / 2 + 2 / 3 + 3 / 5) / 3),
        # ranks 3, 4 relevant: (1/3 + 2/4) / 2 = 0.4167, the worked example of the ragas definition
        ([False, False, True, True, False], (1 / 3 + 2 / 4) / 2),
        ([True, True, False, False, False], 1.0),
        ([False] * 5, 0.0),
    ],
)
def test_context_precision_is_mean_precision_at_k_over_relevant_chunks(serve, relevant, expected):
    server = serve(chunk_judge(relevant))
    reference = "Refunds within 30 days to the original card, with a receipt."
    verdict = get("context_precision", model=judge_spec(server)).evaluate(ANSWER, reference, context=sample())
    assert verdict.score == pytest.approx(expected)
    assert [c["relevant"] for c in verdict.details["contexts"]] == relevant
    assert [c["rank"] for c in verdict.details["contexts"]] == [1, 2, 3, 4, 5]
    assert len(server.requests) == 1  # every chunk judged in one call
    assert blocks(server.requests[0])["reference answer"] == reference


def test_context_precision_feedback_names_irrelevant_chunks_ranked_above_relevant_ones(serve):
    server = serve(chunk_judge([False, True, False, True, False]))
    verdict = get("context_precision", model=judge_spec(server), pass_threshold=0.9).evaluate(
        ANSWER, "Refunds within 30 days.", context=sample()
    )
    assert not verdict.passed
    assert "rank 1 and 3" in verdict.reason and "rank 1 and 3" in verdict.feedback  # not 5: it is ranked last


def test_context_precision_without_reference_judges_chunks_against_the_response(serve):
    server = serve(chunk_judge([True, False, False, False, False]))
    evaluator = get("context_precision", model=judge_spec(server), against="response")
    assert evaluator.evaluate(ANSWER, None, context=sample()).score == 1.0
    assert blocks(server.requests[0])["response"] == ANSWER


def test_context_recall_is_attributed_reference_statements_over_statements(serve):
    reference = "Refunds are possible within 30 days. They go to the original card. No receipt is needed."
    split = [
        ("Refunds are possible within 30 days.", "yes"),
        ("Refunds go to the original card.", "yes"),
        ("No receipt is needed.", "no"),
    ]
    server = serve(ScriptedJudge(reference_statements={reference: split}))
    verdict = get("context_recall", model=judge_spec(server)).evaluate(ANSWER, reference, context=sample())
    assert verdict.score == pytest.approx(2 / 3)
    assert [s["attributed"] for s in verdict.details["statements"]] == [True, True, False]
    assert repr("No receipt is needed.") in verdict.feedback
    assert len(server.requests) == 1


def test_hallucination_is_contradicted_contexts_over_contexts_and_lower_is_better(serve):
    contexts = ["The store opens at 9 am.", "Refunds take 30 days.", "Shoes are leather."]
    judge = ScriptedJudge(verdicts=dict(zip(contexts, ["yes", "no", "yes"], strict=True)))
    server = serve(judge)
    evaluator = get("hallucination", model=judge_spec(server), context="doc.context")
    verdict = evaluator.evaluate("Refunds take a year.", None, context=sample(context=contexts))
    assert verdict.score == pytest.approx(1 / 3)
    assert verdict.passed  # at most 0.5 passes
    assert [c["contradicted"] for c in verdict.details["contexts"]] == [False, True, False]
    assert "2" in verdict.feedback
    assert evaluator.higher_is_better is False
    judge.verdicts[contexts[0]] = "no"
    worse = evaluator.evaluate("Refunds take a year.", None, context=sample(context=contexts))
    assert worse.score == pytest.approx(2 / 3) and not worse.passed


def test_no_claims_is_faithful(serve):
    server = serve(ScriptedJudge(extracted={"Hello!": []}))
    verdict = get("faithfulness", model=judge_spec(server)).evaluate("Hello!", None, context=sample())
    assert verdict.score == 1.0 and verdict.passed and verdict.details["note"] == "the answer makes no claims"
    assert len(server.requests) == 1


# -- judge errors are error verdicts, never zeros --------------------------------------------------------------------


def test_a_failing_judge_server_is_an_error_verdict(serve):
    server = serve({"status": 500, "error": "down"})
    verdict = get("faithfulness", model=judge_spec(server), max_attempts=1).evaluate(ANSWER, None, context=sample())
    assert verdict.is_error and math.isnan(verdict.score) and "HTTP 500" in verdict.error
    assert verdict.details["judges"][0]["purpose"] == "claims"


def test_a_reply_missing_a_verdict_is_an_error_verdict_with_the_raw_reply(serve):
    judge = faithfulness_judge()

    def reply(request: dict[str, Any]) -> Any:
        if purpose(request) == "verify_claims":
            return '{"verdicts": [{"index": 1, "verdict": "yes", "reason": "r"}]}'
        return judge(request)

    server = serve(reply)
    verdict = get("faithfulness", model=judge_spec(server)).evaluate(ANSWER, None, context=sample())
    assert verdict.is_error and "no verdict for item(s) 2, 3, 4 of 4" in verdict.error
    assert verdict.details["judges"][1]["reply"].startswith('{"verdicts"')


def test_an_unknown_verdict_is_an_error(serve):
    server = serve(lambda r: '{"verdicts": [{"index": 1, "verdict": "maybe", "reason": ""}]}')
    evaluator = get("hallucination", model=judge_spec(server))
    verdict = evaluator.evaluate(ANSWER, None, context={"doc": {"contexts": ["one chunk"]}})
    assert verdict.is_error and "'maybe'" in verdict.error


def test_a_missing_context_field_is_an_error_naming_the_option(serve):
    server = serve(faithfulness_judge())
    verdict = get("faithfulness", model=judge_spec(server)).evaluate(ANSWER, None, context={"doc": {"text": "x"}})
    assert verdict.is_error and "context='doc.contexts'" in verdict.error
    assert server.requests == []


def test_metrics_needing_a_reference_say_so(serve):
    server = serve(chunk_judge([True] * 5))
    verdict = get("context_recall", model=judge_spec(server)).evaluate(ANSWER, None, context=sample())
    assert verdict.is_error and "no reference answer" in verdict.error


def test_every_option_has_a_description():
    from assay.evaluators.registry import get_class

    for name in ("faithfulness", "answer_relevancy", "context_precision", "context_recall", "hallucination"):
        fields = get_class(name).Options.model_fields
        assert "model" in fields and ("context" in fields or name == "answer_relevancy")
        assert all(info.description for info in fields.values()), name


def test_answer_relevancy_without_a_question_is_an_error(serve):
    server = serve(faithfulness_judge())
    verdict = get("answer_relevancy", model=judge_spec(server)).evaluate(ANSWER, None, context={"doc": {}})
    assert verdict.is_error and "needs the task's input" in verdict.error


def test_one_judge_model_only():
    with pytest.raises(ConfigError, match="model"):
        get("faithfulness", model=["openai:a", "openai:b"])


def test_a_bad_context_option_names_the_key():
    with pytest.raises(ConfigError, match="context"):
        get("faithfulness", model="openai:gpt-4o", context="contexts")


def test_the_batch_path_gives_the_per_sample_verdicts(serve):
    server = serve(faithfulness_judge())
    evaluator = get("faithfulness", model=judge_spec(server))
    contexts = [sample(), sample(), {"doc": {}}]
    batch = evaluator.evaluate_batch([ANSWER, ANSWER, ANSWER], None, contexts=contexts)
    one = [evaluator.evaluate(ANSWER, None, context=c) for c in contexts]
    assert [v.score for v in batch[:2]] == [v.score for v in one[:2]] == [0.5, 0.5]
    assert batch[2].is_error and one[2].is_error and batch[2].error == one[2].error
