"""Score ties: trec_eval's docid order, against a brute-force oracle and pytrec_eval.

Every path that breaks ties is held to the same ranks: dicts (Python strings) and columns
(integer codes into an Arrow or a Python name dictionary), each counting strategy
(``count``/``sort``) and each tie method (``pairs``/``rank``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from queryeval.metrics.ranking import (
    Columns,
    arrays_from_columns,
    arrays_from_dicts,
    evaluate,
    evaluate_arrays,
)
from queryeval.metrics.ranking._ranks import hit_ranks


def _columns(qrels, run, arrow: bool):
    """Dicts as dictionary-encoded columns (what the TREC readers give)."""
    qnames = sorted(set(qrels) | set(run))
    qcode = {q: i for i, q in enumerate(qnames)}
    rdocs = sorted({d for docs in run.values() for d in docs}, reverse=True)  # any order
    rcode = {d: i for i, d in enumerate(rdocs)}
    jdocs = sorted({d for docs in qrels.values() for d in docs})
    rq = [qcode[q] for q, docs in run.items() for _ in docs]
    rd = [rcode[d] for docs in run.values() for d in docs]
    rs = [s for docs in run.values() for s in docs.values()]
    jq = [qcode[q] for q, docs in qrels.items() for _ in docs]
    jd = [jdocs.index(d) for docs in qrels.values() for d in docs]
    jv = [v for docs in qrels.values() for v in docs.values()]

    def names(values):
        return pa.array(values, type=pa.string()) if arrow else list(values)

    run_cols = Columns(q=np.array(rq, dtype=np.int64), names_q=qnames,
                       doc=np.array(rd, dtype=np.int64), names_doc=names(rdocs),
                       value=np.array(rs, dtype=np.float64))
    qrels_cols = Columns(q=np.array(jq, dtype=np.int64), names_q=qnames,
                         doc=np.array(jd, dtype=np.int64), names_doc=names(jdocs),
                         value=np.array(jv, dtype=np.int64))
    mapping = np.array([rcode.get(d, -1) for d in jdocs], dtype=np.int64)
    return qrels_cols, run_cols, mapping


# Docids: unicode of every width (ASCII, Latin-1, BMP, astral), prefixes of each other, so
# UTF-8 byte order, code-point order and UTF-16 order would all be told apart.
_docid = st.text(alphabet=st.sampled_from(["a", "b", "B", "0", "9", "\x7f", "é", "ÿ", "Ā",
                                           "中", "\uffff", "\U0001f600", "\U00010000"]),
                 min_size=0, max_size=4)
_score = st.sampled_from([0.0, -0.0, 0.1, 0.12, 0.2, 1.0, -1.0, 1e300, float("inf")])


@st.composite
def _tied_pair(draw):
    qids = draw(st.lists(st.sampled_from(["q1", "q2", "é", "q10"]), min_size=1, max_size=3,
                         unique=True))
    run, qrels = {}, {}
    for q in qids:
        docs = draw(st.lists(_docid, min_size=0, max_size=12, unique=True))
        run[q] = {d: draw(_score) for d in docs}
        pool = docs + draw(st.lists(_docid, min_size=1, max_size=3))
        judged = draw(st.lists(st.sampled_from(pool), unique=True, max_size=len(pool)))
        if judged:
            qrels[q] = {d: draw(st.integers(-1, 3)) for d in judged}
    return qrels, run


def _judged_ranks(arrays, strategy: str, method: str) -> dict[str, list[int]]:
    """Engine ranks of every retrieved judgement, per query, in increasing order."""
    q, rank, _ = hit_ranks(arrays, strategy, ties=method)
    out: dict[str, list[int]] = {}
    for qi, r in zip(q.tolist(), rank.tolist(), strict=True):
        out.setdefault(arrays.qids[qi], []).append(r)
    return out


def _oracle_judged(qrels, run, qids) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for q in qids:
        ranked = sorted(run.get(q, {}).items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        got = [i for i, (d, _) in enumerate(ranked) if d in qrels[q]]
        if got:
            out[q] = got
    return out


@settings(max_examples=200, deadline=None)
@given(pair=_tied_pair())
def test_tie_ranks_match_brute_force_oracle_on_every_path(pair) -> None:
    qrels, run = pair
    if not qrels:
        return
    builds = {"dicts": arrays_from_dicts(qrels, run, "zero")}
    for arrow in (True, False):
        qc, rc, mapping = _columns(qrels, run, arrow)
        builds[f"columns arrow={arrow}"] = arrays_from_columns(qc, rc, mapping, "zero")
    want = None
    for name, arrays in builds.items():
        if want is None:
            want = _oracle_judged(qrels, run, arrays.qids)
        for strategy in ("count", "rows", "sort"):
            for method in ("pairs", "rank", "auto"):
                got = _judged_ranks(arrays, strategy, method)
                assert got == want, (name, strategy, method)


@settings(max_examples=100, deadline=None)
@given(pair=_tied_pair())
def test_tied_metrics_match_brute_force(pair) -> None:
    """The ranks feed the metrics: mrr and map equal the textbook formulas on the oracle."""
    qrels, run = pair
    if not qrels:
        return
    res = evaluate(qrels, run, ["mrr", "map"], per_query=True)
    for i, q in enumerate(res.qids):
        ranked = sorted(run.get(q, {}).items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        hits = [j for j, (d, _) in enumerate(ranked) if qrels[q].get(d, 0) >= 1]
        num_rel = sum(1 for v in qrels[q].values() if v >= 1)
        mrr = 1 / (hits[0] + 1) if hits else 0.0
        ap = sum((n + 1) / (j + 1) for n, j in enumerate(hits)) / num_rel if num_rel else 0.0
        assert res.per_query["mrr"][i] == pytest.approx(mrr, abs=1e-15)
        assert res.per_query["map"][i] == pytest.approx(ap, abs=1e-12)


# A score tied in one query that is also a tied score in another query, without a hit there:
# those documents belong to no group (a per-query key match must not file them elsewhere).
_CROSS = ({"q1": {"a": 1}, "q2": {"m": 1}},
          {"q1": {"a": 1.0, "b": 1.0, "y": 2.0, "z": 2.0}, "q2": {"m": 2.0, "n": 2.0}})


@settings(max_examples=150, deadline=None)
@example(pair=_CROSS, factor=0)
@example(pair=_CROSS, factor=10**9)
@given(pair=_tied_pair(), factor=st.sampled_from([0, 10**9]))
def test_both_ways_of_finding_tied_groups_agree_with_the_oracle(pair, factor) -> None:
    """Members found per group (the gather) or per query (integer keys) rank alike."""
    from unittest import mock

    from queryeval.metrics.ranking import _ties

    qrels, run = pair
    if not qrels:
        return
    arrays = arrays_from_dicts(qrels, run, "zero")
    want = _oracle_judged(qrels, run, arrays.qids)
    with mock.patch.object(_ties, "_GATHER_FACTOR", factor):
        for method in ("pairs", "rank"):
            assert _judged_ranks(arrays, "count", method) == want


def test_lone_surrogates_and_non_arrow_docids_take_the_exact_slow_path() -> None:
    """Docids with no UTF-8 form still break ties in Python's (code-point) order."""
    docs = ["\ud800", "\ud7ff", "\ue000", "a", "\U00010000"]
    run = {"q": {d: 1.0 for d in docs}}
    qrels = {"q": {d: 1 for d in docs}}
    arrays = arrays_from_dicts(qrels, run)
    want = _oracle_judged(qrels, run, ["q"])
    for method in ("pairs", "rank"):
        assert _judged_ranks(arrays, "count", method) == want


