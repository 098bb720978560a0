"""Ranking engine: hand-computed values, trec_eval conventions, cross-checks (pytrec_eval, ranx)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.ranking import (
    RankingResult,
    arrays_from_dicts,
    evaluate,
    evaluate_arrays,
    parse_metric,
)

# The seed example (also checked against pytrec_eval below): scores d=3, c=2, then a, b, e tie
# at 1.0 and break by docid descending: ranking d, c, e, b, a. Relevant: b (2) at rank 4,
# a (1) at rank 5; c is judged 0 and d -1 (not relevant, gain 0).
QRELS = {"q1": {"a": 1, "b": 2, "c": 0, "d": -1}}
RUN = {"q1": {"a": 1.0, "b": 1.0, "c": 2.0, "d": 3.0, "e": 1.0}}
IDCG = 2 + 1 / math.log2(3)


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("recall@3", 0.0),
        ("recall@4", 0.5),
        ("recall@5", 1.0),
        ("recall", 1.0),
        ("precision@4", 0.25),
        ("precision@5", 0.4),
        ("precision@10", 0.2),  # denominator k even when fewer are retrieved
        ("hit_rate@3", 0.0),
        ("hit_rate@4", 1.0),
        ("mrr@3", 0.0),
        ("mrr@10", 0.25),
        ("recip_rank", 0.25),
        ("map", (1 / 4 + 2 / 5) / 2),
        ("map@4", (1 / 4) / 2),
        ("map@100", (1 / 4 + 2 / 5) / 2),
        ("ndcg@4", (2 / math.log2(5)) / IDCG),
        ("ndcg", (2 / math.log2(5) + 1 / math.log2(6)) / IDCG),
        ("ndcg_cut.5", (2 / math.log2(5) + 1 / math.log2(6)) / IDCG),
        ("P.5", 0.4),
        ("success.4", 1.0),
    ],
)
def test_hand_computed(metric: str, expected: float) -> None:
    assert evaluate(QRELS, RUN, [metric])[metric] == pytest.approx(expected, abs=1e-15)


def test_ndcg_ideal_truncated_at_k() -> None:
    # 3 relevant judged, 1 retrieved at rank 1: IDCG@2 = 1 + 1/log2(3).
    res = evaluate({"q": {"a": 1, "b": 1, "c": 1}}, {"q": {"a": 2.0, "x": 1.0}}, ["ndcg@2"])
    assert res["ndcg@2"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_negative_relevance_has_zero_gain() -> None:
    res = evaluate({"q": {"n": -1, "p": 1}}, {"q": {"n": 2.0, "p": 1.0}}, ["ndcg", "mrr"])
    assert res["ndcg"] == pytest.approx(1 / math.log2(3))
    assert res["mrr"] == 0.5


@pytest.mark.parametrize(
    ("docs", "relevant", "rr"),
    [(["a", "b", "c"], "b", 0.5), (["c", "b", "a"], "c", 1.0), (["b10", "b9", "b"], "b9", 1.0),
     (["b10", "b9", "b"], "b", 1 / 3), (["é", "z"], "é", 1.0)],
)
def test_ties_break_by_docid_descending(docs: list[str], relevant: str, rr: float) -> None:
    run = {"q": {d: 1.0 for d in docs}}
    for strategy in ("count", "rows", "sort"):
        arrays = arrays_from_dicts({"q": {relevant: 1}}, run)
        assert evaluate_arrays(arrays, ["mrr"], strategy=strategy)["mrr"] == rr


def test_missing_queries_zero_or_skip() -> None:
    qrels = {"a": {"x": 1}, "b": {"y": 1}, "empty": {}}
    run = {"a": {"x": 1.0}, "unjudged": {"x": 1.0}}
    zero = evaluate(qrels, run, ["recall@1"], per_query=True)
    assert zero.qids == ["a", "b"]  # an empty judgement dict is not a judged query
    assert zero.per_query["recall@1"].tolist() == [1.0, 0.0]
    assert zero["recall@1"] == 0.5 and zero.n_missing == 1
    skip = evaluate(qrels, run, ["recall@1"], per_query=True, missing_query="skip")
    assert skip.qids == ["a"] and skip["recall@1"] == 1.0 and skip.n_missing == 1


def test_empty_run_for_a_query_and_no_relevant_docs() -> None:
    qrels = {"empty_run": {"x": 1}, "no_rel": {"x": 0, "y": -1}}
    run = {"empty_run": {}, "no_rel": {"x": 3.0, "y": 2.0}}
    res = evaluate(qrels, run, ["ndcg@10", "map", "recall@5", "mrr", "precision@2"],
                   per_query=True)
    assert res.qids == ["empty_run", "no_rel"]
    for values in res.per_query.values():
        assert values.tolist() == [0.0, 0.0]


def test_result_type_and_per_query() -> None:
    res = evaluate(QRELS, RUN, ["ndcg@4", "mrr@10"], per_query=True)
    assert isinstance(res, RankingResult)
    assert dict(res) == res.means and list(res) == ["ndcg@4", "mrr@10"]
    assert res.query("q1")["mrr@10"] == 0.25
    assert evaluate(QRELS, RUN, ["mrr@10"]).per_query == {}


@pytest.mark.parametrize("bad", ["ndgc@10", "map@x", "", 3])
def test_unknown_metric_lists_known_ones(bad) -> None:
    with pytest.raises(ValueError, match="known metrics"):
        evaluate(QRELS, RUN, [bad])


@pytest.mark.parametrize(("bad", "why"), [
    ("recall@0", "the cutoff must be at least 1"), ("precision", "precision needs"),
    ("hit_rate", "hit_rate needs"), ("rbp.p=1.5", "strictly between 0 and 1"),
    ("11pt_avg.0.5,0.2", "must be increasing")])
def test_a_known_metric_with_a_bad_parameter_says_what_is_wrong(bad, why) -> None:
    """The name is known, so the message says what is wrong with it, without the list."""
    with pytest.raises(ValueError) as err:
        evaluate(QRELS, RUN, [bad])
    assert str(err.value).startswith(f"bad metric {bad!r}: ") and why in str(err.value)
    assert "known metrics" not in str(err.value)


def test_metric_name_grammar() -> None:
    assert parse_metric("ndcg_cut.10").measure == "ndcg"
    assert parse_metric("NDCG@10").k == 10
    assert parse_metric("map").k is None
    assert parse_metric("P.5").measure == "precision"
    assert parse_metric("success@3").measure == "hit_rate"


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="NaN"):
        evaluate(QRELS, {"q1": {"a": float("nan")}}, ["mrr"])
    with pytest.raises(ValueError, match="integer"):
        evaluate({"q1": {"a": 1.5}}, RUN, ["mrr"])
    with pytest.raises(ValueError, match="missing_query"):
        evaluate(QRELS, RUN, ["mrr"], missing_query="drop")
    with pytest.raises(ValueError, match="no query to evaluate"):
        evaluate({}, RUN, ["mrr"])
    with pytest.raises(ValueError, match="strings"):
        evaluate({1: {"a": 1}}, RUN, ["mrr"])


# ---------------------------------------------------------------- oracle and cross-checks


def _oracle(qrels, run, measure: str, k: int | None) -> dict[str, float]:
    """Brute force: sort each query the trec_eval way, then the textbook formulas."""
    out = {}
    for q, judged in qrels.items():
        if not judged or q not in run:
            continue
        ranked = sorted(run[q], key=lambda d: (run[q][d], d), reverse=True)
        cut = ranked if k is None else ranked[:k]
        rel = [max(judged.get(d, 0), 0) for d in cut]
        num_rel = sum(1 for v in judged.values() if v > 0)
        hits = [i for i, r in enumerate(rel) if r > 0]
        if measure == "recall":
            v = len(hits) / num_rel if num_rel else 0.0
        elif measure == "precision":
            v = len(hits) / k
        elif measure == "hit_rate":
            v = float(bool(hits))
        elif measure == "mrr":
            v = 1 / (hits[0] + 1) if hits else 0.0
        elif measure == "map":
            v = sum((j + 1) / (i + 1) for j, i in enumerate(hits)) / num_rel if num_rel else 0.0
        else:
            dcg = sum(rel[i] / math.log2(i + 2) for i in hits)
            ideal = sorted((v for v in judged.values() if v > 0), reverse=True)
            ideal = ideal if k is None else ideal[:k]
            idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
            v = dcg / idcg if idcg else 0.0
        out[q] = v
    return out


_ids = st.sampled_from(["a", "b", "c", "d", "e", "f", "a1", "b10", "b9"])
_run_q = st.dictionaries(_ids, st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 1e-300]), max_size=9)
_qrels_q = st.dictionaries(_ids, st.integers(-1, 3), max_size=6)


@settings(max_examples=150, deadline=None)
@given(
    qrels=st.dictionaries(st.sampled_from(["q1", "q2", "q3"]), _qrels_q, max_size=3),
    run=st.dictionaries(st.sampled_from(["q1", "q2", "q4"]), _run_q, max_size=3),
    strategy=st.sampled_from(["count", "rows", "sort"]),
)
def test_matches_brute_force_oracle(qrels, run, strategy) -> None:
    metrics = {"recall@3": ("recall", 3), "recall": ("recall", None),
               "precision@2": ("precision", 2), "hit_rate@1": ("hit_rate", 1),
               "mrr@4": ("mrr", 4), "mrr": ("mrr", None), "map": ("map", None),
               "map@3": ("map", 3), "ndcg": ("ndcg", None), "ndcg@2": ("ndcg", 2)}
    arrays = arrays_from_dicts(qrels, run, "skip")
    if not arrays.qids:
        return
    res = evaluate_arrays(arrays, list(metrics), per_query=True, strategy=strategy)
    for name, (measure, k) in metrics.items():
        want = _oracle(qrels, run, measure, k)
        assert res.qids == sorted(want)
        np.testing.assert_allclose(res.per_query[name], [want[q] for q in res.qids],
                                   rtol=0, atol=1e-12)


def _random_pair(rng: np.random.Generator, n_queries: int, ties: bool):
    qrels, run = {}, {}
    for i in range(n_queries):
        q = f"q{i}"
        docs = [f"d{j}" for j in range(40)]
        if rng.random() < 0.9:
            judged = rng.choice(40, rng.integers(1, 12), replace=False)
            # relevance >= 0 only: pytrec-eval-terrier 0.5.11 can hang on nDCG when a
            # query's judgements are all negative (see docs/ranking.md).
            qrels[q] = {docs[j]: int(rng.integers(0, 4)) for j in judged}
        if rng.random() < 0.9:
            got = rng.choice(40, rng.integers(0, 30), replace=False)
            scores = rng.integers(0, 6, got.size) / 2 if ties else rng.random(got.size)
            run[q] = {docs[j]: float(s) for j, s in zip(got, scores, strict=False)}
    return qrels, run


PYTREC = {"recall.5": "recall@5", "recall.1000": "recall", "P.3": "precision@3",
          "ndcg": "ndcg", "ndcg_cut.4": "ndcg@4", "map": "map", "map_cut.7": "map@7",
          "recip_rank": "mrr", "success.2": "hit_rate@2"}


@pytest.mark.parametrize("seed", range(6))
def test_cross_check_pytrec_eval(seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(seed)
    qrels, run = _random_pair(rng, 60, ties=seed % 2 == 0)
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC)).evaluate(run)
    for strategy in ("count", "rows", "sort"):
        arrays = arrays_from_dicts(qrels, run, "skip")
        res = evaluate_arrays(arrays, list(PYTREC.values()), per_query=True, strategy=strategy)
        assert res.qids == sorted(ref)
        for theirs, ours in PYTREC.items():
            want = [ref[q][theirs.replace(".", "_")] for q in res.qids]
            np.testing.assert_allclose(res.per_query[ours], want, rtol=0, atol=1e-12)


def test_cross_check_pytrec_eval_mrr_at_k_via_truncated_run() -> None:
    """mrr@k is trec_eval's recip_rank on the run cut to its top k (trec_eval order)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(42)
    qrels, run = _random_pair(rng, 80, ties=True)
    cut = {q: dict(sorted(d.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:5])
           for q, d in run.items()}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
    res = evaluate(qrels, run, ["mrr@5"], per_query=True, missing_query="skip")
    np.testing.assert_allclose(res.per_query["mrr@5"],
                               [ref[q]["recip_rank"] for q in res.qids], rtol=0, atol=1e-15)


