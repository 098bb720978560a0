"""The engine's fast build paths against its exact ones, bit for bit.

* ``_hits.level_counts``: per (query, relevance level) counts replace the judgement-row passes
  for num_rel, num_nonrel, max_rel and the ideal order (nDCG's IDCG); held to the row path
  (``_MAX_COUNTED_LEVEL = -1`` turns the counts off) and to a brute-force oracle.
* ``_ranks`` strategy ``rows``: each query's scores sorted in a row, two binary searches per
  hit; held to ``count`` and ``sort`` and to trec_eval's order written out in Python, with
  -inf, inf, -0.0, uneven depths and queries without a retrieved document.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from queryeval.metrics.ranking import _hits, arrays_from_dicts, evaluate_arrays
from queryeval.metrics.ranking._hits import build_hits
from queryeval.metrics.ranking._ranks import hit_ranks

_docs = st.sampled_from([f"d{i}" for i in range(12)])
_qids = st.sampled_from(["q1", "q2", "q3", "q4", "q5"])
# Relevance: negative (pooled, unjudged), 0, graded; a huge negative one (clipped to the
# "below 0" column); levels up to 6.
_rel = st.one_of(st.integers(-3, 6), st.just(-(2**40)))
_qrels = st.dictionaries(_qids, st.dictionaries(_docs, _rel, max_size=8), max_size=5)
_score = st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, -1.0, float("inf"), float("-inf")])
_run = st.dictionaries(st.sampled_from(["q1", "q2", "q3", "q6"]),
                       st.dictionaries(_docs, _score, max_size=10), max_size=4)

#: Every measure that reads num_rel, num_nonrel, max_rel or the ideal order.
MEASURES = ["ndcg", "ndcg@1", "ndcg@3", "ndcg_cut.20", "ndcg.1=3,2=9", "Rndcg", "ndcg_rel",
            "G", "binG", "rbp", "rbp.p=0.5,2=3", "err@5", "bpref", "infAP", "gm_bpref",
            "num_rel", "num_rel_ret", "Rprec", "recall", "map", "map@3", "set_recall",
            "set_F", "iprec_at_recall_0.50", "11pt_avg", "Rprec_mult_0.5", "relative_P@2",
            "set_relative_P", "set_map", "utility", "mrr", "precision@2"]


@contextmanager
def _rows_path():
    """The judgement-row path: level counts off."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_hits, "_MAX_COUNTED_LEVEL", -1)
        yield


def _oracle_ideal(qrels: dict, qids: list[str], k: int | None):
    q, pos, gain = [], [], []
    for i, qid in enumerate(qids):
        levels = sorted((g for g in qrels.get(qid, {}).values() if g > 0), reverse=True)
        levels = levels if k is None else levels[:k]
        q += [i] * len(levels)
        pos += range(len(levels))
        gain += [float(g) for g in levels]
    return q, pos, gain


@settings(max_examples=300, deadline=None)
@given(qrels=_qrels, run=_run, level=st.integers(0, 8), skip=st.booleans())
@example(qrels={"q1": {"d0": -1, "d1": -2}}, run={}, level=0, skip=False)  # no level >= 0
@example(qrels={"q1": {"d0": 0}, "q2": {"d1": 0}}, run={}, level=1, skip=False)  # top 0
def test_level_counts_equal_the_judgement_rows(qrels, run, level, skip) -> None:
    arrays = arrays_from_dicts(qrels, run, "skip" if skip else "zero")
    if not arrays.qids:
        return
    fast = build_hits(arrays, level=level, need_judged=True)
    with _rows_path():
        exact = build_hits(arrays, level=level, need_judged=True)
    assert exact.level_counts is None
    # the rows path's figures against the counts path's, and the ideal order against Python
    np.testing.assert_array_equal(fast.num_rel, exact.num_rel)
    np.testing.assert_array_equal(fast.num_nonrel, exact.num_nonrel)
    np.testing.assert_array_equal(fast.max_rel, exact.max_rel)
    for k in (None, 1, 2, 5):
        got = fast.ideal_rows(k)
        want = exact.ideal_rows(k)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        assert [x.tolist() for x in got] == list(_oracle_ideal(qrels, arrays.qids, k))
    # num_rel, num_nonrel and max_rel against the judgements themselves
    for i, qid in enumerate(arrays.qids):
        rels = list(qrels.get(qid, {}).values())
        assert fast.num_rel[i] == sum(r >= level for r in rels)
        assert fast.num_nonrel[i] == sum(0 <= r < level for r in rels)
        assert fast.max_rel[i] == max((r for r in rels if r >= 0), default=-1)


