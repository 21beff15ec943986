"""Typed factories of the built-in evaluators, one per name: ``exact_match(ignore_case=True)`` is
``get("exact_match", ignore_case=True)`` with every option a keyword a type checker and an IDE know.

Generated from each evaluator's ``Options`` by ``python -m assay.reference.factories``; do not edit by hand.
Import them from :mod:`assay.evaluators`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from assay.evaluators.base import Evaluator
from assay.evaluators.registry import get

if TYPE_CHECKING:
    from typing import Literal

    from pydantic import BaseModel

    from assay.evaluators._custom import Custom
    from assay.evaluators._numeric import Numeric
    from assay.evaluators._schema import Schema
    from assay.evaluators.agent.tool_usage import ToolUsage
    from assay.evaluators.code.code_exec import CodeExec
    from assay.evaluators.environment.env_check import EnvCheck
    from assay.evaluators.environment.env_files import EnvFiles
    from assay.evaluators.environment.state_match import StateMatch
    from assay.evaluators.generation import Bleu, Chrf, Rouge, Rouge1, Rouge2, RougeL, RougeLsum, Ter
    from assay.evaluators.judge.evaluator import LLMJudge
    from assay.evaluators.judge.options import RequireCalibration
    from assay.evaluators.loglikelihood.choice import MC1, MC2, Acc, AccBytes, AccMutualInfo, AccNorm
    from assay.evaluators.loglikelihood.perplexity import BitsPerByte, BytePerplexity, Perplexity, WordPerplexity
    from assay.evaluators.rag.answer_relevancy import AnswerRelevancy
    from assay.evaluators.rag.context_precision import ContextPrecision
    from assay.evaluators.rag.context_recall import ContextRecall
    from assay.evaluators.rag.faithfulness import Faithfulness
    from assay.evaluators.rag.hallucination import Hallucination
    from assay.evaluators.semantic import SemanticSimilarity
    from assay.evaluators.structured import JsonMatch
    from assay.evaluators.text.contains import Contains
    from assay.evaluators.text.exact_match import ExactMatch
    from assay.evaluators.text.fuzzy_match import FuzzyMatch
    from assay.evaluators.text.regex import Regex
    from assay.evaluators.text.token_f1 import TokenF1

F = TypeVar("F", bound=Callable[..., Evaluator])


def _builds(name: str) -> Callable[[F], F]:
    """Turn a factory's declaration into ``get(name, **options)`` with the options the caller gave.

    The declaration is what a user, an IDE and a type checker see (the options, their types, defaults and meaning);
    the call passes on only the options given, so an evaluator that reads which options were set (tool_usage's
    ``expected_calls``) behaves exactly as from a task file. A wrong keyword is a TypeError, as for any function;
    a wrong value the evaluator's ConfigError.
    """

    def decorate(declared: F) -> F:
        signature = inspect.signature(declared)

        @functools.wraps(declared)
        def build(*args: Any, **options: Any) -> Evaluator:
            try:
                given = signature.bind(*args, **options).arguments
            except TypeError as err:
                raise TypeError(f"{declared.__name__}(): {err}") from None
            return get(name, **given)

        return cast(F, build)

    return decorate


@_builds("exact_match")
def exact_match(
    *,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
    ignore_whitespace: bool = False,
    ignore_articles: bool = False,
    strip: bool = False,
    regexes_to_ignore: list[str] = [],  # noqa: B006
) -> ExactMatch:
    """Output equals an acceptable answer after normalisation (lm-eval / HF `evaluate` semantics).

    The ExactMatch evaluator, as ``get("exact_match", **options)`` builds it from the options given.

    Args:
        ignore_case: lower-case both texts before comparing, so 'Paris' equals 'paris' (default False).
        ignore_punctuation: delete ASCII punctuation (Python's string.punctuation) from both texts; curly quotes, dashes
            and other non-ASCII marks stay (default False).
        ignore_numbers: delete the digits 0-9 from both texts (use it when numbers should not decide a match) (default
            False).
        ignore_whitespace: collapse each run of whitespace (line breaks too) to one space and trim both ends (default
            False).
        ignore_articles: drop the English articles 'a', 'an' and 'the' as whole words, as SQuAD's scoring does (default
            False).
        strip: trim whitespace from both ends of both texts, after the other steps (default False).
        regexes_to_ignore: regular expressions whose matches are deleted from both texts first, before the other steps
            (e.g. '^Answer:\\s*') (default []).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("fuzzy_match")
def fuzzy_match(
    *,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
    ignore_whitespace: bool = False,
    ignore_articles: bool = False,
    strip: bool = False,
    regexes_to_ignore: list[str] = [],  # noqa: B006
    algorithm: Literal[
        "ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "levenshtein", "jaro_winkler"
    ] = "ratio",
    threshold: float = 0.8,
    workers: int = 1,
) -> FuzzyMatch:
    """Similarity in [0, 1] (rapidfuzz) of the output to the closest acceptable answer; passes at ``threshold``.

    The FuzzyMatch evaluator, as ``get("fuzzy_match", **options)`` builds it from the options given.

    Args:
        ignore_case: lower-case both texts before comparing, so 'Paris' equals 'paris' (default False).
        ignore_punctuation: delete ASCII punctuation (Python's string.punctuation) from both texts; curly quotes, dashes
            and other non-ASCII marks stay (default False).
        ignore_numbers: delete the digits 0-9 from both texts (use it when numbers should not decide a match) (default
            False).
        ignore_whitespace: collapse each run of whitespace (line breaks too) to one space and trim both ends (default
            False).
        ignore_articles: drop the English articles 'a', 'an' and 'the' as whole words, as SQuAD's scoring does (default
            False).
        strip: trim whitespace from both ends of both texts, after the other steps (default False).
        regexes_to_ignore: regular expressions whose matches are deleted from both texts first, before the other steps
            (e.g. '^Answer:\\s*') (default []).
        algorithm: rapidfuzz's ``ratio`` (Indel similarity, default), ``partial_ratio`` (the best-matching substring of
            the longer text, for an answer inside a longer output), ``token_sort_ratio`` (word order ignored),
            ``token_set_ratio`` (word sets, so repeated or extra words cost little), ``levenshtein`` (normalised
            Levenshtein similarity) or ``jaro_winkler`` (favours a shared beginning; short strings, names) (default
            "ratio").
        threshold: the similarity (0–1, after normalisation, against the closest answer) at or above which a sample
            passes; raise it to demand near-exact text (default 0.8).
        workers: threads rapidfuzz scores a batch with (``-1``: one per core; default 1); the scores are the same, only
            batch scoring of large runs gets faster (default 1).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("contains")
def contains(
    *,
    mode: Literal["all", "any", "none"] = "all",
    regex: bool = False,
    ignore_case: bool = False,
    substrings: list[str] | None = None,
) -> Contains:
    """The output contains all / any / none of a list of substrings (or regular expressions).

    The Contains evaluator, as ``get("contains", **options)`` builds it from the options given.

    Args:
        mode: ``all`` items must be present (default; partial credit: the share found), ``any`` one of them (a full
            pass, 1.0, whichever is found), or ``none`` of them (the share absent) (default "all").
        regex: the items are regular expressions (searched for); in ``substrings`` they are checked when built (default
            False).
        ignore_case: plain items compare by Unicode case folding (``str.casefold``), regexes with re.IGNORECASE (default
            False).
        substrings: the items; when unset, the expected value(s) are the items (default None).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("regex")