class _NoCompare(str):
    """A docid that fails if Python compares it (no object sort on the hot path)."""

    def __lt__(self, other):
        raise AssertionError("docids compared as Python objects")

    __gt__ = __le__ = __ge__ = __lt__


def test_ties_never_compare_python_objects() -> None:
    docs = [_NoCompare(f"d{i}") for i in range(50)]
    run = {"q": {d: float(i % 3) for i, d in enumerate(docs)}}
    qrels = {"q": {d: 1 for d in docs[::2]}}
    arrays = arrays_from_dicts(qrels, run)
    plain = {"q": {str(d): s for d, s in run["q"].items()}}
    plain_qrels = {"q": {str(d): 1 for d in qrels["q"]}}
    names = ["map", "mrr", "ndcg"]
    assert dict(evaluate(qrels, run, names)) == dict(evaluate(plain_qrels, plain, names))
    want = _oracle_judged(plain_qrels, plain, ["q"])
    for method in ("pairs", "rank"):
        assert _judged_ranks(arrays, "count", method) == want


def test_forty_thousand_tied_relevant_documents_in_one_query() -> None:
    """The quadratic shape: every document tied and relevant; each hit's rank is its place
    in docid-descending order (the rank method is chosen; pairs would be n^2)."""
    n = 40_000
    docs = [f"d{i}" for i in range(n)]
    arrays = arrays_from_dicts({"q": dict.fromkeys(docs, 1)}, {"q": dict.fromkeys(docs, 0.5)})
    q, rank, _ = hit_ranks(arrays)
    assert np.array_equal(rank, np.arange(n))
    res = evaluate_arrays(arrays, ["map", "mrr"])
    assert res["map"] == 1.0 and res["mrr"] == 1.0


