"""Single-pass (streamed) aggregates of the retrieval and query tasks.

``aggregate`` must read its records once (``OnePass`` raises on a second pass), keep no
record, and give the same figures as a list-based computation: checked on hand-made records
with hand-computed values, against a brute-force oracle (hypothesis), and for flat memory with
tracemalloc over a generator.
"""

from __future__ import annotations

import math
import tracemalloc
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.one_pass import OnePass
from queryeval.tasks.query.task import F1_KEYS, RATE_KEYS, QueryTask
from queryeval.tasks.retrieval.task import RetrievalTask

QKEYS = (*F1_KEYS, *RATE_KEYS)


# --- retrieval: hand-made records ------------------------------------------------------------
def _ret(task: RetrievalTask, dataset: str, hashes: list[str], scores: list[float | None],
         time_ms: float | None, error: str | None = None) -> dict:
    """A record scored by the task itself: the expected chunk's hash is ``"gold"``."""
    record = {
        "qa_pair_id": f"{dataset}-{len(hashes)}-{time_ms}", "dataset": dataset,
        "status": "error" if error else "ok", "error_kinds": [error] if error else [],
        "expected_chunk": {"content_hash": "gold"},
        "evaluation_result": {"retrieval_time_ms": time_ms},
        "retrieved_chunks": [{"chunk_id": str(i), "score": s, "content": "", "content_hash": h}
                             for i, (h, s) in enumerate(zip(hashes, scores, strict=True))],
    }
    return task.rescore_record(record)


def _five(task: RetrievalTask) -> list[dict]:
    """B first (dataset order is first-seen, not sorted); B has two misses, A one."""
    return [
        _ret(task, "B", ["x", "gold"], [0.9, 0.8], None),            # rank 2
        _ret(task, "A", ["gold"], [0.9], 10.0),                      # rank 1
        _ret(task, "A", ["x", "y"], [0.4, 0.6], 20.0),               # miss, best score 0.6
        _ret(task, "B", [], [], 30.0),                               # miss, no scores
        _ret(task, "B", ["z"], [0.2], 40.0, error="timeout"),        # miss, best 0.2, an error
    ]


def test_retrieval_hand_computed():
    task = RetrievalTask({"k": [5]})
    m = task.aggregate(OnePass(_five(task)))
    o = m["overall_metrics"]
    ndcg2 = 1 / math.log2(3)
    assert o["recall_at_k"] == o["recall@5"] == pytest.approx(2 / 5)
    assert o["mrr@5"] == pytest.approx(1.5 / 5) and o["map@5"] == pytest.approx(1.5 / 5)
    assert o["ndcg@5"] == pytest.approx((1 + ndcg2) / 5)
    assert o["hit_rate@5"] == pytest.approx(2 / 5)
    assert o["precision@5"] == pytest.approx(0.4 / 5)
    assert o["mean_retrieval_time_ms"] == pytest.approx(25.0)
    assert (o["total_questions"], o["successful_retrievals"], o["k"]) == (5, 2, 5)
    assert (o["errors"], o["errors_by_kind"]) == (1, {"timeout": 1})
    analysis = {"incorrect_retrievals_count": 3, "avg_score_incorrect": pytest.approx(0.4),
                "datasets_with_incorrect_retrievals": ["B", "A"]}
    assert m["incorrect_retrievals_analysis"] == analysis == o["incorrect_retrievals_analysis"]
    assert list(m["dataset_metrics"]) == ["B", "A"]
    assert m["group_metrics"] == {"dataset": m["dataset_metrics"]}
    a, b = m["dataset_metrics"]["A"], m["dataset_metrics"]["B"]
    assert list(a) == ["recall_at_k", "sample_size", "avg_score_incorrect",
                       "mrr@5", "ndcg@5", "hit_rate@5", "precision@5", "map@5"]
    assert a == {"recall_at_k": 0.5, "sample_size": 2, "avg_score_incorrect": 0.6, "mrr@5": 0.5,
                 "ndcg@5": 0.5, "hit_rate@5": 0.5, "precision@5": pytest.approx(0.1), "map@5": 0.5}
    assert b == {"recall_at_k": pytest.approx(1 / 3), "sample_size": 3, "avg_score_incorrect": 0.2,
                 "mrr@5": pytest.approx(0.5 / 3), "ndcg@5": pytest.approx(ndcg2 / 3),
                 "hit_rate@5": pytest.approx(1 / 3), "precision@5": pytest.approx(0.2 / 3),
                 "map@5": pytest.approx(0.5 / 3)}