def regex(
    *,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
    ignore_whitespace: bool = False,
    ignore_articles: bool = False,
    strip: bool = False,
    regexes_to_ignore: list[str] = [],  # noqa: B006
    pattern: str,
    mode: Literal["search", "fullmatch"] = "search",
    multiline: bool = False,
    dotall: bool = False,
    group: int | str | None = None,
) -> Regex:
    """The output matches a regular expression; with ``group``, that group's capture must equal the expected answer.

    The Regex evaluator, as ``get("regex", **options)`` builds it from the options given.

    Args:
        ignore_case: match the pattern case-insensitively (re.IGNORECASE) and compare a captured group with the answer
            in lower case (default False).
        ignore_punctuation: delete ASCII punctuation (Python's string.punctuation) from both texts; curly quotes, dashes
            and other non-ASCII marks stay (default False).
        ignore_numbers: delete the digits 0-9 from both texts (use it when numbers should not decide a match) (default
            False).
        ignore_whitespace: collapse each run of whitespace (line breaks too) to one space and trim both ends (default
            False).
        ignore_articles: drop the English articles 'a', 'an' and 'the' as whole words, as SQuAD's scoring does (default
            False).
        strip: trim whitespace from both ends of both texts, after the other steps (default False).
        regexes_to_ignore: regular expressions whose matches are deleted from both texts first, before the other steps
            (e.g. '^Answer:\\s*') (default []).
        pattern: the regular expression (Python re syntax), checked when the task loads (required).
        mode: 'search' passes when the pattern matches anywhere in the output; 'fullmatch' only when it matches the
            whole output (default "search").
        multiline: re.MULTILINE: ^ and $ also match at each line's start and end (default False).
        dotall: re.DOTALL: . also matches a newline, so a pattern can span lines (default False).
        group: a group number or name whose captured text must equal the expected answer (after the normalisation
            options); null passes on any match and ignores the expected value (default None).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("token_f1")
def token_f1(
    *,
    threshold: float = 0.5,
) -> TokenF1:
    """SQuAD token F1: overlap of the bag of words after SQuAD normalisation, best over acceptable answers.

    The TokenF1 evaluator, as ``get("token_f1", **options)`` builds it from the options given.

    Args:
        threshold: the SQuAD token F1 (0–1, against the best answer) at or above which a sample passes (default 0.5).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("numeric")
