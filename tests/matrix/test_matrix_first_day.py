"""The cross-feature matrix for the seams a newcomer's audit fixed (each built here as a user
builds it, every consumer checked by tests/helpers/matrix_checks.py against hand-computed values):

* a DeepEval dataset of the same questions as a native suite compares with it case by case
  when its records carry the suite's ids (without ids the compare is refused: it paired
  nothing and exited 0, tests/report/test_compare_disjoint.py), plain and with repeats;
* a judged free-form run cached under the default folder ``$QUERYEVAL_CACHE_DIR/calls``,
  beside the judge's own cache in the same root (the call cache used the root and refused
  it once the judge had written there, tests/run/test_cache_root_relative.py).
"""

from __future__ import annotations

import json
import math

import pytest

import queryeval as qe
from helpers.judge_fake import FakeJudgeServer
from helpers.matrix_checks import check_ci, check_compare, check_consumers

# id -> (question, reference, response); the ladder: exact, number fail, number pass, text
QUESTIONS = {
    "capital": ("What is the capital of France?", "Paris", "paris."),
    "count": ("How many stations are there?", "42", "There are 41 stations."),
    "year": ("How many moons has Mars?", "2", "Mars has 2 moons."),
    "reason": ("Why did sales drop?", "a supply shortage", "it was a supply shortage"),
}
LADDER = {"capital": 1.0, "count": 0.0, "year": 1.0, "reason": 0.0}  # reason: inconclusive
JUDGED = {**LADDER, "reason": 1.0}  # the fake judge passes a response holding the reference

BOTS = """
R = {resp!r}
N = {{}}

def plain(request):
    return {{"response": R[request["case_id"]]}}

def repeated(request):  # count answers 42 on every other call: 1 of 2 attempts passes
    cid = request["case_id"]
    N[cid] = N.get(cid, 0) + 1
    if cid == "count" and N[cid] % 2 == 0:
        return {{"response": "There are 42 stations."}}
    return {{"response": R[cid]}}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("newcomer_matrix")
    (root / "bots.py").write_text(BOTS.format(resp={c: r for c, (_, _, r) in QUESTIONS.items()}))
    with open(root / "cases.jsonl", "w") as fh:
        for cid, (q, ref, _) in QUESTIONS.items():
            fh.write(json.dumps({"id": cid, "conversation": [{
                "role": "user", "content": q, "target": {"reference": {"answer": ref}}}]}) + "\n")
    (root / "deepeval.json").write_text(json.dumps([
        {"id": cid, "input": q, "expected_output": ref, "actual_output": r}
        for cid, (q, ref, r) in QUESTIONS.items()]))
    return root


@pytest.fixture(scope="module")
def runs(lab):
    out = lab / "runs"
    native = qe.evaluate(str(lab / "cases.jsonl"), system=f"python:{lab / 'bots.py'}:plain",
                         out=out, reports=True, name="native", retries=0)
    deepeval = qe.evaluate(str(lab / "deepeval.json"), responses=str(lab / "deepeval.json"),
                           out=out, reports=True, name="deepeval")
    repeated = qe.evaluate(str(lab / "deepeval.json"), system=f"python:{lab / 'bots.py'}:repeated",
                           repeats=2, out=out, reports=True, name="repeated", retries=0)
    return native, deepeval, repeated


def test_native_and_deepeval_runs_agree_in_every_consumer(lab, runs):
    native, deepeval, _ = runs
    for run in (native, deepeval):
        assert check_consumers(run, "passed", LADDER, overall="pass_rate",
                               viewer_root=lab / "runs") == pytest.approx(0.5)


def test_deepeval_with_repeats_every_consumer(lab, runs):
    *_, repeated = runs
    per_case = {**LADDER, "count": 0.5}
    assert check_consumers(repeated, "passed", per_case, overall="pass_rate",
                           viewer_root=lab / "runs") == pytest.approx(2.5 / 4)


def test_deepeval_dataset_compares_with_the_native_suite(runs, tmp_path):
    native, deepeval, repeated = runs
    check_compare(native, deepeval, "passed", LADDER, LADDER, tmp_path)
    check_compare(native, repeated, "passed", LADDER, {**LADDER, "count": 0.5}, tmp_path)


def test_judged_run_cached_under_the_default_root(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "root"))
    fake = FakeJudgeServer()
    try:
        opts = {"system": f"python:{lab / 'bots.py'}:plain", "judge": {
            "model": "judge-test", "base_url": fake.url}, "cache": True,
            "system_version": "v1", "reports": True, "retries": 0}
        first = qe.evaluate(str(lab / "cases.jsonl"), out=tmp_path / "runs" / "a", **opts)
        asked = len(fake.requests)
        again = qe.evaluate(str(lab / "cases.jsonl"), out=tmp_path / "runs" / "b", **opts)
    finally:
        fake.close()
    assert asked == 1 and len(fake.requests) == 1  # one inconclusive case, then its cached reply
    assert list((tmp_path / "root" / "judge").glob("*.json"))
    assert first.metrics["cache"]["hits"] == 0
    assert again.metrics["cache"]["hits"] == len(QUESTIONS)
    assert again.metrics["cache"]["folder"] == str(tmp_path / "root" / "calls")
    for run in (first, again):
        assert check_consumers(run, "passed", JUDGED, overall="pass_rate",
                               viewer_root=tmp_path / "runs") == pytest.approx(0.75)
    check_compare(first, again, "passed", JUDGED, JUDGED, tmp_path)


# a case decided by another rule in each attempt: reason is inconclusive in attempts 0 and 2,
# exact in attempt 1; capital is exact, count fails by number, in every attempt
VARYING = """
ANSWERS = {"capital": ["paris."] * 3, "count": ["There are 41 stations."] * 3,
           "reason": ["parts were short", "a supply shortage", "parts were short"]}