@pytest.mark.slow
def test_cross_check_ranx() -> None:
    """ranx agrees where its conventions do: distinct scores (ranx breaks ties its own way),
    every judged query has a relevant document and is in the run."""
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(7)
    qrels, run = {}, {}
    for i in range(50):
        docs = [f"d{j}" for j in range(30)]
        judged = rng.choice(30, 6, replace=False)
        qrels[f"q{i}"] = {docs[j]: int(g) for j, g in zip(judged, [1, *rng.integers(0, 4, 5)], strict=False)}
        got = rng.choice(30, 20, replace=False)
        run[f"q{i}"] = {docs[j]: float(s) for j, s in zip(got, rng.random(20), strict=False)}
    names = ["recall@5", "precision@3", "ndcg@10", "ndcg", "map@10", "map", "mrr@10",
             "hit_rate@5"]
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), names)
    ours = evaluate(qrels, run, names)
    for name in names:
        assert ours[name] == pytest.approx(theirs[name], abs=1e-12), name


def test_strategies_agree_on_dense_hits() -> None:
    rng = np.random.default_rng(3)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(1, 3)) for j in range(50)} for i in range(20)}
    run = {f"q{i}": {f"d{j}": float(rng.integers(0, 10)) for j in range(60)} for i in range(20)}
    arrays = arrays_from_dicts(qrels, run)
    names = ["ndcg@10", "map", "recall@20", "mrr"]
    a = evaluate_arrays(arrays, names, per_query=True, strategy="count")
    b = evaluate_arrays(arrays, names, per_query=True, strategy="sort")
    c = evaluate_arrays(arrays, names, per_query=True)  # auto picks rows here
    d = evaluate_arrays(arrays, names, per_query=True, strategy="rows")
    for name in names:
        np.testing.assert_array_equal(a.per_query[name], b.per_query[name])
        np.testing.assert_array_equal(a.per_query[name], c.per_query[name])
        np.testing.assert_array_equal(a.per_query[name], d.per_query[name])