def numeric(
    *,
    policy: Literal["last", "first"] = "last",
    decimal: Literal[".", ","] = ".",
    percent: Literal["as_number", "as_fraction", "either"] | None = None,
    percent_as_fraction: bool = False,
    times_ten: bool = True,
    space_groups: bool = True,
    abs_tol: float = 0.0,
    rel_tol: float = 1e-09,
) -> Numeric:
    """The answer number in the output (the last one, or the first) equals the expected number within tolerance.

    The Numeric evaluator, as ``get("numeric", **options)`` builds it from the options given.

    Args:
        policy: the answer is the ``last`` number (default, as after a chain of thought) or the ``first`` (default
            "last").
        decimal: the decimal mark, '.' (1,234.5) or ',' (1.234,5) (default ".").
        percent: how a percentage ('45%', in the output or a string expected value) compares: ``either`` (default) as 45
            or as 0.45, whichever the expected value is; ``as_number`` as 45 only; ``as_fraction`` as 0.45 only.
            ``either`` keeps every pass of ``as_number`` (the rule before it was an option) and adds the answers that
            give an expected fraction as a percentage ('about 12%' for 0.12). Numbers without '%' have one reading
            (default None).
        percent_as_fraction: the older spelling of ``percent: as_fraction`` (true reads '45%' as 0.45 only); kept so old
            task files load, and refused beside any other ``percent`` (default False).
        times_ten: read '2.1×10^5', '2.1 x 10**5', '3×10⁸' and '10^6' as one number each (default True).
        space_groups: read '1 234 567' with ordinary spaces as one number; turn it off when outputs list numbers
            separated by spaces ('100 200 300'). No-break and thin spaces always group digits (default True).
        abs_tol: as in :func:`math.isclose` (defaults 0 and 1e-9) (default 0.0).
        rel_tol: as in :func:`math.isclose` (defaults 0 and 1e-9) (default 1e-09).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("json_match")
def json_match(
    *,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
    ignore_whitespace: bool = False,
    ignore_articles: bool = False,
    strip: bool = False,
    regexes_to_ignore: list[str] = [],  # noqa: B006
    in_mask: list[str] | None = None,
    out_mask: list[str] | None = None,
    in_mask_pattern: list[str] | None = None,
    out_mask_pattern: list[str] | None = None,
    ignore_list_order: bool = False,
    threshold: float = 1.0,
    abs_tol: float = 0.0,
    rel_tol: float = 0.0,
    penalize_extra: bool = False,
    extract: Literal["strict", "fenced", "anywhere"] = "anywhere",
) -> JsonMatch:
    """Compares output JSON with the expected structure leaf by leaf; score = share of expected fields equal.

    The JsonMatch evaluator, as ``get("json_match", **options)`` builds it from the options given.

    Args:
        ignore_case: lower-case both texts before comparing, so 'Paris' equals 'paris' (default False).
        ignore_punctuation: delete ASCII punctuation (Python's string.punctuation) from both texts; curly quotes, dashes
            and other non-ASCII marks stay (default False).
        ignore_numbers: delete the digits 0-9 from both texts (use it when numbers should not decide a match) (default
            False).
        ignore_whitespace: collapse each run of whitespace (line breaks too) to one space and trim both ends (default
            False).
        ignore_articles: drop the English articles 'a', 'an' and 'the' as whole words, as SQuAD's scoring does (default
            False).
        strip: trim whitespace from both ends of both texts, after the other steps (default False).
        regexes_to_ignore: regular expressions whose matches are deleted from both texts first, before the other steps
            (e.g. '^Answer:\\s*') (default []).
        in_mask: compare only the fields with these names, at any depth and with what is under them (a key also selects
            its plural and numbered forms: 'answer' selects 'answers' and 'answer_2'); null compares every field
            (default None).
        out_mask: leave out the fields with these names (same matching as in_mask), e.g. ids or timestamps that may
            differ (default None).
        in_mask_pattern: like in_mask, with regular expressions that must match a whole field name (default None).
        out_mask_pattern: like out_mask, with regular expressions that must match a whole field name (default None).
        ignore_list_order: pair each expected list element with its best match in the output list, in any order (default
            False).
        threshold: the share of expected fields that must be equal to pass (1: every field) (default 1.0).
        abs_tol: numbers within this absolute difference are equal (math.isclose's abs_tol) (default 0.0).
        rel_tol: numbers within this fraction of the larger one are equal (math.isclose's rel_tol; 0.01: 1 %) (default
            0.0).
        penalize_extra: count each field the output has beyond the expected ones as an unequal field (else extras are
            only reported) (default False).
        extract: where to find the JSON in a text output: 'strict' the whole text only, 'fenced' also a Markdown code
            fence, 'anywhere' also the first JSON object or array inside prose (default "anywhere").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("schema")
def schema(
    *,
    json_schema: dict[str, Any] | bool | None = None,
    model: str | type[BaseModel] | None = None,
    check_formats: bool = False,
    extract: Literal["strict", "fenced", "anywhere"] = "anywhere",
) -> Schema:
    """Validates the output's JSON against a JSON Schema (draft 2020-12) or a Pydantic model; score 1 or 0.

    The Schema evaluator, as ``get("schema", **options)`` builds it from the options given.

    Args:
        json_schema: the JSON Schema (draft 2020-12) the output's JSON must satisfy, written inline (default None).
        model: instead of json_schema, a Pydantic model class (or its path 'package.module:Model') the output's JSON
            must validate as (default None).
        check_formats: also enforce the schema's 'format' keywords (email, ipv4, date …, those jsonschema can check
            here), which JSON Schema otherwise treats as annotations (default False).
        extract: where to find the JSON in a text output: 'strict' the whole text only, 'fenced' also a Markdown code
            fence, 'anywhere' also the first JSON object or array inside prose (default "anywhere").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("tool_usage")
def tool_usage(
    *,
    required: list[str] = [],  # noqa: B006
    forbidden: list[str] = [],  # noqa: B006
    min_calls: int | None = None,
    max_calls: int | None = None,
    args: dict[str, dict[str, Any] | list[dict[str, Any]]] = {},  # noqa: B006
    args_match: Literal["subset", "exact"] = "subset",
    order: Literal["any", "subsequence", "exact"] = "any",
    expected_sequence: list[str] | None = None,
    penalize_extra: bool = False,
    output_contains: list[str] = [],  # noqa: B006
    weights: dict[str, float] = {},  # noqa: B006
    threshold: float | None = None,
    expected_calls: list[dict[str, Any]] | None = None,
    match: Literal["strict", "unordered", "subset", "superset", "in_order"] | None = None,
    compare: dict[str, dict[str, Any]] = {},  # noqa: B006
    count_submit: bool = False,
) -> ToolUsage:
    """Judges an agent's tool calls (the executed ones, for an agent loop): required/forbidden tools, call counts,
    arguments, order, extra calls, what the final text says, and ``expected_calls`` under a ``match`` mode (strict,
    unordered, subset, superset, in_order) with per-argument comparators (``compare``). ``order`` uses
    ``expected_sequence``, or the ``required`` list when not given; ``penalize_extra`` treats tools outside required,
    expected_sequence, args and expected_calls as unexpected. The score is the weighted mean of the checks' credit
    (``weights`` by kind or by ``kind:subject``; when every weight is 0, the score is 1 if all checks pass, else 0).

    The ToolUsage evaluator, as ``get("tool_usage", **options)`` builds it from the options given.

    Args:
        required: Tools that must be called at least once, and succeed (a call that failed does not count); one check
            per tool (default []).
        forbidden: Tools that must never be called; one check each (default []).
        min_calls: The fewest tool calls the output may make (default None).
        max_calls: The most tool calls the output may make (default None).
        args: Per tool, the arguments some call of it must carry (a mapping, or a list of mappings that must each be
            matched by a call); compared as args_match and compare say (default {}).
        args_match: subset: a call may carry arguments besides the expected ones; exact: exactly the expected ones
            (default "subset").
        order: Order of the calls named by expected_sequence (else required): any; subsequence (in this order, other
            calls between allowed); exact (exactly these calls in this order) (default "any").
        expected_sequence: The tool names that order is checked against (default None).
        penalize_extra: Fail a check when a tool is called that no option expects (required, args, sequence) (default
            False).
        output_contains: Substrings the final text answer must contain; one check each (default []).
        weights: Weight of each check in the score, by kind (required, args, order, match, …) or by 'kind:subject';
            unlisted checks weigh 1 (default {}).
        threshold: Pass when the weighted score reaches this; unset, the verdict passes only if every check passes
            (default None).
        expected_calls: The calls every sample must make (name and arguments), as a per-sample expected list says it;
            implies required, args and exact order unless those options are set beside it (default None).
        match: Judge the expected calls as one sequence with partial credit: strict, unordered, subset, superset or
            in_order (unset: the separate checks above) (default None).
        compare: Per tool (or '*'), per argument (dotted when nested): how values compare, exact, ignore, numeric (with
            a tolerance), regex, or a dotted-path function (default {}).
        count_submit: Count the submit call that ended an agent's trajectory as a tool call (it is the answer) (default
            False).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("custom")