def test_retrieval_skip_errors_and_empty():
    task = RetrievalTask({"k": [5], "on_error": "skip"})
    m = task.aggregate(OnePass(_five(task)))
    o = m["overall_metrics"]
    assert (o["total_questions"], o["successful_retrievals"], o["errors"]) == (4, 2, 1)
    assert o["recall_at_k"] == 0.5
    # the skipped error was B's only scored miss: its dataset keeps a miss but no score
    assert m["incorrect_retrievals_analysis"] == {"incorrect_retrievals_count": 2, "avg_score_incorrect": 0.6,
                                                  "datasets_with_incorrect_retrievals": ["A", "B"]}
    assert m["dataset_metrics"]["B"]["avg_score_incorrect"] is None
    assert m["dataset_metrics"]["B"]["sample_size"] == 2

    empty = task.aggregate(iter([]))
    assert empty["dataset_metrics"] == {}
    eo = empty["overall_metrics"]
    assert eo["recall_at_k"] is None and eo["mrr@5"] is None and eo["mean_retrieval_time_ms"] is None
    assert (eo["total_questions"], eo["errors"], eo["errors_by_kind"]) == (0, 0, {})


# --- query: hand-made records -----------------------------------------------------------------
def _q(f1: float, rates: tuple[float, float, float], meta: dict | None, *, kinds=(), gold_fail=False,
       exact: bool | None = True) -> dict:
    scores = None if gold_fail else {**dict.fromkeys(F1_KEYS, f1), **dict(zip(RATE_KEYS, rates, strict=True))}
    return {"case_id": "c", "status": "error" if kinds else "ok", "error_kinds": list(kinds),
            "metadata": meta or {}, "scores": scores, "mapping_exact": exact}


def _four() -> list[dict]:
    return [
        _q(1.0, (1.0, 1.0, 1.0), {"question_source": "human", "building": "b2"}),
        _q(0.5, (1.0, 1.0, 0.0), {"question_source": "llm", "building": "b1"}, exact=False),
        _q(0.0, (0.0, 0.0, 0.0), {"question_source": "human"}, kinds=["gold_query"], gold_fail=True),
        _q(0.0, (0.0, 0.0, 0.0), {"building": "b1", "question_source": ""}, kinds=["timeout"]),
    ]


def test_query_hand_computed_on_error_score():
    m = QueryTask({}).aggregate(OnePass(_four()))
    o = m["overall_metrics"]
    assert list(o) == ["cases", *QKEYS, "total_cases", "gold_failures", "inexact_mapping_searches",
                       "rules", "errors", "errors_by_kind"]
    assert o["cases"] == 3 and o["arity_f1"] == 0.5 and o["exact_match_f1"] == 0.5
    assert o["syntax_ok"] == pytest.approx(2 / 3) and o["perfect_match"] == pytest.approx(1 / 3)
    assert (o["total_cases"], o["gold_failures"], o["inexact_mapping_searches"]) == (4, 1, 1)
    assert (o["errors"], o["errors_by_kind"], o["rules"]) == (2, {"gold_query": 1, "timeout": 1}, "clean")
    g = m["group_metrics"]
    assert list(g) == ["question_source", "building"]
    assert list(g["building"]) == ["b1", "b2"] and list(g["question_source"]) == ["human", "llm"]
    assert g["building"]["b1"] == {"cases": 2, **dict.fromkeys(F1_KEYS, 0.25), "syntax_ok": 0.5,
                                   "returns_results": 0.5, "perfect_match": 0.0}
    assert g["building"]["b2"] == {"cases": 1, **dict.fromkeys(QKEYS, 1.0)}
    # the gold failure (human) is in no mean
    assert g["question_source"]["human"] == g["building"]["b2"]
    assert g["question_source"]["llm"]["cases"] == 1 and g["question_source"]["llm"]["arity_f1"] == 0.5


