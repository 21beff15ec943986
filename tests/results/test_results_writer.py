"""results.json and samples_<task>.jsonl: lm-eval's schema, hashes, figures, error policies, groups, loading."""

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from assay.errors import ConfigError, DataError
from assay.results import ErroredVerdictsError, build_results, load_run, stats, write_results
from assay.results.intervals import wilson_interval
from tests.results import runfactory as rf
from tests.results.lm_eval_schema import ResultsFile, SampleLine


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rich_run(path: Path) -> Path:
    """Two tasks in a group (one with errors, a model failure and clusters; one with repeats), and a judged task."""
    arith = rf.task("arith", groups=["math"], n=9, n_selected=8, system_instruction="Be brief.")
    algebra = rf.task("algebra", (("exact_match", True), ("f1", True)), repeats=3, groups=["math"], n=4)
    judged = rf.task("judged", (("judge", True), ("length", False)), n=3)
    recs = []
    outcomes = [1, 0, 1, None, 1, 1]  # None: the evaluator errored
    for i, o in enumerate(outcomes):
        v = rf.verdict(None, error="judge reply unparseable") if o is None else rf.verdict(float(o))
        recs.append(rf.record("arith", i, {"exact_match": [v]}, metadata={"passage": i // 2}))
    # sample 6: the model call failed, so there are no verdicts at all
    recs.append(rf.record("arith", 6, {}, texts=[None], metadata={"passage": 3}))
    em = [[1, 0, 1], [1, 1, 1], [0, 0, 0], [1, 0, None]]
    f1 = [[0.5, 0.25, 0.75], [1.0, 1.0, 0.5], [0.0, 0.25, 0.0], [0.5, 0.5, 0.5]]
    for i in range(4):
        ems = [rf.verdict(None, error="timeout") if x is None else rf.verdict(float(x)) for x in em[i]]
        f1s = [rf.verdict(x, x >= 0.5) for x in f1[i]]
        recs.append(rf.record("algebra", i, {"exact_match": ems, "f1": f1s}, texts=["a", "b", "c"]))
    for i in range(3):
        recs.append(
            rf.record(
                "judged",
                i,
                {
                    "judge": [rf.verdict(0.8 if i else 0.2, i > 0, details=rf.judge_details(tin=100 + i, tout=20))],
                    "length": [rf.verdict(0.1 * (i + 1), True)],
                },
            )
        )
    man = rf.manifest(
        [arith, algebra, judged],
        config={"limit": None, "seed": 7, "api_key": "sk-secret", "headers": {"Authorization": "Bearer x"}},
    )
    return rf.write_run(path, man, recs)


@pytest.fixture
def run_dir(tmp_path):
    return rich_run(tmp_path / "run")


def test_results_file_matches_lm_eval_schema(run_dir):
    doc = write_results(run_dir, bootstrap_iters=500)
    on_disk = rf.load_json(run_dir / "results.json")
    assert on_disk == doc
    ResultsFile.model_validate(on_disk)
    assert on_disk["n-samples"]["arith"] == {"original": 9, "effective": 8}
    assert on_disk["group_subtasks"] == {"math": ["arith", "algebra"], "judged": []}
    assert on_disk["higher_is_better"]["judged"] == {"judge": True, "length": False}
    assert on_disk["total_evaluation_time_seconds"] == "42.5"
    assert on_disk["model_name_sanitized"] == "org__test-model__v1"
    assert on_disk["task_hashes"]["arith"] == "hash-arith"
    assert on_disk["config"]["bootstrap_iters"] == 500 and on_disk["config"]["error_policy"] == "exclude"
    assert on_disk["config"]["model"] == "openai"
    # results and groups hold only lm-eval keys; no temp files left behind
    assert set(on_disk["results"]["arith"]) == {
        "name",
        "alias",
        "sample_len",
        "exact_match,none",
        "exact_match_stderr,none",
    }
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".")]


def test_secrets_never_reach_the_results(run_dir):
    write_results(run_dir, bootstrap_iters=10)
    text = (run_dir / "results.json").read_text()
    assert "sk-secret" not in text and "Bearer x" not in text
    assert rf.load_json(run_dir / "results.json")["config"]["seed"] == 7
    man = rf.manifest([rf.task("t", n=1)], model={"provider": "openai", "name": "m", "api_key": "sk-model-key"})
    doc = build_results(man, [rf.record("t", 0, {"exact_match": [rf.verdict(1.0)]})], bootstrap_iters=10)
    assert "sk-model-key" not in json.dumps(doc) and doc["config"]["model_args"] == "name=m"


def test_system_instruction_hashes(run_dir):
    doc = write_results(run_dir, bootstrap_iters=10)
    # tasks disagree (only arith has one), so no single system instruction is claimed
    assert doc["system_instruction"] is None and doc["system_instruction_sha"] is None
    man = rf.manifest(
        [rf.task("t", system_instruction="Be brief.")], model={"provider": "hf", "name": "m", "chat_template": "{{x}}"}
    )
    doc = build_results(man, [rf.record("t", 0, {"exact_match": [rf.verdict(1.0)]})], bootstrap_iters=10)
    assert doc["system_instruction"] == "Be brief."
    assert doc["system_instruction_sha"] == _sha("Be brief.")
    assert doc["chat_template_sha"] == _sha("{{x}}")


def test_sample_logs_shape_and_hashes(run_dir):
    write_results(run_dir, bootstrap_iters=10)
    lines = rf.read_jsonl(run_dir / "samples_arith.jsonl")
    assert [line["doc_id"] for line in lines] == list(range(7))
    for line in lines:
        SampleLine.model_validate(line)
    first = lines[0]
    doc = {"question": "q0", "answer": "answer"}
    assert first["doc_hash"] == _sha(json.dumps(doc, indent=2, ensure_ascii=False))
    assert first["doc_hash"] == _sha('{\n  "question": "q0",\n  "answer": "answer"\n}')
    assert first["prompt_hash"] == _sha("Question: q0\nAnswer:")
    assert first["target_hash"] == _sha("answer")
    assert first["arguments"] == {
        "gen_args_0": {"arg_0": "Question: q0\nAnswer:", "arg_1": {"temperature": 0.0, "max_tokens": 16}}
    }
    assert first["resps"] == [["answer"]] and first["filtered_resps"] == ["answer"]
    assert first["metrics"] == ["exact_match"] and first["exact_match"] == 1.0
    # errored verdict (doc 3) and failed model call (doc 6): no value, never NaN, null or 0
    assert lines[3]["metrics"] == [] and "exact_match" not in lines[3]
    assert lines[6]["metrics"] == [] and lines[6]["resps"] == [[""]]
    algebra = rf.read_jsonl(run_dir / "samples_algebra.jsonl")
    assert algebra[0]["resps"] == [["a", "b", "c"]] and algebra[0]["filtered_resps"] == [["a", "b", "c"]]
    assert algebra[0]["exact_match"] == pytest.approx(2 / 3) and algebra[0]["f1"] == pytest.approx(0.5)


def test_hashes_of_non_ascii_docs_and_non_string_targets(tmp_path):
    doc = {"q": "¿Qué hora es?", "n": [1, 2]}
    rec = rf.record("t", 0, {"exact_match": [rf.verdict(1.0)]}, doc=doc, target=42, prompt="Hora: ¿?")
    rf.write_run(tmp_path, rf.manifest([rf.task("t", n=1)]), [rec])
    write_results(tmp_path, bootstrap_iters=10)
    (line,) = rf.read_jsonl(tmp_path / "samples_t.jsonl")
    SampleLine.model_validate(line)
    expected_doc = '{\n  "q": "¿Qué hora es?",\n  "n": [\n    1,\n    2\n  ]\n}'
    assert line["doc_hash"] == hashlib.sha256(expected_doc.encode()).hexdigest()
    assert line["target"] == "42"
    assert line["target_hash"] == "73475cb40a568e8da8a045ced110137e159f890ac4da883b6b17dc651b3a8049"  # sha256("42")
    assert line["prompt_hash"] == hashlib.sha256("Hora: ¿?".encode()).hexdigest()


def test_figures_with_errors_excluded_and_counted(run_dir):
    doc = write_results(run_dir, bootstrap_iters=2000, seed=5)
    e = doc["assay"]["tasks"]["arith"]["filters"]["none"]["exact_match"]
    assert (e["n_total"], e["n_scored"], e["n_errored"], e["error_policy"]) == (7, 5, 2, "exclude")
    assert e["mean"] == pytest.approx(0.8)
    assert e["stderr"] == pytest.approx(math.sqrt(0.8 * 0.2 / 4))
    half = stats.t_quantile(0.975, 4) * e["stderr"]
    assert e["ci_t"] == pytest.approx([0.8 - half, 1.0])  # clipped to the score range, never past 1
    assert e["ci_method"] == "wilson"  # pass/fail: the interval made for proportions leads
    assert e["ci"] == pytest.approx(list(wilson_interval(4, 5)))
    assert e["ci_bootstrap"][0] <= 0.8 <= e["ci_bootstrap"][1]
    assert e["pass_rate"] == pytest.approx(0.8) and e["binary"] is True
    assert [x["doc_id"] for x in e["error_examples"]] == [3, 6]
    assert "model error: HTTP 500" in e["error_examples"][1]["error"]
    assert doc["results"]["arith"]["exact_match,none"] == pytest.approx(0.8)
    assert doc["assay"]["tasks"]["arith"]["n_missing"] == 1
    assert doc["assay"]["tasks"]["arith"]["n_model_errors"] == 1
    assert doc["assay"]["tasks"]["arith"]["model_error_example"] == "arith-6: HTTP 500"
    assert doc["assay"]["tasks"]["algebra"]["model_error_example"] is None


def test_as_zero_policy_scores_errors_as_failures(run_dir):
    doc = write_results(run_dir, error_policy="as_zero", bootstrap_iters=10)
    e = doc["assay"]["tasks"]["arith"]["filters"]["none"]["exact_match"]
    assert (e["n_scored"], e["n_errored"], e["error_policy"]) == (7, 0, "as_zero")
    assert e["mean"] == pytest.approx(4 / 7)
    assert [x["doc_id"] for x in e["error_examples"]] == [3, 6]  # still shown, though scored 0
    assert doc["results"]["arith"]["exact_match,none"] == pytest.approx(4 / 7)
    lines = rf.read_jsonl(run_dir / "samples_arith.jsonl")
    assert lines[3]["exact_match"] == 0.0 and lines[6]["exact_match"] == 0.0


def test_fail_policy_raises_naming_the_errors(run_dir):
    with pytest.raises(ErroredVerdictsError, match=r"verdict\(s\) errored.*arith/exact_match,none doc 3"):
        write_results(run_dir, error_policy="fail", bootstrap_iters=10)
    assert not (run_dir / "results.json").exists()
    clean = rf.binary_run(run_dir.parent / "clean", [1, 0, 1])
    assert write_results(clean, error_policy="fail", bootstrap_iters=10)["results"]["qa"][
        "exact_match,none"
    ] == pytest.approx(2 / 3)


def test_bad_settings_name_the_key(run_dir):
    with pytest.raises(ConfigError, match="error_policy: unknown value 'drop'"):
        write_results(run_dir, error_policy="drop")
    with pytest.raises(ConfigError, match="repeat_reduction"):
        write_results(run_dir, repeat_reduction="median")
    with pytest.raises(ConfigError, match=r"prices\.m\.input"):
        write_results(run_dir, prices={"m": {"input": "cheap"}})
    with pytest.raises(ConfigError, match="bootstrap_iters"):
        write_results(run_dir, bootstrap_iters=-1)


def test_all_errored_metric_has_no_lm_eval_key(tmp_path):
    rf.binary_run(tmp_path, [None, None, None])
    doc = write_results(tmp_path, bootstrap_iters=10)
    assert set(doc["results"]["qa"]) == {"name", "alias", "sample_len"}
    e = doc["assay"]["tasks"]["qa"]["filters"]["none"]["exact_match"]
    assert e["mean"] is None and e["stderr"] is None and e["n_errored"] == 3
    ResultsFile.model_validate(doc)


def test_single_sample_has_mean_but_no_stderr(tmp_path):
    rf.binary_run(tmp_path, [1])
    doc = write_results(tmp_path, bootstrap_iters=10)
    assert doc["results"]["qa"] == {"name": "qa", "alias": "qa", "sample_len": 1, "exact_match,none": 1.0}
    ResultsFile.model_validate(doc)


def test_repeats_reduction_and_pass_at_k(run_dir):
    doc = write_results(run_dir, bootstrap_iters=10)
    e = doc["assay"]["tasks"]["algebra"]["filters"]["none"]["exact_match"]
    # per-sample means over judged repeats: 2/3, 1, 0, 1/2 (one repeat errored and is excluded)
    assert e["mean"] == pytest.approx(np.mean([2 / 3, 1, 0, 1 / 2]))
    assert e["n_errored"] == 0 and e["n_errored_verdicts"] == 1
    for k, n_excl in ((1, 0), (2, 0), (3, 1)):
        rows = [(3, 2), (3, 3), (3, 0), (2, 1)]
        vals = [1 - math.comb(n - c, k) / math.comb(n, k) for n, c in rows if n >= k]
        hats = [math.comb(c, k) / math.comb(n, k) for n, c in rows if n >= k]
        assert e["pass_at_k"][str(k)]["value"] == pytest.approx(np.mean(vals))
        assert e["pass_hat_k"][str(k)]["value"] == pytest.approx(np.mean(hats))
        assert e["pass_at_k"][str(k)]["n_excluded"] == n_excl
    doc = write_results(run_dir, bootstrap_iters=10, repeat_reduction="max")
    assert doc["results"]["algebra"]["exact_match,none"] == pytest.approx(0.75)
    doc = write_results(run_dir, bootstrap_iters=10, repeat_reduction="majority")
    assert doc["results"]["algebra"]["exact_match,none"] == pytest.approx(0.5)  # 2/3, 3/3 pass; 0/3, 1/2 do not
    assert doc["results"]["algebra"]["f1,none"] == pytest.approx(0.75)  # f1 passes (>= 0.5): 2/3, 3/3, 0/3, 3/3


def test_group_weighted_by_size_and_equally(run_dir):
    doc = write_results(run_dir, bootstrap_iters=1000)
    arith = doc["assay"]["tasks"]["arith"]["filters"]["none"]["exact_match"]
    algebra = doc["assay"]["tasks"]["algebra"]["filters"]["none"]["exact_match"]
    g = doc["assay"]["groups"]["math"]["filters"]["none"]["exact_match"]
    w = np.array([5, 4]) / 9
    assert g["mean"] == pytest.approx(w[0] * arith["mean"] + w[1] * algebra["mean"])
    assert g["stderr"] == pytest.approx(
        math.sqrt(w[0] ** 2 * arith["stderr"] ** 2 + w[1] ** 2 * algebra["stderr"] ** 2)
    )
    assert g["weights"] == pytest.approx({"arith": 5 / 9, "algebra": 4 / 9})
    assert g["ci_bootstrap"][0] <= g["mean"] <= g["ci_bootstrap"][1]
    assert doc["groups"]["math"]["exact_match,none"] == pytest.approx(g["mean"])
    assert doc["groups"]["math"]["sample_len"] == 11
    f1 = doc["assay"]["groups"]["math"]["filters"]["none"]["f1"]
    assert f1["subtasks"] == ["algebra"]  # only algebra has f1
    doc = write_results(run_dir, bootstrap_iters=10, group_weighting="equal")
    g = doc["assay"]["groups"]["math"]["filters"]["none"]["exact_match"]
    assert g["mean"] == pytest.approx((arith["mean"] + algebra["mean"]) / 2)


def test_clustered_stderr_is_the_headline_stderr(run_dir):
    doc = write_results(run_dir, bootstrap_iters=500, cluster_key="passage")
    e = doc["assay"]["tasks"]["arith"]["filters"]["none"]["exact_match"]
    scored = [1.0, 0.0, 1.0, 1.0, 1.0]
    clusters = [0, 0, 1, 2, 2]  # docs 0-5 by i // 2, doc 3 errored
    se, g = stats.clustered_stderr(scored, clusters)
    assert e["clustered"]["n_clusters"] == g == 3 and e["clustered"]["key"] == "passage"
    assert e["clustered"]["stderr"] == pytest.approx(se)
    assert doc["results"]["arith"]["exact_match_stderr,none"] == pytest.approx(se)
    assert e["stderr"] == pytest.approx(stats.stderr(scored))  # the iid one is kept beside it
    half = stats.t_quantile(0.975, 2) * se
    assert e["clustered"]["ci_t"] == pytest.approx([max(0.0, 0.8 - half), 1.0])  # clipped to [0, 1]
    assert e["clustered"]["ci_method"] == "cluster_bootstrap"  # with a cluster key the clustered interval leads
    assert e["clustered"]["ci"] == e["clustered"]["ci_bootstrap"]
    assert doc["assay"]["cluster_key"] == "passage"


def test_groups_pool_the_clustered_stderr(run_dir):
    doc = write_results(run_dir, bootstrap_iters=200, cluster_key="passage")
    tasks = doc["assay"]["tasks"]
    arith = tasks["arith"]["filters"]["none"]["exact_match"]
    algebra = tasks["algebra"]["filters"]["none"]["exact_match"]
    g = doc["assay"]["groups"]["math"]["filters"]["none"]["exact_match"]
    w = np.array([5, 4]) / 9
    # arith's samples share passages: its clustered stderr, not the iid one, goes into the group's
    se_arith = arith["clustered"]["stderr"]
    assert se_arith != pytest.approx(arith["stderr"])
    se_algebra = algebra["clustered"]["stderr"]  # no passage: every sample its own cluster
    assert g["stderr"] == pytest.approx(math.sqrt(w[0] ** 2 * se_arith**2 + w[1] ** 2 * se_algebra**2))
    assert doc["groups"]["math"]["exact_match_stderr,none"] == pytest.approx(g["stderr"])


def test_one_cluster_leaves_the_stderr_out(tmp_path):
    recs = [rf.record("qa", i, {"exact_match": [rf.verdict(float(i % 2))]}, metadata={"passage": 1}) for i in range(6)]
    rf.write_run(tmp_path, rf.manifest([rf.task("qa", n=6)]), recs)
    doc = write_results(tmp_path, bootstrap_iters=50, cluster_key="passage")
    e = doc["assay"]["tasks"]["qa"]["filters"]["none"]["exact_match"]
    assert e["clustered"]["n_clusters"] == 1 and e["clustered"]["stderr"] is None
    assert e["stderr"] is not None  # the iid figure stays beside it, but is not passed off as the headline one
    assert "exact_match_stderr,none" not in doc["results"]["qa"]
    (row,) = load_run(tmp_path).metric_rows()
    assert row.stderr is None and row.ci_t is None and row.ci_bootstrap is None
    ResultsFile.model_validate(doc)


def test_pass_at_k_under_as_zero_counts_a_lost_sample_as_failed_repeats(tmp_path):
    t = rf.task("alg", repeats=3, n=2)
    recs = [
        rf.record("alg", 0, {"exact_match": [rf.verdict(1.0), rf.verdict(0.0), rf.verdict(1.0)]}, texts=["a"] * 3),
        rf.record("alg", 1, {}, texts=[None, None, None]),  # the model failed: no verdict at all
    ]
    rf.write_run(tmp_path, rf.manifest([t]), recs)
    doc = write_results(tmp_path, error_policy="as_zero", bootstrap_iters=10)
    e = doc["assay"]["tasks"]["alg"]["filters"]["none"]["exact_match"]
    for k in (1, 2, 3):
        expected = ((1 - math.comb(1, k) / math.comb(3, k)) + 0.0) / 2
        assert e["pass_at_k"][str(k)]["value"] == pytest.approx(expected)
        assert e["pass_at_k"][str(k)]["n"] == 2 and e["pass_at_k"][str(k)]["n_excluded"] == 0
        assert e["pass_hat_k"][str(k)]["value"] == pytest.approx(math.comb(2, k) / math.comb(3, k) / 2)


def test_bootstrap_is_seeded_and_recorded(run_dir):
    a = write_results(run_dir, bootstrap_iters=300, seed=11)
    b = write_results(run_dir, bootstrap_iters=300, seed=11)
    c = write_results(run_dir, bootstrap_iters=300, seed=12)
    get = lambda d: d["assay"]["tasks"]["algebra"]["filters"]["none"]["f1"]["ci_bootstrap"]  # noqa: E731
    assert get(a) == get(b) and get(a) != get(c)
    assert a["assay"]["seed"] == 11 and a["assay"]["bootstrap_iters"] == 300
    none = write_results(run_dir, bootstrap_iters=0)
    assert none["assay"]["tasks"]["arith"]["filters"]["none"]["exact_match"]["ci_bootstrap"] is None


def test_operational_figures_per_role(run_dir):
    doc = write_results(run_dir, bootstrap_iters=10, prices={"org/test-model:v1": {"input": 1.0, "output": 2.0}})
    ops = doc["assay"]["operational"]
    assert list(ops["roles"]["model"]) == ["org/test-model:v1"]  # the configured name, whatever the server says
    model = ops["roles"]["model"]["org/test-model:v1"]
    # 6 + 1 (failed) arith samples, 4 x 3 algebra repeats, 3 judged: 22 requests, the failed one an error
    assert (model["requests"], model["errors"]) == (22, 1)
    assert (model["input_tokens"], model["output_tokens"]) == (21 * 10, 21 * 2)
    assert model["latency_s"]["p50"] == pytest.approx(0.1)
    assert model["cost_usd"] == pytest.approx((210 * 1.0 + 42 * 2.0) / 1e6)
    judge = ops["roles"]["judge"]["judge-1"]
    assert (judge["requests"], judge["input_tokens"], judge["output_tokens"]) == (3, 303, 60)
    assert judge["cost_usd"] is None and ops["unpriced_models"] == ["judge-1"]
    assert ops["total_seconds"] == 42.5


def test_cached_requests_cost_nothing_and_leave_latency_out(tmp_path):
    recs = [
        rf.record("t", 0, {"exact_match": [rf.verdict(1.0)]}, cached=True, latency=0.0),
        rf.record("t", 1, {"exact_match": [rf.verdict(1.0)]}, latency=2.0),
    ]
    rf.write_run(tmp_path, rf.manifest([rf.task("t", n=2)]), recs)
    prices = {"org/test-model:v1": {"input": 1e6, "output": 0}}
    ops = write_results(tmp_path, bootstrap_iters=10, prices=prices)["assay"]["operational"]
    m = ops["roles"]["model"]["org/test-model:v1"]
    assert m["cache_hits"] == 1 and m["input_tokens"] == 20
    assert m["cost_usd"] == pytest.approx(10.0)  # only the uncached request's 10 input tokens
    assert m["latency_s"]["p50"] == 2.0


def test_loader_skips_a_torn_last_line_and_names_bad_lines(tmp_path):
    rec = rf.record("qa", 0, {"exact_match": [rf.verdict(1.0)]})
    man = rf.manifest([rf.task("qa", n=2)])
    rf.write_run(tmp_path / "torn", man, [rec], extra_lines=['{"task": "qa", "doc_id": 1, "sampl'])
    run = load_run(tmp_path / "torn")
    assert len(run.records) == 1 and run.torn_lines == 1
    assert run.computed and run.results["assay"]["torn_lines"] == 1
    assert run.results["results"]["qa"]["exact_match,none"] == 1.0
    rf.write_run(tmp_path / "bad", man, [rec], extra_lines=["not json", rec.model_dump_json()])
    with pytest.raises(DataError, match=r"samples\.jsonl:2: invalid sample record"):
        load_run(tmp_path / "bad")
    with pytest.raises(DataError, match="not a run folder"):
        load_run(tmp_path / "nowhere")


def test_a_run_with_results_json_reads_its_samples_only_when_they_are_asked_for(tmp_path):
    """The table printed after every run comes from results.json: loading the run must not read (index) the
    whole samples.jsonl, and a bad line still names itself once the samples are read."""
    from assay.report.table import render_table

    recs = [rf.record("qa", i, {"exact_match": [rf.verdict(float(i % 2))]}) for i in range(4)]
    rf.write_run(tmp_path, rf.manifest([rf.task("qa", n=4)]), recs)
    write_results(tmp_path, bootstrap_iters=10)
    samples = tmp_path / "samples.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines()
    samples.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n", encoding="utf-8")
    run = load_run(tmp_path)
    assert run.loaded_index is None
    table = render_table(run, fmt="json")
    assert json.loads(table)["rows"][0]["value"] == 0.5
    assert run.loaded_index is None
    with pytest.raises(DataError, match=r"samples\.jsonl:2: invalid sample record"):
        _ = run.n_records


def test_loader_reads_written_results_and_keeps_the_last_duplicate(tmp_path):
    man = rf.manifest([rf.task("qa", n=1)])
    old = rf.record("qa", 0, {"exact_match": [rf.verdict(0.0)]})
    new = rf.record("qa", 0, {"exact_match": [rf.verdict(1.0)]})
    rf.write_run(tmp_path, man, [old, new])
    run = load_run(tmp_path / "run.json")  # a file of the folder works too
    assert run.path == tmp_path and len(run.records) == 1
    assert run.results["results"]["qa"]["exact_match,none"] == 1.0
    write_results(tmp_path, bootstrap_iters=10)
    run = load_run(tmp_path)
    assert not run.computed
    (row,) = run.metric_rows()
    assert (row.task, row.metric, row.filter, row.mean, row.n_scored) == ("qa", "exact_match", "none", 1.0, 1)


def test_computed_results_use_the_runs_configured_settings(tmp_path):
    config = {"error_policy": "as_zero", "bootstrap_iters": 50, "seed": 0, "confidence": 0.9}
    man = rf.manifest([rf.task("qa", n=3)], config=config)
    recs = [
        rf.record("qa", i, {"exact_match": [v]})
        for i, v in enumerate([rf.verdict(1.0), rf.verdict(None, error="x"), rf.verdict(1.0)])
    ]
    rf.write_run(tmp_path, man, recs)
    run = load_run(tmp_path)
    assert run.results["assay"]["error_policy"] == "as_zero"
    assert run.results["assay"]["bootstrap_iters"] == 50
    assert run.results["assay"]["seed"] == 0  # a seed of 0 is a seed, not "unset"
    assert run.results["assay"]["confidence"] == 0.9
    assert run.results["results"]["qa"]["exact_match,none"] == pytest.approx(2 / 3)
    assert run.sample_values("qa", "none", "exact_match").as_dict() == {0: 1.0, 1: 0.0, 2: 1.0}


def test_metric_rows_read_plain_lm_eval_results(tmp_path):
    from assay.results.loader import metric_rows

    lm_eval_doc = {
        "results": {"arc": {"alias": "arc", "acc,none": 0.5, "acc_stderr,none": 0.01, "acc_norm,none": 0.6}},
        "versions": {"arc": 1.0},
        "n-shot": {"arc": 0},
        "higher_is_better": {"arc": {"acc": True, "acc_norm": True}},
    }
    rows = {r.metric: r for r in metric_rows(lm_eval_doc)}
    assert rows["acc"].mean == 0.5 and rows["acc"].stderr == 0.01 and rows["acc"].ci_t is None
    assert rows["acc_norm"].stderr is None and set(rows) == {"acc", "acc_norm"}


def test_metric_names_that_break_the_format_are_rejected(tmp_path):
    man = rf.manifest([rf.task("t", (("a,b", True),), n=1)])
    with pytest.raises(ConfigError, match="may not contain ','"):
        build_results(man, [], bootstrap_iters=10)
    man = rf.manifest([rf.task("t", (("doc_hash", True),), n=1)])
    with pytest.raises(ConfigError, match="collides"):
        build_results(man, [], bootstrap_iters=10)
    man = rf.manifest([rf.task("t", (("acc", True), ("acc_stderr", True)), n=1)])
    with pytest.raises(ConfigError, match="'acc_stderr' may not end in '_stderr'"):
        build_results(man, [], bootstrap_iters=10)


def test_samples_of_unknown_tasks_are_reported_not_scored(tmp_path):
    man = rf.manifest([rf.task("qa", n=1)])
    recs = [
        rf.record("qa", 0, {"exact_match": [rf.verdict(1.0)]}),
        rf.record("ghost", 0, {"exact_match": [rf.verdict(0.0)]}),
    ]
    doc = build_results(man, recs, bootstrap_iters=10)
    assert doc["assay"]["warnings"] == ["1 sample(s) of task 'ghost', which is not in run.json, were ignored"]
    assert "ghost" not in doc["results"]


def _lm_eval_make_table_rows(result_dict, column):
    """The row-building loop of lm-eval's ``make_table`` (lm_eval/utils.py), without pytablewriter."""
    values = []
    for k in result_dict[column]:
        dic = dict(result_dict[column][k])
        version = result_dict["versions"].get(k, "    N/A")
        n = str(result_dict.get("n-shot", " ").get(k, " "))
        if "alias" in dic:
            k = dic.pop("alias")
        for mf, v in sorted(dic.items()):
            m, _, f = mf.partition(",")
            if m.endswith("_stderr"):
                continue
            v = f"{v:.4f}" if isinstance(v, float) else v
            if m + "_stderr" + "," + f in dic:
                se = dic[m + "_stderr" + "," + f]
                se = "   N/A" if se == "N/A" else f"{se:.4f}"
                values.append([k, version, f, n, m, v, "±", se])
            else:
                values.append([k, version, f, n, m, v, "", ""])
    return values


def test_lm_eval_table_code_reads_our_results(run_dir):
    doc = write_results(run_dir, bootstrap_iters=10)
    rows = _lm_eval_make_table_rows(doc, "results") + _lm_eval_make_table_rows(doc, "groups")
    metric_rows = [r for r in rows if r[2]]  # rows with a filter are metric rows
    assert ["arith", "1.0", "none", "0", "exact_match", "0.8000", "±", f"{0.2:.4f}"] in metric_rows
    assert {r[4] for r in metric_rows} == {"exact_match", "f1", "judge", "length"}


def test_records_with_only_summary_scores_are_used(tmp_path):
    from assay.record import FilterRecord

    rec = rf.record("qa", 0, {})
    rec.filters["none"] = FilterRecord(
        filtered=["x"], verdicts={}, scores={"exact_match": 0.5}, passed={"exact_match": True}
    )
    rec2 = rf.record("qa", 1, {"exact_match": [rf.verdict(1.0)]})
    doc = build_results(rf.manifest([rf.task("qa", n=2)]), [rec, rec2], bootstrap_iters=10)
    assert doc["results"]["qa"]["exact_match,none"] == pytest.approx(0.75)