def custom(
    *,
    fn: str | Callable[..., Any],
    kwargs: dict[str, Any] = {},  # noqa: B006
    threshold: float = 0.5,
    scale: Literal["unit", "own"] = "unit",
    at_least: float | None = None,
    at_most: float | None = None,
) -> Custom:
    """Judges with your own function and normalises whatever it returns into a Verdict.

    The Custom evaluator, as ``get("custom", **options)`` builds it from the options given.

    Args:
        fn: the check: a dotted path 'package.module:function' (importable from where assay runs) or, from Python, the
            callable itself; called as fn(output, expected) (required).
        kwargs: a mapping handed to the function's 'options' parameter, to reuse one function with settings (default
            {}).
        threshold: the score (0–1) at or above which a returned number, or a dict without 'passed', passes (default
            0.5).
        scale: 'unit': the function returns scores in [0, 1]; 'own': a metric on its own scale (any finite number, e.g.
            a length), averaged and given an interval as it is, never clipped (default "unit").
        at_least: scale 'own': a value passes when it is at least this (unset: no lower bound) (default None).
        at_most: scale 'own': a value passes when it is at most this (unset: no upper bound) (default None).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("llm_judge")
def llm_judge(
    *,
    model: str | dict[str, Any] | list[str | dict[str, Any]],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    structured_output: bool = True,
    cache: bool | None = None,
    cache_path: str | None = None,
    max_attempts: int = 4,
    initial_backoff_s: float = 0.5,
    timeout_s: float = 60.0,
    concurrency: int = 8,
    require_calibration: RequireCalibration | None = None,
    criteria: str,
    rubric: str | None = None,
    scale: str | dict[str, float] = "binary",
    pass_threshold: float = 0.5,
    reference: str | None = "target",
    include_input: bool = True,
    transcript: bool = False,
    mode: Literal["grade", "pairwise"] = "grade",
    baseline: str = "output_b",
    combine: Literal["mean", "majority"] = "mean",
    samples: int = 1,
    evaluation_steps: bool | list[str] = False,
    min_judges: int | None = None,
    score_from: Literal["reply", "logprobs"] = "reply",
    top_logprobs: int = 20,
) -> LLMJudge:
    """A judge model grades the output against criteria on a scale, or compares it pairwise with a baseline.

    The LLMJudge evaluator, as ``get("llm_judge", **options)`` builds it from the options given.

    Args:
        model: the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}), or a list
            of them; never a secret (name an environment variable: api_key_env) (required).
        temperature: the judge's sampling temperature (default 0.0).
        max_tokens: the most tokens a judge reply may hold (default None).
        structured_output: send a strict JSON-schema response_format (JSON mode, then plain text, where a server
            refuses) (default True).
        cache: answer a judgement already made from the SQLite response cache: null follows the run's cache switch (off
            unless --cache), true or false decides for this judge (default None).
        cache_path: the cache file (default: the run's) (default None).
        max_attempts: attempts per judge call (retries on 429/5xx) (default 4).
        initial_backoff_s: the first retry's wait in seconds (default 0.5).
        timeout_s: seconds one judge call may take (default 60.0).
        concurrency: outputs judged at once in evaluate_batch (default 8).
        require_calibration: mark this judge's figures uncalibrated unless a calibration record of this very judge (same
            model, prompt hash, scale, options) reaches min_kappa: {min_kappa: 0.6, records: FILE} (default None).
        criteria: what the judge checks the output against (required).
        rubric: how to grade: what each grade means (default None).
        scale: 'binary', '1-5', '1-10', '0-1', or labels with their scores {label: score} (default "binary").
        pass_threshold: the normalised score (in [0, 1]) a verdict needs to pass (default 0.5).
        reference: the reference answer shown to the judge: 'target', 'doc.FIELD' or null (default "target").
        include_input: show the judge the task's input (default True).
        transcript: show the judge an agent's whole transcript, each message labelled and delimited (tool results are
            untrusted data like the output), not only its final output (default False).
        mode: 'grade' on the scale, or 'pairwise' against a baseline output (default "grade").
        baseline: pairwise: the baseline output, 'output_b' (a key of expected), 'target' or 'doc.FIELD' (default
            "output_b").
        combine: how several judges' scores combine (default "mean").
        samples: judge n times (temperature > 0) and average (default 1).
        evaluation_steps: G-Eval steps: true to have the judge write them once, or the steps themselves (default False).
        min_judges: judges that must give a usable judgement (default: all), else an error (default None).
        score_from: 'reply': the grade the judge wrote; 'logprobs': G-Eval's probability-weighted score, the sum of each
            grade times its probability at the grade's token (asks the server for logprobs; integer scales) (default
            "reply").
        top_logprobs: with score_from: logprobs, how many alternatives per token to ask for (default 20).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("faithfulness")
def faithfulness(
    *,
    model: str | dict[str, Any],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    structured_output: bool = True,
    cache: bool | None = None,
    cache_path: str | None = None,
    max_attempts: int = 4,
    initial_backoff_s: float = 0.5,
    timeout_s: float = 60.0,
    concurrency: int = 8,
    require_calibration: RequireCalibration | None = None,
    pass_threshold: float = 0.5,
    include_input: bool = True,
    context: str = "doc.contexts",
    not_in_context: Literal["unsupported", "faithful"] = "unsupported",
) -> Faithfulness:
    """The share of the answer's claims that the retrieved context supports (ragas Faithfulness).

    The Faithfulness evaluator, as ``get("faithfulness", **options)`` builds it from the options given.

    Args:
        model: the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}); never a
            secret (name an environment variable: api_key_env) (required).
        temperature: the judge's sampling temperature (default 0.0).
        max_tokens: the most tokens a judge reply may hold (default None).
        structured_output: send a strict JSON-schema response_format (JSON mode, then plain text, where a server
            refuses) (default True).
        cache: answer a judgement already made from the SQLite response cache: null follows the run's cache switch (off
            unless --cache), true or false decides for this judge (default None).
        cache_path: the cache file (default: the run's) (default None).
        max_attempts: attempts per judge call (retries on 429/5xx) (default 4).
        initial_backoff_s: the first retry's wait in seconds (default 0.5).
        timeout_s: seconds one judge call may take (default 60.0).
        concurrency: outputs judged at once in evaluate_batch (default 8).
        require_calibration: mark this judge's figures uncalibrated unless a calibration record of this very judge (same
            model, prompt hash, scale, options) reaches min_kappa: {min_kappa: 0.6, records: FILE} (default None).
        pass_threshold: the score a verdict needs to pass (at least this) (default 0.5).
        include_input: show the judge the task's input (the question) beside the material it checks (default True).
        context: where the retrieved context is: 'doc.FIELD' (a field of the dataset row) or 'metadata.FIELD' (of the
            sample's metadata); a list of chunks (strings, or objects shown as JSON) or one string. The judge reads it
            as its own delimited block, one per chunk, never as a reference answer (default "doc.contexts").
        not_in_context: a claim the context neither supports nor contradicts: 'unsupported' counts it against the answer
            (ragas), 'faithful' counts only contradicted claims against it (DeepEval's default) (default "unsupported").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("answer_relevancy")
def answer_relevancy(
    *,
    model: str | dict[str, Any],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    structured_output: bool = True,
    cache: bool | None = None,
    cache_path: str | None = None,
    max_attempts: int = 4,
    initial_backoff_s: float = 0.5,
    timeout_s: float = 60.0,
    concurrency: int = 8,
    require_calibration: RequireCalibration | None = None,
    pass_threshold: float = 0.5,
    include_input: bool = True,
    unsure: Literal["relevant", "irrelevant"] = "relevant",
) -> AnswerRelevancy:
    """The share of the answer's statements relevant to the question (DeepEval's answer relevancy).

    The AnswerRelevancy evaluator, as ``get("answer_relevancy", **options)`` builds it from the options given.

    Args:
        model: the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}); never a
            secret (name an environment variable: api_key_env) (required).
        temperature: the judge's sampling temperature (default 0.0).
        max_tokens: the most tokens a judge reply may hold (default None).
        structured_output: send a strict JSON-schema response_format (JSON mode, then plain text, where a server
            refuses) (default True).
        cache: answer a judgement already made from the SQLite response cache: null follows the run's cache switch (off
            unless --cache), true or false decides for this judge (default None).
        cache_path: the cache file (default: the run's) (default None).
        max_attempts: attempts per judge call (retries on 429/5xx) (default 4).
        initial_backoff_s: the first retry's wait in seconds (default 0.5).
        timeout_s: seconds one judge call may take (default 60.0).
        concurrency: outputs judged at once in evaluate_batch (default 8).
        require_calibration: mark this judge's figures uncalibrated unless a calibration record of this very judge (same
            model, prompt hash, scale, options) reaches min_kappa: {min_kappa: 0.6, records: FILE} (default None).
        pass_threshold: the score a verdict needs to pass (at least this) (default 0.5).
        include_input: show the judge the task's input (the question) beside the material it checks (default True).
        unsure: a statement the judge finds ambiguous ('idk'): 'relevant' counts it for the answer (DeepEval),
            'irrelevant' against it (default "relevant").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("context_precision")