def test_query_hand_computed_on_error_skip():
    m = QueryTask({"on_error": "skip"}).aggregate(OnePass(_four()))
    o = m["overall_metrics"]
    assert o["cases"] == 2 and o["arity_f1"] == 0.75 and o["perfect_match"] == 0.5
    assert (o["total_cases"], o["gold_failures"], o["errors"]) == (4, 1, 2)
    assert m["group_metrics"]["building"]["b1"]["cases"] == 1
    assert m["group_metrics"]["building"]["b1"]["arity_f1"] == 0.5


def test_query_only_gold_failures():
    recs = [_q(0, (0, 0, 0), {"building": "b1"}, kinds=["gold_query"], gold_fail=True)]
    m = QueryTask({}).aggregate(OnePass(recs))
    assert m["group_metrics"] == {}
    o = m["overall_metrics"]
    assert o["cases"] == 0 and all(o[k] is None for k in QKEYS)
    assert (o["total_cases"], o["gold_failures"], o["errors"]) == (1, 1, 1)


# --- property tests against brute-force oracles ---------------------------------------------------
floats = st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0.0, 1.0, 0.1, 1 / 3])
ret_record = st.fixed_dictionaries({
    "dataset": st.sampled_from(["a", "b", "c", "d"]),
    "hit": st.booleans(),
    "chunk_scores": st.lists(st.none() | floats, max_size=4),
    "time": st.none() | floats,
    "error": st.booleans(),
    "scores": st.lists(floats, min_size=5, max_size=5),
})


def _ret_records(specs: list[dict], k: int) -> list[dict]:
    names = ("mrr", "ndcg", "hit_rate", "precision", "map")
    return [{"dataset": s["dataset"], "status": "error" if s["error"] else "ok",
             "error_kinds": ["timeout"] if s["error"] else [],
             "retrieved_chunks": [{"score": c} for c in s["chunk_scores"]],
             "evaluation_result": {"correct_chunk_retrieved": s["hit"], "retrieval_time_ms": s["time"]},
             "scores": {f"{n}@{k}": v for n, v in zip(names, s["scores"], strict=True)}} for s in specs]


def _mean(xs: list[float]) -> float | None:
    """The exact mean, correctly rounded (what the aggregates compute, in any order)."""
    return float(sum(map(Fraction, xs)) / len(xs)) if xs else None


@settings(max_examples=100, deadline=None)
@given(st.lists(ret_record, max_size=40), st.sampled_from(["score", "skip"]), st.sampled_from([1, 10]))
def test_retrieval_matches_oracle(specs, on_error, k):
    records = _ret_records(specs, k)
    m = RetrievalTask({"k": [k], "on_error": on_error}).aggregate(r for r in records)
    counted = [r for r in records if on_error == "score" or r["status"] != "error"]

    def best(r):  # best score of a miss, or None
        s = [c["score"] for c in r["retrieved_chunks"] if c["score"] is not None]
        return max(s) if s and not r["evaluation_result"]["correct_chunk_retrieved"] else None

    def figures(rs):
        out = {"recall_at_k": sum(r["evaluation_result"]["correct_chunk_retrieved"] for r in rs) / len(rs)
               if rs else None, "sample_size": len(rs),
               "avg_score_incorrect": _mean([best(r) for r in rs if best(r) is not None])}
        for n in ("mrr", "ndcg", "hit_rate", "precision", "map"):
            out[f"{n}@{k}"] = _mean([r["scores"][f"{n}@{k}"] for r in rs])
        return out

    want = figures(counted)
    o = m["overall_metrics"]
    assert {key: o[key] for key in want if key in o} == {key: want[key] for key in want if key in o}
    assert m["incorrect_retrievals_analysis"]["avg_score_incorrect"] == want["avg_score_incorrect"]
    assert o["mean_retrieval_time_ms"] == _mean([r["evaluation_result"]["retrieval_time_ms"] for r in counted
                                                 if r["evaluation_result"]["retrieval_time_ms"] is not None])
    by_ds = {ds: [r for r in counted if r["dataset"] == ds] for ds in dict.fromkeys(r["dataset"] for r in counted)}
    assert list(m["dataset_metrics"]) == list(by_ds)
    assert m["dataset_metrics"] == {ds: figures(rs) for ds, rs in by_ds.items()}
    misses = Counter(r["dataset"] for r in counted if not r["evaluation_result"]["correct_chunk_retrieved"])
    assert m["incorrect_retrievals_analysis"]["datasets_with_incorrect_retrievals"] == \
        sorted(misses, key=lambda d: (-misses[d], d))
    assert o["errors"] == sum(s["error"] for s in specs)