def varying(request):
    return {"response": ANSWERS[request["case_id"]][request["repeat"]]}
"""
RULES = {"exact": (4 / 3, 4 / 3), "number": (1, 0), "inconclusive": (2 / 3, 0)}  # cases, passed


def test_rule_groups_of_a_repeated_run_on_every_surface(tmp_path):
    from starlette.testclient import TestClient

    from queryeval.integrations.mlflow import run_metrics
    from queryeval.viewer.server import create_app

    (tmp_path / "bots.py").write_text(VARYING)
    suite = [{"id": cid, "conversation": [{"role": "user", "content": q, "target": {
        "reference": {"answer": ref}}}]} for cid, (q, ref, _) in QUESTIONS.items()
        if cid != "year"]
    run = qe.evaluate(suite, system=f"python:{tmp_path / 'bots.py'}:varying", repeats=3,
                      out=tmp_path / "runs", reports=True, retries=0)
    per_case = {"capital": 1.0, "count": 0.0, "reason": 1 / 3}
    check_consumers(run, "passed", per_case, overall="pass_rate", viewer_root=tmp_path / "runs")
    assert run.overall["inconclusive"] == pytest.approx(2 / 3)
    frame = run.groups["decided_by"]
    viewer = TestClient(create_app(tmp_path / "runs", resamples=50), base_url="http://127.0.0.1")
    shown = viewer.get(f"/api/runs/{run.batch_id}").json()["groups"]["decided_by"]
    logged = run_metrics(run.results)
    # a count --repeats averaged is shown as "KEY (mean over repeats)" (docs/reports.md)
    def col(table, key):
        return table[key] if key in table else table[f"{key} (mean over repeats)"]

    for rule, (cases, passed) in RULES.items():
        assert col(frame, "cases")[rule] == pytest.approx(cases)
        assert col(frame, "passed")[rule] == pytest.approx(passed)
        assert col(shown[rule], "cases") == pytest.approx(cases)
        assert logged[f"group.decided_by.{rule}.cases"] == pytest.approx(cases)
    assert col(frame, "cases").sum() == pytest.approx(run.overall["cases"])


# --- retrieval: graded relevant chunks, native questions CSV and the same ragas dataset -------
CHUNKS = {f"c{i}": f"Chunk {i} says fact number {i} about the city." for i in range(6)}
# question -> (relevant chunk ids with their grade in the native CSV, retrieved ids)
RAG = {
    "Where is fact 0?": ({"c0": 2, "c1": 1}, ["c1", "c5", "c0"]),   # both found: ranks 1 and 3
    "Where is fact 2?": ({"c2": 1}, ["c3"]),                         # the retriever fails here
    "Where is fact 4?": ({"c4": 1, "c3": 1}, ["c4", "c2"]),          # one of two, rank 1
}
RAG_BOTS = """
import json
HITS = {hits!r}
TEXT = {text!r}

def failing(request):
    q = request["question"]
    if q == "Where is fact 2?":
        raise RuntimeError("index down")
    return {{"retrieved_chunks": [{{"chunk_id": c, "content": TEXT[c], "score": 1.0 - i / 10}}
                                  for i, c in enumerate(HITS[q])]}}