def context_precision(
    *,
    model: str | dict[str, Any],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    structured_output: bool = True,
    cache: bool | None = None,
    cache_path: str | None = None,
    max_attempts: int = 4,
    initial_backoff_s: float = 0.5,
    timeout_s: float = 60.0,
    concurrency: int = 8,
    require_calibration: RequireCalibration | None = None,
    pass_threshold: float = 0.5,
    include_input: bool = True,
    context: str = "doc.contexts",
    against: Literal["reference", "response"] = "reference",
) -> ContextPrecision:
    """Mean precision@k over the ranks of the relevant retrieved chunks (ragas context precision).

    The ContextPrecision evaluator, as ``get("context_precision", **options)`` builds it from the options given.

    Args:
        model: the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}); never a
            secret (name an environment variable: api_key_env) (required).
        temperature: the judge's sampling temperature (default 0.0).
        max_tokens: the most tokens a judge reply may hold (default None).
        structured_output: send a strict JSON-schema response_format (JSON mode, then plain text, where a server
            refuses) (default True).
        cache: answer a judgement already made from the SQLite response cache: null follows the run's cache switch (off
            unless --cache), true or false decides for this judge (default None).
        cache_path: the cache file (default: the run's) (default None).
        max_attempts: attempts per judge call (retries on 429/5xx) (default 4).
        initial_backoff_s: the first retry's wait in seconds (default 0.5).
        timeout_s: seconds one judge call may take (default 60.0).
        concurrency: outputs judged at once in evaluate_batch (default 8).
        require_calibration: mark this judge's figures uncalibrated unless a calibration record of this very judge (same
            model, prompt hash, scale, options) reaches min_kappa: {min_kappa: 0.6, records: FILE} (default None).
        pass_threshold: the score a verdict needs to pass (at least this) (default 0.5).
        include_input: show the judge the task's input (the question) beside the material it checks (default True).
        context: where the retrieved context is: 'doc.FIELD' (a field of the dataset row) or 'metadata.FIELD' (of the
            sample's metadata); a list of chunks (strings, or objects shown as JSON) or one string. The judge reads it
            as its own delimited block, one per chunk, never as a reference answer (default "doc.contexts").
        against: what a chunk must be useful for: 'reference', the metric's expected answer (ragas with reference,
            DeepEval), or 'response', the output under review (ragas without reference) (default "reference").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("context_recall")
def context_recall(
    *,
    model: str | dict[str, Any],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    structured_output: bool = True,
    cache: bool | None = None,
    cache_path: str | None = None,
    max_attempts: int = 4,
    initial_backoff_s: float = 0.5,
    timeout_s: float = 60.0,
    concurrency: int = 8,
    require_calibration: RequireCalibration | None = None,
    pass_threshold: float = 0.5,
    include_input: bool = True,
    context: str = "doc.contexts",
) -> ContextRecall:
    """The share of the reference answer's statements the retrieved context supports (ragas context recall).

    The ContextRecall evaluator, as ``get("context_recall", **options)`` builds it from the options given.

    Args:
        model: the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}); never a
            secret (name an environment variable: api_key_env) (required).
        temperature: the judge's sampling temperature (default 0.0).
        max_tokens: the most tokens a judge reply may hold (default None).
        structured_output: send a strict JSON-schema response_format (JSON mode, then plain text, where a server
            refuses) (default True).
        cache: answer a judgement already made from the SQLite response cache: null follows the run's cache switch (off
            unless --cache), true or false decides for this judge (default None).
        cache_path: the cache file (default: the run's) (default None).
        max_attempts: attempts per judge call (retries on 429/5xx) (default 4).
        initial_backoff_s: the first retry's wait in seconds (default 0.5).
        timeout_s: seconds one judge call may take (default 60.0).
        concurrency: outputs judged at once in evaluate_batch (default 8).
        require_calibration: mark this judge's figures uncalibrated unless a calibration record of this very judge (same
            model, prompt hash, scale, options) reaches min_kappa: {min_kappa: 0.6, records: FILE} (default None).
        pass_threshold: the score a verdict needs to pass (at least this) (default 0.5).
        include_input: show the judge the task's input (the question) beside the material it checks (default True).
        context: where the retrieved context is: 'doc.FIELD' (a field of the dataset row) or 'metadata.FIELD' (of the
            sample's metadata); a list of chunks (strings, or objects shown as JSON) or one string. The judge reads it
            as its own delimited block, one per chunk, never as a reference answer (default "doc.contexts").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("hallucination")
def hallucination(
    *,
    model: str | dict[str, Any],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    structured_output: bool = True,
    cache: bool | None = None,
    cache_path: str | None = None,
    max_attempts: int = 4,
    initial_backoff_s: float = 0.5,
    timeout_s: float = 60.0,
    concurrency: int = 8,
    require_calibration: RequireCalibration | None = None,
    pass_threshold: float = 0.5,
    include_input: bool = True,
    context: str = "doc.contexts",
) -> Hallucination:
    """The share of the contexts the answer contradicts (DeepEval's hallucination); lower is better.

    The Hallucination evaluator, as ``get("hallucination", **options)`` builds it from the options given.

    Args:
        model: the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}); never a
            secret (name an environment variable: api_key_env) (required).
        temperature: the judge's sampling temperature (default 0.0).
        max_tokens: the most tokens a judge reply may hold (default None).
        structured_output: send a strict JSON-schema response_format (JSON mode, then plain text, where a server
            refuses) (default True).
        cache: answer a judgement already made from the SQLite response cache: null follows the run's cache switch (off
            unless --cache), true or false decides for this judge (default None).
        cache_path: the cache file (default: the run's) (default None).
        max_attempts: attempts per judge call (retries on 429/5xx) (default 4).
        initial_backoff_s: the first retry's wait in seconds (default 0.5).
        timeout_s: seconds one judge call may take (default 60.0).
        concurrency: outputs judged at once in evaluate_batch (default 8).
        require_calibration: mark this judge's figures uncalibrated unless a calibration record of this very judge (same
            model, prompt hash, scale, options) reaches min_kappa: {min_kappa: 0.6, records: FILE} (default None).
        pass_threshold: the highest share of contradicted contexts that passes (at most this) (default 0.5).
        include_input: show the judge the task's input (the question) beside the material it checks (default True).
        context: where the retrieved context is: 'doc.FIELD' (a field of the dataset row) or 'metadata.FIELD' (of the
            sample's metadata); a list of chunks (strings, or objects shown as JSON) or one string. The judge reads it
            as its own delimited block, one per chunk, never as a reference answer (default "doc.contexts").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("bleu")
def bleu(
    *,
    threshold: float = 0.5,
    tokenize: str | None = None,
    lowercase: bool = False,
    smooth_method: Literal["none", "floor", "add-k", "exp"] = "exp",
    smooth_value: float | None = None,
    max_ngram_order: int = 4,
    trg_lang: str = "",
) -> Bleu:
    """sacrebleu BLEU: sentence BLEU (effective order, as ``sentence_bleu``) per sample; corpus BLEU over the run.

    The Bleu evaluator, as ``get("bleu", **options)`` builds it from the options given.

    Args:
        threshold: sentence score (0–1) at or above which a sample passes (default 0.5).
        tokenize: sacrebleu's tokenizer ('13a', 'intl', 'char', 'zh', 'ja-mecab', 'ko-mecab', 'flores200', 'none' …);
            null picks one by trg_lang (zh, ja, ko) and else '13a', as sacrebleu does (default None).
        lowercase: lower-case output and references first (case-insensitive BLEU) (default False).
        smooth_method: how a zero n-gram precision is smoothed (sacrebleu's methods; 'exp' is sentence_bleu's default,
            'none' is unsmoothed, where an n-gram order with no match scores the sentence 0) (default "exp").
        smooth_value: the constant of 'floor' (default 0.1) or 'add-k' (default 1); unused by 'exp' and 'none' (default
            None).
        max_ngram_order: the longest n-gram counted (BLEU-4 by default; 2 suits very short outputs) (default 4).
        trg_lang: the references' language code (e.g. 'zh', 'ja', 'ko'): picks the tokenizer when tokenize is null
            (default "").
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("chrf")
def chrf(
    *,
    threshold: float = 0.5,
    char_order: int = 6,
    word_order: int = 0,
    beta: int = 2,
    lowercase: bool = False,
    whitespace: bool = False,
    eps_smoothing: bool = False,
) -> Chrf:
    """sacrebleu chrF (chrF++ with ``word_order: 2``): sentence chrF per sample, corpus chrF over the run.

    The Chrf evaluator, as ``get("chrf", **options)`` builds it from the options given.

    Args:
        threshold: sentence score (0–1) at or above which a sample passes (default 0.5).
        char_order: the longest character n-gram counted (chrF's standard is 6) (default 6).
        word_order: the longest word n-gram counted as well: 0 is plain chrF, 2 gives chrF++ (default 0).
        beta: how many times more recall weighs than precision in the F-score (chrF2) (default 2).
        lowercase: lower-case output and references first (case-insensitive chrF) (default False).
        whitespace: keep whitespace inside character n-grams (by default chrF removes it before counting) (default
            False).
        eps_smoothing: smooth a zero n-gram order with a small epsilon, as chrF++.py, NLTK and Moses do, instead of
            sacrebleu's effective-order averaging; changes scores of short outputs only (default False).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("ter")
def ter(
    *,
    max_ter: float = 0.5,
    normalized: bool = False,
    no_punct: bool = False,
    asian_support: bool = False,
    case_sensitive: bool = False,
) -> Ter:
    """sacrebleu TER, lower is better: edits per reference word. A verdict's score is TER capped at 1 (the uncapped
    value is in ``details["ter"]``); the corpus figure is sacrebleu's corpus TER / 100, uncapped.

    The Ter evaluator, as ``get("ter", **options)`` builds it from the options given.

    Args:
        max_ter: sentence TER (edits per reference word) at or below which a sample passes (default 0.5).
        normalized: Tercom's normalisation before counting edits: punctuation split off words, XML entities decoded
            (default False).
        no_punct: remove punctuation first, so it never counts as an edit (default False).
        asian_support: with normalized, split CJK text into characters; with no_punct, also remove CJK and full-width
            punctuation (no effect alone) (default False).
        case_sensitive: count a change of case as an edit (by default TER lower-cases both texts first) (default False).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("rouge")