@settings(max_examples=150, deadline=None)
@given(qrels=_qrels, run=_run, level=st.integers(0, 4), judged_only=st.booleans())
def test_every_measure_is_bit_identical_with_level_counts(qrels, run, level, judged_only) -> None:
    arrays = arrays_from_dicts(qrels, run, "zero")
    if not arrays.qids:
        return
    kw = dict(per_query=True, relevance_level=level, judged_only=judged_only)
    fast = evaluate_arrays(arrays, MEASURES, **kw)
    with _rows_path():
        exact = evaluate_arrays(arrays, MEASURES, **kw)
    for name in MEASURES:
        np.testing.assert_array_equal(fast.per_query[name], exact.per_query[name], err_msg=name)


def test_level_counts_fall_back_when_levels_span_too_much() -> None:
    q = np.array([0, 0, 1], dtype=np.int64)
    assert _hits.level_counts(q, np.array([1.0, 2.0, 65.0]), 2) is None  # top above 64
    assert _hits.level_counts(q, np.array([-1.0, -2.0, -5.0]), 2) is None  # top below 0
    assert _hits.level_counts(q[:0], np.zeros(0), 2) is None  # no judgement
    # 10,000 queries x 66 columns for 3 judgements: the rows are cheaper
    assert _hits.level_counts(q, np.array([1.0, 64.0, 0.0]), 10_000) is None
    got = _hits.level_counts(q, np.array([2.0, -7.0, 0.0]), 2)
    # columns: levels 2, 1, 0, below 0
    assert got.tolist() == [[1, 0, 0, 1], [0, 0, 1, 0]]


# ---------------------------------------------------------------- ranks: the rows strategy


def _oracle_ranks(qrels, run, qids):
    """0-based trec_eval rank (score descending, then docid descending) of every retrieved
    judgement, per query, in increasing order."""
    out: dict[str, list[int]] = {}
    for q in qids:
        ranked = sorted(run.get(q, {}).items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        judged = qrels.get(q, {})
        ranks = [r for r, (d, _) in enumerate(ranked) if d in judged]
        if ranks:
            out[q] = ranks
    return out


def _ranks(arrays, strategy: str):
    q, rank, _ = hit_ranks(arrays, strategy)
    out: dict[str, list[int]] = {}
    for qi, r in zip(q.tolist(), rank.tolist(), strict=True):
        out.setdefault(arrays.qids[qi], []).append(r)
    return out


@settings(max_examples=300, deadline=None)
@given(qrels=_qrels, run=_run, uniform=st.booleans())
@example(qrels={"q1": {"d0": 1, "d1": 1}, "q2": {"d0": 1}},
         run={"q1": {"d0": float("-inf"), "d1": float("-inf"), "d2": 1.0}, "q2": {}},
         uniform=False)  # -inf scores tie with the padding of a shorter query: not counted
def test_rows_strategy_ranks_equal_count_sort_and_trec_eval(qrels, run, uniform) -> None:
    if uniform:  # every query the same depth: the table is a view of the scores
        run = {q: dict(list(d.items())[:3]) for q, d in run.items() if len(d) >= 3}
        qrels = {q: qrels.get(q, {"d0": 1}) for q in run} | qrels
    arrays = arrays_from_dicts(qrels, run, "zero")
    if not arrays.qids:
        return
    want = _oracle_ranks(qrels, run, arrays.qids)
    for strategy in ("rows", "count", "sort"):
        assert _ranks(arrays, strategy) == want, strategy


def test_auto_takes_rows_for_dense_hits_and_count_for_sparse(monkeypatch) -> None:
    """The rows table when hits need more comparisons than the run has entries (4 queries x
    30 relevant of 40 retrieved), counting when they need fewer (1 each); same ranks as
    ``count`` either way."""
    from queryeval.metrics.ranking import _ranks

    used = []
    real = _ranks._by_rows
    monkeypatch.setattr(_ranks, "_by_rows", lambda *a: used.append(1) or real(*a))
    rng = np.random.default_rng(5)
    dense = {f"q{i}": {f"d{j}": int(rng.integers(1, 3)) for j in range(30)} for i in range(4)}
    run = {f"q{i}": {f"d{j}": float(rng.integers(0, 5)) for j in range(40)} for i in range(4)}
    sparse = {q: dict(list(d.items())[:1]) for q, d in dense.items()}
    for qrels, rows in ((dense, True), (sparse, False)):
        arrays = arrays_from_dicts(qrels, run)
        used.clear()
        q, rank, _ = hit_ranks(arrays, "auto")
        assert bool(used) == rows
        q2, rank2, _ = hit_ranks(arrays, "count")
        np.testing.assert_array_equal(q, q2)
        np.testing.assert_array_equal(rank, rank2)