# ---------------------------------------------------------------- run pair index (file path)


@st.composite
def _segments(draw):
    """Random grouped entries: segment lengths (0 allowed), docs with optional duplicates."""
    n_docs = draw(st.integers(1, 12))
    lens = draw(st.lists(st.integers(0, 7), min_size=1, max_size=6))
    docs = []
    for n in lens:
        pool = draw(st.permutations(range(n_docs)))
        seg = list(pool[: min(n, n_docs)])
        if seg and draw(st.booleans()):  # maybe plant a duplicate
            seg.append(draw(st.sampled_from(seg)))
        docs.append(seg)
    order = draw(st.permutations(range(len(lens))))  # segment order in the flat array
    return n_docs, docs, order


@settings(max_examples=200, deadline=None)
@given(_segments())
def test_run_pairs_layouts_match_a_dict_oracle(case) -> None:
    from queryeval.metrics.ranking._pairs import RunPairs

    n_docs, docs, order = case
    nq = len(docs)
    seg_start = np.zeros(nq, dtype=np.int64)
    seg_len = np.array([len(d) for d in docs], dtype=np.int64)
    flat: list[int] = []
    where: dict[tuple[int, int], list[int]] = {}
    for q in order:
        seg_start[q] = len(flat)
        for d in docs[q]:
            where.setdefault((q, d), []).append(len(flat))
            flat.append(d)
    doc = np.array(flat, dtype=np.int32)
    dups = [pos for pos in where.values() if len(pos) > 1]
    qs = np.repeat(np.arange(nq), n_docs)
    ds = np.tile(np.arange(n_docs), nq)
    for layout in ("table", "sorted"):
        pairs = RunPairs(doc, seg_start, seg_len, n_docs, layout=layout)
        if dups:
            assert pairs.duplicate is not None and list(pairs.duplicate) in [p[:2] for p in dups]
            assert doc[pairs.duplicate[0]] == doc[pairs.duplicate[1]]
            continue
        assert pairs.duplicate is None
        want = [where.get((int(q), int(d)), [-1])[0] for q, d in zip(qs, ds, strict=True)]
        for method in ("auto", "search", "direct") if layout == "table" else ("auto",):
            got = pairs.lookup(qs, ds, method)
            assert got.tolist() == want, (layout, method)