def rouge(
    *,
    rouge_type: str = "rougeL",
    use_stemmer: bool = False,
    measure: Literal["fmeasure", "precision", "recall"] = "fmeasure",
    threshold: float = 0.5,
) -> Rouge:
    """rouge-score's ROUGE (``rouge1``/``rouge2``/``rougeL``/``rougeLsum``, optional Porter stemming): the best
    reference's F-measure (or precision/recall) per sample; aggregated by the mean, as rouge-score's own aggregator and
    HF ``evaluate`` do. ``rougeLsum`` splits summaries into sentences at newlines.

    The Rouge evaluator, as ``get("rouge", **options)`` builds it from the options given.

    Args:
        rouge_type: which ROUGE: rouge1..rouge9 (overlap of n-grams of that length), rougeL (longest common subsequence)
            or rougeLsum (rougeL per sentence, sentences split at newlines) (default "rougeL").
        use_stemmer: reduce words to their Porter stem first, so 'running' matches 'runs' (English only) (default
            False).
        measure: the figure a sample scores: F-measure, precision (share of output n-grams in the reference) or recall
            (share of reference n-grams in the output) (default "fmeasure").
        threshold: the measure (0–1) at or above which a sample passes (default 0.5).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("rouge1")
def rouge1(
    *,
    rouge_type: str = "rouge1",
    use_stemmer: bool = False,
    measure: Literal["fmeasure", "precision", "recall"] = "fmeasure",
    threshold: float = 0.5,
) -> Rouge1:
    """``rouge`` with ``rouge_type: rouge1`` (shorthand for tasks that list several ROUGE types).

    The Rouge1 evaluator, as ``get("rouge1", **options)`` builds it from the options given.

    Args:
        rouge_type: which ROUGE: rouge1..rouge9 (overlap of n-grams of that length), rougeL (longest common subsequence)
            or rougeLsum (rougeL per sentence, sentences split at newlines) (default "rouge1").
        use_stemmer: reduce words to their Porter stem first, so 'running' matches 'runs' (English only) (default
            False).
        measure: the figure a sample scores: F-measure, precision (share of output n-grams in the reference) or recall
            (share of reference n-grams in the output) (default "fmeasure").
        threshold: the measure (0–1) at or above which a sample passes (default 0.5).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("rouge2")
def rouge2(
    *,
    rouge_type: str = "rouge2",
    use_stemmer: bool = False,
    measure: Literal["fmeasure", "precision", "recall"] = "fmeasure",
    threshold: float = 0.5,
) -> Rouge2:
    """``rouge`` with ``rouge_type: rouge2``.

    The Rouge2 evaluator, as ``get("rouge2", **options)`` builds it from the options given.

    Args:
        rouge_type: which ROUGE: rouge1..rouge9 (overlap of n-grams of that length), rougeL (longest common subsequence)
            or rougeLsum (rougeL per sentence, sentences split at newlines) (default "rouge2").
        use_stemmer: reduce words to their Porter stem first, so 'running' matches 'runs' (English only) (default
            False).
        measure: the figure a sample scores: F-measure, precision (share of output n-grams in the reference) or recall
            (share of reference n-grams in the output) (default "fmeasure").
        threshold: the measure (0–1) at or above which a sample passes (default 0.5).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("rougeL")
def rougeL(
    *,
    rouge_type: str = "rougeL",
    use_stemmer: bool = False,
    measure: Literal["fmeasure", "precision", "recall"] = "fmeasure",
    threshold: float = 0.5,
) -> RougeL:
    """``rouge`` with ``rouge_type: rougeL`` (its default).

    The RougeL evaluator, as ``get("rougeL", **options)`` builds it from the options given.

    Args:
        rouge_type: which ROUGE: rouge1..rouge9 (overlap of n-grams of that length), rougeL (longest common subsequence)
            or rougeLsum (rougeL per sentence, sentences split at newlines) (default "rougeL").
        use_stemmer: reduce words to their Porter stem first, so 'running' matches 'runs' (English only) (default
            False).
        measure: the figure a sample scores: F-measure, precision (share of output n-grams in the reference) or recall
            (share of reference n-grams in the output) (default "fmeasure").
        threshold: the measure (0–1) at or above which a sample passes (default 0.5).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("rougeLsum")
