"""The handler of every assertion type judged here (promptfoo's ``ASSERTION_HANDLERS``, deterministic half)."""

from __future__ import annotations

from typing import Any

from assay.tasks.checks import runtime, scripts, sql, structured, textmetrics, textual, toolcalls, xmlcheck

HANDLERS: dict[str, Any] = {
    "equals": textual.equals,
    "contains": textual.contains,
    "icontains": textual.contains,
    "contains-any": textual.contains_many,
    "icontains-any": textual.contains_many,
    "contains-all": textual.contains_many,
    "icontains-all": textual.contains_many,
    "starts-with": textual.starts_with,
    "regex": textual.regex,
    "word-count": textual.word_count,
    "is-refusal": textual.is_refusal,
    "is-json": structured.is_json,
    "contains-json": structured.contains_json,
    "is-html": structured.is_html,
    "contains-html": structured.contains_html,
    "is-xml": xmlcheck.xml,
    "contains-xml": xmlcheck.xml,
    "is-sql": sql.is_sql,
    "contains-sql": sql.contains_sql,
    "levenshtein": textmetrics.levenshtein,
    "bleu": textmetrics.bleu,
    "gleu": textmetrics.gleu,
    "rouge-n": textmetrics.rouge_n,
    "is-valid-openai-tools-call": toolcalls.tools_call,
    "is-valid-openai-function-call": toolcalls.function_call,
    "tool-call-f1": toolcalls.tool_call_f1,
    "finish-reason": runtime.finish_reason,
    "latency": runtime.latency,
    "cost": runtime.cost,
    "perplexity": runtime.perplexity,
    "perplexity-score": runtime.perplexity_score,
    "guardrails": runtime.guardrails,
    "similar": runtime.similar,
    "similar:cosine": runtime.similar,
    "similar:dot": runtime.similar,
    "similar:euclidean": runtime.similar,
    "javascript": scripts.javascript,
    "python": scripts.python,
}
