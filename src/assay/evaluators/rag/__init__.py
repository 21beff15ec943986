"""RAG metrics judged claim by claim: faithfulness, answer_relevancy, context_precision, context_recall, hallucination.

Each is a judge evaluator (the ``llm_judge`` machinery: retries, the run's cache switch, delimited untrusted
material, every call recorded) whose verdict lists the items judged with the judge's verdict and reason on each,
and whose feedback names the items that count against the output. Whose definition each follows is in its module.
The registry imports the one module a task names; the classes are importable from here too, loading on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazyexports import lazy_exports

if TYPE_CHECKING:
    from assay.evaluators.rag.answer_relevancy import AnswerRelevancy, AnswerRelevancyOptions
    from assay.evaluators.rag.context_precision import ContextPrecision, ContextPrecisionOptions
    from assay.evaluators.rag.context_recall import ContextRecall, ContextRecallOptions
    from assay.evaluators.rag.faithfulness import Faithfulness, FaithfulnessOptions
    from assay.evaluators.rag.hallucination import Hallucination, HallucinationOptions

_LAZY: dict[str, str] = {
    "AnswerRelevancy": ".answer_relevancy",
    "AnswerRelevancyOptions": ".answer_relevancy",
    "ContextPrecision": ".context_precision",
    "ContextPrecisionOptions": ".context_precision",
    "ContextRecall": ".context_recall",
    "ContextRecallOptions": ".context_recall",
    "Faithfulness": ".faithfulness",
    "FaithfulnessOptions": ".faithfulness",
    "Hallucination": ".hallucination",
    "HallucinationOptions": ".hallucination",
}

__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "AnswerRelevancy",
    "AnswerRelevancyOptions",
    "ContextPrecision",
    "ContextPrecisionOptions",
    "ContextRecall",
    "ContextRecallOptions",
    "Faithfulness",
    "FaithfulnessOptions",
    "Hallucination",
    "HallucinationOptions",
]