def rougeLsum(
    *,
    rouge_type: str = "rougeLsum",
    use_stemmer: bool = False,
    measure: Literal["fmeasure", "precision", "recall"] = "fmeasure",
    threshold: float = 0.5,
) -> RougeLsum:
    """``rouge`` with ``rouge_type: rougeLsum``.

    The RougeLsum evaluator, as ``get("rougeLsum", **options)`` builds it from the options given.

    Args:
        rouge_type: which ROUGE: rouge1..rouge9 (overlap of n-grams of that length), rougeL (longest common subsequence)
            or rougeLsum (rougeL per sentence, sentences split at newlines) (default "rougeLsum").
        use_stemmer: reduce words to their Porter stem first, so 'running' matches 'runs' (English only) (default
            False).
        measure: the figure a sample scores: F-measure, precision (share of output n-grams in the reference) or recall
            (share of reference n-grams in the output) (default "fmeasure").
        threshold: the measure (0–1) at or above which a sample passes (default 0.5).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("semantic_similarity")
def semantic_similarity(
    *,
    model: str = "all-MiniLM-L6-v2",
    threshold: float = 0.8,
    device: str = "auto",
    batch_size: int = 64,
    allow_download: bool = False,
    cache_size: int = 100000,
    cpu_threads: int | None = None,
) -> SemanticSimilarity:
    """Cosine similarity of the output's and the reference's embeddings (best reference); passes at ``threshold``. The
    score is the cosine clipped to [0, 1]; the raw cosine is in ``details``.

    The SemanticSimilarity evaluator, as ``get("semantic_similarity", **options)`` builds it from the options given.

    Args:
        model: the sentence-transformers model: a local folder, the packaged all-MiniLM-L6-v2, or a Hugging Face name
            already in the local cache (else set allow_download) (default "all-MiniLM-L6-v2").
        threshold: the cosine similarity to the closest reference at or above which a sample passes; the scale depends
            on the model, so calibrate it on a few known pairs (default 0.8).
        device: where the model runs: 'auto' (CUDA, else Apple MPS, else CPU) or a torch device name (default "auto").
        batch_size: texts encoded per forward pass; lower it if a GPU runs out of memory (default 64).
        allow_download: let a model not on this machine be downloaded from the Hugging Face Hub (off: offline) (default
            False).
        cache_size: encodings kept, by text hash (0: no cache) (default 100000).
        cpu_threads: torch's CPU threads (process-wide); None: torch's own (default None).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("code_exec")