def test_run_pairs_table_pads_uneven_segments() -> None:
    from queryeval.metrics.ranking._pairs import RunPairs

    # Query 1 has 3 docs, query 0 has 1, query 2 none; flat order: query 1 then query 0.
    doc = np.array([5, 0, 9, 7])
    pairs = RunPairs(doc, np.array([3, 0, 0]), np.array([1, 3, 0]), 10, layout="table")
    assert pairs.layout == "table" and pairs.duplicate is None
    assert pairs.lookup(np.array([1, 1, 1, 0, 0, 2]), np.array([0, 5, 9, 7, 5, 5])).tolist() == [
        1, 0, 2, 3, -1, -1]
    with pytest.raises(ValueError, match="layout"):
        RunPairs(doc, np.array([3, 0, 0]), np.array([1, 3, 0]), 10, layout="hash")


def _columns_pair(rng: np.random.Generator, grouped: bool, uniform: bool):
    """Random dictionary-encoded qrels/run columns (ties included) and the same as dicts."""
    from queryeval.metrics.ranking import Columns

    names_q = [f"q{i}" for i in range(30)]
    names_doc = np.array([f"d{j}" for j in range(25)], dtype=object)
    rq, rdoc, rscore = [], [], []
    for i in range(25):  # q25..q29 never retrieved; q0..q4 never judged (see below)
        n = 10 if uniform else int(rng.integers(1, 20))  # every name must be used
        got = rng.choice(25, n, replace=False)
        rq += [i] * n
        rdoc += got.tolist()
        rscore += (rng.integers(0, 5, n) / 2).tolist()
    order = np.arange(len(rq)) if grouped else rng.permutation(len(rq))
    run = Columns(q=np.array(rq)[order], names_q=names_q[:25], doc=np.array(rdoc)[order],
                  names_doc=names_doc, value=np.array(rscore)[order])
    jq, jdoc, jrel = [], [], []
    for i in range(5, 30):
        got = rng.choice(25, 6, replace=False)
        jq += [i] * 6
        jdoc += got.tolist()
        jrel += rng.integers(0, 3, 6).tolist()
    qrels = Columns(q=np.array(jq) - 5, names_q=names_q[5:], doc=np.array(jdoc), names_doc=names_doc,
                    value=np.array(jrel))
    qd = {names_q[q]: {} for q in set(jq)}
    for q, d, r in zip(jq, jdoc, jrel, strict=True):
        qd[names_q[q]][str(names_doc[d])] = r
    rd = {names_q[q]: {} for q in set(rq)}
    for q, d, s in zip(rq, rdoc, rscore, strict=True):
        rd[names_q[q]][str(names_doc[d])] = s
    return qrels, run, qd, rd