q_record = st.fixed_dictionaries({
    "scores": st.none() | st.lists(floats, min_size=7, max_size=7),
    "error": st.booleans(),
    "question_source": st.sampled_from([None, "", "human", "llm", "template"]),
    "building": st.sampled_from([None, "b1", "b2", "b10"]),
    "exact": st.sampled_from([True, False, None]),
})


@settings(max_examples=100, deadline=None)
@given(st.lists(q_record, max_size=40), st.sampled_from(["score", "skip"]))
def test_query_matches_oracle(specs, on_error):
    records = [{"status": "error" if s["error"] or s["scores"] is None else "ok",
                "error_kinds": ["gold_query"] if s["scores"] is None else [],
                "scores": None if s["scores"] is None else dict(zip(QKEYS, s["scores"], strict=True)),
                "metadata": {k: s[k] for k in ("question_source", "building") if s[k] is not None},
                "mapping_exact": s["exact"]} for s in specs]
    m = QueryTask({"on_error": on_error}).aggregate(r for r in records)
    scored = [r for r in records if r["scores"] is not None and (on_error == "score" or r["status"] != "error")]

    def means(rs):
        return {"cases": len(rs), **{k: _mean([r["scores"][k] for r in rs]) for k in QKEYS}}

    o = m["overall_metrics"]
    assert {k: o[k] for k in ("cases", *QKEYS)} == means(scored)
    assert o["total_cases"] == len(records)
    assert o["gold_failures"] == sum(r["scores"] is None for r in records)
    assert o["inexact_mapping_searches"] == sum(r["mapping_exact"] is False for r in scored)
    want = {}
    for g in ("question_source", "building"):
        names = sorted({r["metadata"][g] for r in scored if r["metadata"].get(g)})
        if names:
            want[g] = {n: means([r for r in scored if r["metadata"].get(g) == n]) for n in names}
    assert m["group_metrics"] == want
    assert list(m["group_metrics"]) == list(want)
    for g in want:
        assert list(m["group_metrics"][g]) == list(want[g])


# --- flat memory -----------------------------------------------------------------------------------
N = 50_000


def _ret_stream(n: int, k: int = 10):
    for i in range(n):
        rank = None if i % 3 == 0 else i % k + 1
        yield {"dataset": f"d{i % 7}", "status": "ok", "error_kinds": [],
               "retrieved_chunks": [{"score": (i % 97) / 97} for _ in range(3)],
               "evaluation_result": {"correct_chunk_retrieved": rank is not None, "retrieval_time_ms": float(i % 50)},
               "scores": {f"mrr@{k}": 1 / rank if rank else 0.0, f"ndcg@{k}": 1 / math.log2(rank + 1) if rank else 0.0,
                          f"hit_rate@{k}": 1.0 if rank else 0.0, f"precision@{k}": 0.1 if rank else 0.0,
                          f"map@{k}": 1 / rank if rank else 0.0, f"recall@{k}": 1.0 if rank else 0.0}}


def _query_stream(n: int):
    for i in range(n):
        yield {"case_id": str(i), "status": "ok", "error_kinds": [], "mapping_exact": i % 5 != 0,
               "metadata": {"question_source": f"s{i % 3}", "building": f"b{i % 13}"},
               "scores": dict.fromkeys(QKEYS, (i % 17) / 17)}


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("task, stream", [(RetrievalTask({"k": [10]}), _ret_stream), (QueryTask({}), _query_stream)],
                         ids=["retrieval", "query"])
def test_aggregate_memory_is_flat(task, stream):
    """Nothing is kept per record: the peak is that of one record and the running sums (a
    list of these 50,000 records would take 55-99 MB)."""
    m: dict = {}
    peak = _peak(lambda: m.update(task.aggregate(stream(N))))
    assert peak < 200_000, peak
    assert m["overall_metrics"].get("total_questions", m["overall_metrics"].get("total_cases")) == N