def code_exec(
    *,
    allow_untrusted_code: bool = False,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    memory_total_mb: int | None = None,
    disk_mb: int = 256,
    max_processes: int = 32,
    style: Literal["auto", "program", "asserts", "cases"] = "auto",
    entry_point: str | None = None,
    function: str | None = None,
    extract_code: bool = True,
    code_prefix: str | None = None,
    max_parallel: int | None = None,
    sandbox_python: str | None = None,
) -> CodeExec:
    """Run generated Python against the task's tests in a sandbox; passes when every test passes.

    The CodeExec evaluator, as ``get("code_exec", **options)`` builds it from the options given.

    Args:
        allow_untrusted_code: opt in to running model-written code on this machine (in the sandbox); without it, or
            ASSAY_ALLOW_UNTRUSTED_CODE=1, the evaluator refuses to start (default False).
        timeout_s: wall-clock seconds one sample's program and tests may run (also its CPU limit) (default 10.0).
        memory_mb: address-space limit per sandboxed process, in MB; raise it for numpy-heavy solutions (default 512).
        memory_total_mb: memory of all the sample's sandboxed processes and files together, in MB (where a memory cgroup
            can be made: as root); null: twice memory_mb (default None).
        disk_mb: size of all the files the sample's program writes (work directory, /tmp, /dev/shm) together, in MB
            (where a tmpfs can be mounted: as root) (default 256).
        max_processes: processes and threads a sandboxed program may run at once (stops fork bombs) (default 32).
        style: how the expected value holds the tests: 'program' a HumanEval check(candidate) program, 'asserts' a list
            of MBPP assert lines, 'cases' input/output pairs for a function; 'auto' tells by its shape (default "auto").
        entry_point: the function a 'program' test passes to check(); null reads the expected value's entry_point
            (default None).
        function: the function the 'cases' style calls with each input; null reads the expected value's function or
            fn_name (default None).
        extract_code: run only the code in the output's Markdown code fences (python or unlabelled), joined, when it has
            any; false runs the output as it is (default True).
        code_prefix: e.g. doc.prompt (HumanEval) (default None).
        max_parallel: sandboxes run at once per event loop; null: one per CPU core (default None).
        sandbox_python: the Python run in the sandbox, a CPython 3.8+ its user can run (default: assay's own when that
            user can run it, else the newest other one it can; details.isolation.python names the one used) (default
            None).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("env_check")
def env_check(
    *,
    command: str | None = None,
    mode: Literal["auto", "pytest", "exit_code"] = "auto",
    check_files: str = "check_files",
    files: dict[str, str] = {},  # noqa: B006
    protect: list[str] | None = None,
    fail_to_pass: str = "FAIL_TO_PASS",
    pass_to_pass: str = "PASS_TO_PASS",
    pytest_args: list[str] | None = None,
    python: str = "python3",
    timeout_s: float = 600.0,
) -> EnvCheck:
    """Runs a command or the row's tests in the sample's environment after the agent stopped.

    The EnvCheck evaluator, as ``get("env_check", **options)`` builds it from the options given.

    Args:
        command: a shell line run with bash -c in the workspace after the loop, passed when it exits 0; null: the row's
            FAIL_TO_PASS / PASS_TO_PASS tests are run with pytest and scored as SWE-bench scores them (default None).
        mode: 'exit_code' runs command; 'pytest' runs the listed tests; 'auto': command when one is given, else pytest
            when the row lists tests (default "auto").
        check_files: the row key whose value (workspace path -> text) holds hidden files written into the workspace
            after the loop, over what the agent left there (a test patch) (default "check_files").
        files: hidden files for every sample (workspace path -> text), written in as check_files are (default {}).
        protect: globs of workspace files put back as the workspace was made before the check (removed when they were
            not there), so the agent cannot decide its own tests; null: conftest.py files, pytest's and setup's
            configuration (pytest.ini, tox.ini, setup.cfg, pyproject.toml), sitecustomize.py, pytest.py and _pytest/, in
            either mode; [] protects nothing (a task whose agent must edit pyproject.toml); add your tests folder
            (tests/**) to keep the agent from editing the PASS_TO_PASS tests (default None).
        fail_to_pass: the row key of the tests the change must make pass (a list or a JSON list of pytest node ids; the
            lowercase key is read too) (default "FAIL_TO_PASS").
        pass_to_pass: the row key of the tests that must keep passing (a list or a JSON list of node ids) (default
            "PASS_TO_PASS").
        pytest_args: what pytest runs (paths, node ids, options); null: the files of the listed tests (default None).
        python: the Python inside the environment that runs pytest (default "python3").
        timeout_s: seconds the command or the tests may run (default 600.0).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("env_files")
def env_files(
    *,
    expected: str = "expected_files",
    files: dict[str, str | None] = {},  # noqa: B006
    mode: Literal["exact", "contains", "regex"] = "exact",
    strip: bool = True,
) -> EnvFiles:
    """Compares workspace files after the loop with the row's expected content (``expected_files``: path -> text, or
    null for a file that must not exist). The score is the share of files that match; passed when all do. The
    observation: ``{"files": {path: {"exists", "size", "sha256", "text"}}}`` (text null past 256 KiB or for a binary
    file; such a file matches only in ``exact`` mode without ``strip``, by digest).

    The EnvFiles evaluator, as ``get("env_files", **options)`` builds it from the options given.

    Args:
        expected: the row key whose value maps workspace paths to their expected text (null: the file must not exist)
            (default "expected_files").
        files: expected files for every sample (workspace path -> text, or null: must not exist); the row's entries win
            (default {}).
        mode: 'exact': the file equals the text; 'contains': the file contains it; 'regex': the text is a regular
            expression found in the file (multiline) (default "exact").
        strip: ignore whitespace at the ends of lines and blank lines at the ends of the file (line endings are always
            normalised) (default True).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("state_match")
def state_match(
    *,
    expected: str = "expected_state",
    key_fields: list[str] = [],  # noqa: B006
    tolerance: float = 0.0,
    ignore: list[str] = [],  # noqa: B006
    allow_extra: bool = True,
) -> StateMatch:
    """Compares a stateful world's final state (``environment: {python: "module:factory"}``) with the row's
    ``expected_state``: objects by key, lists by position or by an id-like key, numbers within a tolerance. The score is
    the share of expected fields that match (unexpected list items and, without ``allow_extra``, keys count against it);
    passed only when all match. The observation: ``{"state": <the state as JSON>}``.

    The StateMatch evaluator, as ``get("state_match", **options)`` builds it from the options given.

    Args:
        expected: the row key holding the expected final state (an object; may be partial) (default "expected_state").
        key_fields: fields that identify a list's items (e.g. [id]): lists of objects having one are matched by it, and
            named by it in paths (orders.O2.status); other lists by position (items.0.sku) (default []).
        tolerance: numbers match when they differ by at most this much (default 0.0).
        ignore: dotted paths left out of the comparison (* within a segment, ** any number of segments:
            orders.*.updated_at) (default []).
        allow_extra: keys of the state the expected state does not name are ignored (a partial expected state); false
            counts each as a difference. Extra list items always count (default True).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("acc")
def acc() -> Acc:
    """lm-eval's ``acc``: the gold choice has the highest log-likelihood. On a ``loglikelihood`` task (one
    continuation), it is lm-eval's ``acc`` there: the continuation is the model's greedy choice, token for token.

    The Acc evaluator, as ``get("acc", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("acc_norm")
def acc_norm() -> AccNorm:
    """lm-eval's ``acc_norm``: the gold choice has the highest log-likelihood per character of the choice (its length as
    written, without the target delimiter).

    The AccNorm evaluator, as ``get("acc_norm", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("acc_bytes")
def acc_bytes() -> AccBytes:
    """lm-eval's ``acc_bytes``: the gold choice has the highest log-likelihood per UTF-8 byte of the choice.

    The AccBytes evaluator, as ``get("acc_bytes", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("acc_mutual_info")
def acc_mutual_info() -> AccMutualInfo:
    """lm-eval's ``acc_mutual_info``: the gold choice has the highest log P(choice | context) − log P(choice) (the task
    scores each choice again after an empty context when this metric is among its metrics).

    The AccMutualInfo evaluator, as ``get("acc_mutual_info", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("mc1")
def mc1() -> MC1:
    """TruthfulQA's ``mc1`` (lm-eval's truthfulqa_mc1 ``acc``): the single true answer ranks first; it is choice 0 (the
    dataset's layout) unless ``expected`` gives another gold.

    The MC1 evaluator, as ``get("mc1", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("mc2")
def mc2(
    *,
    threshold: float = 0.5,
) -> MC2:
    """TruthfulQA's ``mc2`` (lm-eval's truthfulqa_mc2 ``acc``): the probability mass of the true answers, normalised
    over all the choices. ``expected`` is the choices' labels (1 true, 0 false; ``mc2_targets.labels``): as lm-eval
    reads them, the choices before the first 0 are the true ones. Computed in log space, so long answers whose
    probabilities underflow keep their ratio.

    The MC2 evaluator, as ``get("mc2", **options)`` builds it from the options given.

    Args:
        threshold: probability mass on true answers at which it passes (default 0.5).
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("perplexity")
def perplexity() -> Perplexity:
    """Perplexity: lm-eval's exp(−mean log-likelihood) per document on a ``loglikelihood`` task; the token perplexity
    exp(−Σ ll / Σ tokens) on a ``loglikelihood_rolling`` task.

    The Perplexity evaluator, as ``get("perplexity", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("word_perplexity")
def word_perplexity() -> WordPerplexity:
    """lm-eval's ``word_perplexity``: exp(−Σ ll / Σ words) over the corpus.

    The WordPerplexity evaluator, as ``get("word_perplexity", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("byte_perplexity")
def byte_perplexity() -> BytePerplexity:
    """lm-eval's ``byte_perplexity``: exp(−Σ ll / Σ bytes) over the corpus.

    The BytePerplexity evaluator, as ``get("byte_perplexity", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


@_builds("bits_per_byte")
def bits_per_byte() -> BitsPerByte:
    """lm-eval's ``bits_per_byte``: −Σ ll / Σ bytes / ln 2 over the corpus.

    The BitsPerByte evaluator, as ``get("bits_per_byte", **options)`` builds it from the options given.
    """
    raise NotImplementedError  # @_builds calls the registry instead


__all__ = [
    "acc",
    "acc_bytes",
    "acc_mutual_info",
    "acc_norm",
    "answer_relevancy",
    "bits_per_byte",
    "bleu",
    "byte_perplexity",
    "chrf",
    "code_exec",
    "contains",
    "context_precision",
    "context_recall",
    "custom",
    "env_check",
    "env_files",
    "exact_match",
    "faithfulness",
    "fuzzy_match",
    "hallucination",
    "json_match",
    "llm_judge",
    "mc1",
    "mc2",
    "numeric",
    "perplexity",
    "regex",
    "rouge",
    "rouge1",
    "rouge2",
    "rougeL",
    "rougeLsum",
    "schema",
    "semantic_similarity",
    "state_match",
    "ter",
    "token_f1",
    "tool_usage",
    "word_perplexity",
]