@pytest.mark.parametrize(("grouped", "uniform"), [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("missing_query", ["zero", "skip"])
def test_arrays_from_columns_equal_dicts_in_every_layout(grouped, uniform, missing_query) -> None:
    from queryeval.metrics.ranking import arrays_from_columns

    rng = np.random.default_rng(11)
    qrels, run, qd, rd = _columns_pair(rng, grouped, uniform)
    names = ["ndcg@5", "map", "mrr@3", "recall@10", "precision@4", "hit_rate@2"]
    want = evaluate(qd, rd, names, per_query=True, missing_query=missing_query)
    identity = np.arange(25)  # qrels and run share one doc dictionary here
    for layout in ("auto", "table", "sorted"):
        arrays = arrays_from_columns(qrels, run, identity, missing_query, pair_layout=layout)
        got = evaluate_arrays(arrays, names, per_query=True)
        assert got.qids == want.qids and got.n_missing == want.n_missing == 5
        for name in names:
            np.testing.assert_array_equal(got.per_query[name], want.per_query[name])


def test_arrays_from_columns_errors_name_query_and_document() -> None:
    from queryeval.metrics.ranking import Columns, DuplicateEntryError, arrays_from_columns

    names_doc = np.array(["a", "b"], dtype=object)
    qrels = Columns(q=np.array([0]), names_q=["x"], doc=np.array([0]),
                    names_doc=names_doc, value=np.array([1]))
    run = Columns(q=np.array([0, 1, 1]), names_q=["z", "x"], doc=np.array([0, 1, 0]),
                  names_doc=names_doc, value=np.array([1.0, 2.0, np.nan]))
    with pytest.raises(ValueError, match="NaN for query 'x', document 'a'"):
        arrays_from_columns(qrels, run, np.array([0, 1]))
    run.value[2] = 0.5
    run.doc[2] = 1  # x retrieves b twice: rows 1 and 2
    with pytest.raises(DuplicateEntryError) as err:
        arrays_from_columns(qrels, run, np.array([0, 1]))
    assert (err.value.what, err.value.qid, err.value.docid, err.value.rows) == ("run", "x", "b", (1, 2))


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 5)), max_size=40),
    huge=st.booleans(),
)
def test_ideal_order_values_match_a_stable_sort(rows, huge):
    """``_hits._ideal``: (query, gain) of positive judgements by query then gain descending,
    against Python's sort (``huge``: a gain span that forces the ``lexsort`` path)."""
    from queryeval.metrics.ranking._hits import _ideal

    if huge and rows:
        rows = rows + [(0, 2**61)]
    q = np.array([r[0] for r in rows], dtype=np.int64)
    gain = np.array([r[1] for r in rows], dtype=np.float64)
    got_q, got_gain = _ideal(q, gain, 7)
    want = sorted(rows, key=lambda r: (r[0], -r[1]))
    assert got_q.tolist() == [r[0] for r in want]
    assert got_gain.tolist() == [float(r[1]) for r in want]