def _tied_random_pair(rng: np.random.Generator, n_queries: int, decimals: int):
    alphabet = np.array(list("abcé中\U0001f6000129"))
    qrels, run = {}, {}
    for i in range(n_queries):
        q = f"q{i}"
        pool = ["".join(rng.choice(alphabet, rng.integers(1, 5))) for _ in range(60)]
        pool = list(dict.fromkeys(pool))
        got = rng.choice(len(pool), min(len(pool), int(rng.integers(0, 40))), replace=False)
        scores = np.round(rng.random(got.size), decimals) if decimals >= 0 else np.zeros(got.size)
        run[q] = {pool[j]: float(s) for j, s in zip(got, scores, strict=True)}
        judged = rng.choice(len(pool), int(rng.integers(1, 15)), replace=False)
        qrels[q] = {pool[j]: int(rng.integers(0, 4)) for j in judged}
    return qrels, run


PYTREC = {"ndcg": "ndcg", "ndcg_cut.10": "ndcg@10", "map": "map", "recip_rank": "mrr",
          "P.5": "precision@5", "recall.10": "recall@10", "bpref": "bpref", "Rprec": "Rprec",
          "infAP": "infAP"}


@pytest.mark.parametrize("decimals", [2, 1, 0, -1])
def test_tied_runs_match_pytrec_eval_from_dicts_and_columns(decimals: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(100 + decimals)
    qrels, run = _tied_random_pair(rng, 80, decimals)
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC)).evaluate(run)
    qc, rc, mapping = _columns(qrels, run, arrow=True)
    for arrays in (arrays_from_dicts(qrels, run, "skip"),
                   arrays_from_columns(qc, rc, mapping, "skip")):
        res = evaluate_arrays(arrays, list(PYTREC.values()), per_query=True)
        assert res.qids == sorted(ref)
        for theirs, ours in PYTREC.items():
            want = [ref[q][theirs.replace(".", "_")] for q in res.qids]
            np.testing.assert_allclose(res.per_query[ours], want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("decimals", [1, -1])
def test_tied_runs_from_trec_files_match_dicts_and_pytrec_eval(tmp_path, decimals: int) -> None:
    """Through the TREC readers: docids compared by code in the reader's name dictionary."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from queryeval.suite.trec import evaluate_files

    rng = np.random.default_rng(7 + decimals)
    qrels, run = _tied_random_pair(rng, 60, decimals)
    run = {q: docs for q, docs in run.items() if docs}  # a file cannot hold an empty ranking
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                             for d, g in docs.items()), encoding="utf-8")
    rpath.write_text("".join(f"{q} Q0 {d} {i + 1} {s!r} t\n" for q, docs in run.items()
                             for i, (d, s) in enumerate(docs.items())), encoding="utf-8")
    names = list(PYTREC.values())
    from_files = evaluate_files(qpath, rpath, names, per_query=True, missing_query="skip")
    from_dicts = evaluate(qrels, run, names, per_query=True, missing_query="skip")
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC)).evaluate(run)
    assert from_files.qids == from_dicts.qids == sorted(ref)
    for theirs, ours in PYTREC.items():
        want = [ref[q][theirs.replace(".", "_")] for q in from_files.qids]
        np.testing.assert_array_equal(from_files.per_query[ours], from_dicts.per_query[ours])
        np.testing.assert_allclose(from_files.per_query[ours], want, rtol=0, atol=1e-12)
