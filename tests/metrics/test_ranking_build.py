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
            "G", "binG", "rbp", "rbp.p=0.5,2=3", "err_qmax@5", "bpref", "infAP", "gm_bpref",
            "num_rel", "num_rel_ret", "Rprec", "recall", "map", "map@3", "set_recall",
            "set_F", "iprec_at_recall_0.50", "11pt_avg", "Rprec_mult_0.5", "relative_P@2",
            "set_relative_P", "set_map", "utility", "mrr", "precision@2"]


@contextmanager
def _rows_path():
    """The judgement-row path: level counts off."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_hits, "_MAX_COUNTED_LEVEL", -1)
        yield


@contextmanager
def _ext(on: bool):
    """The compiled extensions on (env unset) or off (``QUERYEVAL_NO_EXT=1``)."""
    with pytest.MonkeyPatch.context() as mp:
        if on:
            mp.delenv("QUERYEVAL_NO_EXT", raising=False)
        else:
            mp.setenv("QUERYEVAL_NO_EXT", "1")
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


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 6), st.one_of(st.integers(-5, 9),
                                                           st.just(-(2**62)))), max_size=60))
def test_compiled_level_counts_equal_numpy(rows) -> None:
    """``_dictflat.count_levels`` (one pass) against the numpy bincount it replaces."""
    q = np.array([r[0] for r in rows], dtype=np.int64)
    rel = np.array([r[1] for r in rows], dtype=np.float64)
    with _ext(True):
        fast = _hits.level_counts(q, rel, 7)
    with _ext(False):
        exact = _hits.level_counts(q, rel, 7)
    if exact is None:
        assert fast is None
        return
    assert fast.dtype == exact.dtype and fast.shape == exact.shape
    np.testing.assert_array_equal(fast, exact)


def test_compiled_level_counts_refuse_out_of_range() -> None:
    dictflat = pytest.importorskip("queryeval._dictflat")
    q, rel = np.array([0, 1], dtype=np.int64), np.array([2.0, -9.0])
    got = np.frombuffer(dictflat.count_levels(q, rel, 2, 2), dtype=np.int64)
    assert got.reshape(2, 4).tolist() == [[1, 0, 0, 0], [0, 0, 0, 1]]
    for args in [(q, np.array([3.0, 0.0]), 2, 2), (q, np.array([np.nan, 0.0]), 2, 2),
                 (q, rel, 1, 2), (np.array([0, -1], dtype=np.int64), rel, 2, 2),
                 (q, rel[:1], 2, 2), (q, rel, 2, -1)]:
        with pytest.raises(ValueError):
            dictflat.count_levels(*args)


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


# ---------------------------------------------------------------- columns: the compiled pass


def _build(qrels, run, mapping, missing_query):
    from queryeval.metrics.ranking import arrays_from_columns

    try:
        return arrays_from_columns(qrels, run, mapping, missing_query)
    except ValueError as exc:  # DuplicateEntryError included: compared field by field
        return (type(exc), str(exc), getattr(exc, "rows", None))


@st.composite
def _column_pair(draw):
    """Dictionary-encoded qrels and run (every name used), grouped or shuffled, with
    duplicated pairs, judged documents the run never retrieves, queries on one side only."""
    from queryeval.metrics.ranking import Columns

    n_doc = draw(st.integers(1, 8))
    cell = st.tuples(st.integers(0, 5), st.integers(0, n_doc - 1))
    judged = draw(st.lists(st.tuples(cell, st.integers(-2, 3)), min_size=1, max_size=30))
    retrieved = draw(st.lists(st.tuples(cell, _score.filter(lambda s: s == s)), max_size=30))
    if not draw(st.booleans()):  # usually no duplicated pair (then every value is compared)
        judged = list({c: (c, v) for c, v in judged}.values())
        retrieved = list({c: (c, v) for c, v in retrieved}.values())
    for rows in (judged, retrieved):
        if draw(st.booleans()):
            rows.sort(key=lambda r: r[0][0])  # grouped by query

    def columns(rows, prefix, dtype):
        qs = sorted({c[0] for c, _ in rows}, key=lambda q: -q)  # codes in any name order
        ds = sorted({c[1] for c, _ in rows})
        return Columns(q=np.array([qs.index(c[0]) for c, _ in rows], dtype=np.int64),
                       names_q=[f"q{q}" for q in qs],
                       doc=np.array([ds.index(c[1]) for c, _ in rows], dtype=np.int64),
                       names_doc=np.array([f"{prefix}{d}" for d in ds], dtype=object),
                       value=np.array([v for _, v in rows], dtype=dtype)), ds

    qrels, jds = columns(judged, "d", np.int64)
    if not retrieved:
        return qrels, None, None
    run, rds = columns(retrieved, "d", np.float64)
    mapping = np.array([rds.index(d) if d in rds else -1 for d in jds], dtype=np.int64)
    return qrels, run, mapping


@pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("queryeval._dictflat") is None,
    reason="queryeval._dictflat not built",
)
@settings(max_examples=400, deadline=None)
@given(pair=_column_pair(), missing_query=st.sampled_from(["zero", "skip"]))
def test_compiled_judgement_pass_equals_the_numpy_one(pair, missing_query) -> None:
    qrels, run, mapping = pair
    if run is None:
        return
    with _ext(True):
        fast = _build(qrels, run, mapping, missing_query)
    with _ext(False):
        exact = _build(qrels, run, mapping, missing_query)
    if isinstance(exact, tuple) or isinstance(fast, tuple):
        assert fast == exact  # the same error, the same rows
        return
    assert fast.qids == exact.qids and fast.n_missing == exact.n_missing
    for name in ("seg_start", "seg_len", "scores", "judged_q", "judged_gain", "judged_score"):
        a, b = getattr(fast, name), getattr(exact, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(fast.doc_codes.judged, exact.doc_codes.judged)
    idx = np.arange(len(exact.judged_docid))
    assert fast.judged_docid[idx].tolist() == exact.judged_docid[idx].tolist()


def test_compiled_judgement_pass_refuses_codes_out_of_range() -> None:
    dictflat = pytest.importorskip("queryeval._dictflat")
    i32, i64 = np.int32, np.int64
    ok = dict(q=np.array([0], i32), doc=np.array([0], i32), value=np.array([1], i64),
              qmap=np.array([0], i64), docmap=np.array([0], i64), seg_start=np.array([0], i64),
              seg_len=np.array([1], i64), run_doc=np.array([0], i32), scores=np.array([0.5]),
              n_run_docs=1)
    assert dictflat.judge(*ok.values())[:4] == (0, 0, 1, 1)
    for field, bad in [("q", np.array([1], i32)), ("doc", np.array([-1], i32)),
                       ("qmap", np.array([1], i64)), ("docmap", np.array([2], i64)),
                       ("seg_len", np.array([2], i64)), ("run_doc", np.array([-3], i32)),
                       ("run_doc", np.array([1], i32)), ("n_run_docs", 0)]:
        with pytest.raises(ValueError, match="out of range"):
            dictflat.judge(*{**ok, field: bad}.values())
    with pytest.raises(ValueError, match="lengths differ"):
        dictflat.judge(*{**ok, "value": np.array([1, 2], i64)}.values())