"""


@pytest.fixture(scope="module")
def rag(tmp_path_factory):
    import csv

    root = tmp_path_factory.mktemp("newcomer_rag")
    with open(root / "corpus.jsonl", "w") as fh:
        for cid, text in CHUNKS.items():
            fh.write(json.dumps({"chunk_id": cid, "content": text, "document_name": "d",
                                 "dataset": ""}) + "\n")
    with open(root / "questions.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer", "document_name", "dataset", "chunk_id", "relevance"])
        for q, (rel, _) in RAG.items():
            for cid, grade in rel.items():
                w.writerow([q, "the city", "d", "", cid, grade])
    with open(root / "ragas.jsonl", "w") as fh:  # ragas has no grades: every context is 1
        for q, (rel, _) in RAG.items():
            fh.write(json.dumps({"user_input": q, "reference": "the city",
                                 "reference_contexts": [CHUNKS[c] for c in rel]}) + "\n")
    (root / "bots.py").write_text(RAG_BOTS.format(hits={q: h for q, (_, h) in RAG.items()},
                                                  text=CHUNKS))
    runs = {}
    for suite in ("questions.csv", "ragas.jsonl"):
        for on_error in ("score", "skip"):
            runs[suite, on_error] = qe.evaluate(
                str(root / suite), f"python:{root / 'bots.py'}:failing",
                corpus=str(root / "corpus.jsonl"), k=[1, 3], repeats=2, on_error=on_error,
                retries=0, out=root / "runs", reports=True, name=f"{suite}-{on_error}")
    return root, runs


def _by_question(run, values: dict[str, float]) -> dict[str, float]:
    ids = {c.case_id: c.name for c in run.results.cases}
    by_q = {r["question"]: r["case_id"] for r in run.results.records}
    assert set(by_q.values()) == set(ids)
    return {by_q[q]: v for q, v in values.items()}


# recall@3: 2/2, 0 (error), 1/2; ndcg@3 graded in the CSV (c0 gain 2 at rank 3, c1 gain 1 at 1)
NDCG_CSV = (1 + 2 / math.log2(4)) / (2 + 1 / math.log2(3))
NDCG_RAGAS = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
NDCG_4 = 1 / (1 + 1 / math.log2(3))  # c4 at rank 1, c3 not found
RECALL = {"Where is fact 0?": 1.0, "Where is fact 2?": 0.0, "Where is fact 4?": 0.5}


@pytest.mark.parametrize("suite, ndcg0", [("questions.csv", NDCG_CSV),
                                          ("ragas.jsonl", NDCG_RAGAS)])
def test_graded_retrieval_with_errors_and_repeats_every_consumer(rag, tmp_path, suite, ndcg0):
    root, runs = rag
    ndcg = {"Where is fact 0?": ndcg0, "Where is fact 2?": 0.0, "Where is fact 4?": NDCG_4}
    scored, skipped = runs[suite, "score"], runs[suite, "skip"]
    recall, per_ndcg = _by_question(scored, RECALL), _by_question(scored, ndcg)
    failed = _by_question(scored, {"Where is fact 2?": 0})
    kept = [c for c in recall if c not in failed]
    assert check_consumers(scored, "recall@3", recall, csv_file=False,
                           viewer_root=root / "runs") == pytest.approx(0.5)
    check_consumers(scored, "ndcg@3", per_ndcg, csv_file=False)
    assert check_consumers(skipped, "recall@3", recall, counted=kept, csv_file=False,
                           viewer_root=root / "runs") == pytest.approx(0.75)
    # the task's verdict: any relevant chunk in the top k (hit rate); none here fails
    verdicts = {c: ("error" if c in failed else "pass" if recall[c] > 0 else "fail")
                for c in recall}
    assert sorted(verdicts.values()) == ["error", "pass", "pass"]
    check_ci(scored, "recall@3", recall, verdicts, tmp_path)


def test_graded_native_and_ragas_runs_compare(rag, tmp_path):
    _, runs = rag
    native, ragas = runs["questions.csv", "score"], runs["ragas.jsonl", "score"]
    recall = _by_question(native, RECALL)
    assert recall == _by_question(ragas, RECALL)  # the same case ids: qa_pair_id("", q, answer)
    check_compare(native, ragas, "recall@3", recall, recall, tmp_path)
    ndcg_a = _by_question(native, {"Where is fact 0?": NDCG_CSV, "Where is fact 2?": 0.0,
                                   "Where is fact 4?": NDCG_4})
    ndcg_b = _by_question(ragas, {"Where is fact 0?": NDCG_RAGAS, "Where is fact 2?": 0.0,
                                  "Where is fact 4?": NDCG_4})
    check_compare(native, ragas, "ndcg@3", ndcg_a, ndcg_b, tmp_path)
