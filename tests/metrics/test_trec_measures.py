"""trec_eval 10.0 breadth: counts, Rprec, bpref, infAP, gm_map, iprec_at_recall, set_*, rbp,
unj/judged, ERR, the relevance level (-l) and judged-only evaluation (-J).

Oracles: pytrec_eval (trec_eval's C code) for every measure it has, on random runs with ties,
missing queries, graded, zero and negative (pooled-but-unjudged) judgements; for the rest a
literal Python transcription of trec_eval 10.0's C loop (``_oracle``) and hand-computed values.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from helpers.trec_measures import QRELS, RUN, _random_pair, _ranked  # noqa: E402,F401
from queryeval.metrics.ranking import evaluate, parse_metric
from queryeval.metrics.ranking._arrays import arrays_from_dicts
from queryeval.metrics.ranking._hits import build_hits
from queryeval.suite.trec import evaluate_files

# ours -> pytrec_eval key
PYTREC = {
    "num_q": "num_q", "num_ret": "num_ret", "num_rel": "num_rel", "num_rel_ret": "num_rel_ret",
    "Rprec": "Rprec", "bpref": "bpref", "infAP": "infAP", "gm_map": "gm_map",
    "set_P": "set_P", "set_recall": "set_recall", "set_F": "set_F", "map": "map",
    "ndcg": "ndcg", "ndcg_cut_10": "ndcg_cut_10", "P_5": "P_5", "recall_10": "recall_10",
    "recip_rank": "recip_rank", "success_1": "success_1", "Rndcg": "Rndcg",
}
PYTREC_MEASURES = {"num_q", "num_ret", "num_rel", "num_rel_ret", "Rprec", "bpref", "infAP",
                   "gm_map", "set_P", "set_recall", "set_F", "map", "ndcg", "ndcg_cut", "P",
                   "recall", "recip_rank", "success", "Rndcg"}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("judged_only", [False, True])
def test_equal_to_pytrec_eval(seed: int, level: int, judged_only: bool) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_pair(seed)
    res = evaluate(qrels, run, list(PYTREC), per_query=True, missing_query="skip",
                   relevance_level=level, judged_only=judged_only)
    ref: dict[str, dict[str, float]] = {}
    # One evaluator per measure: pytrec-eval-terrier 0.5.11 crashed (SIGSEGV) evaluating
    # bpref together with other measures on these inputs; each measure alone is fine.
    for measure in sorted(PYTREC_MEASURES):
        for q, values in pytrec_eval.RelevanceEvaluator(
            qrels, {measure}, relevance_level=level, judged_docs_only_flag=judged_only
        ).evaluate(run).items():
            ref.setdefault(q, {}).update(values)
    assert res.qids == sorted(ref)
    for ours, theirs in PYTREC.items():
        want = [ref[q][theirs] for q in res.qids]
        np.testing.assert_allclose(res.per_query[ours], want, rtol=0, atol=1e-12, err_msg=ours)


def _oracle(qrels_q, run_q, measure: str, arg, level: int = 1, judged_only: bool = False):
    """Literal transcriptions of trec_eval 10.0 (m_iprec_at_recall.c, m_rbp.c, m_unjudged.c)
    and of the ERR definition in docs/ranking.md."""
    rels = _ranked(qrels_q, run_q, judged_only)
    num_rel = sum(1 for r in qrels_q.values() if r >= level)
    num_ret = len(rels)
    num_rel_ret = sum(1 for r in rels if r >= level)
    if measure == "iprec":
        cut = math.floor(arg * num_rel + 0.5)  # lround, arg * num_rel >= 0
        if cut > num_rel_ret:
            return 0.0
        int_precis = num_rel_ret / num_ret if num_ret else 0.0
        rel_so_far = num_rel_ret
        value = None
        for i in range(num_ret, 0, -1):
            if rel_so_far == 0:
                break
            int_precis = max(int_precis, rel_so_far / i)
            if rels[i - 1] >= level:
                if rel_so_far == cut:
                    value = int_precis
                rel_so_far -= 1
        return int_precis if value is None else value
    if measure == "rbp":
        top = max([r for r in qrels_q.values() if r >= 0], default=0)
        total, cur = 0.0, 1.0
        for r in rels:
            g = max(r, 0) / (top if top > 1 else 1)
            total += g * cur
            cur *= arg
        return (1 - arg) * total
    if measure == "unj":
        unj = 0
        for i, r in enumerate(rels):
            if i == arg:
                return unj / i
            unj += r < 0
        return unj / arg
    if measure == "judged":
        return sum(1 for r in rels[:arg] if r >= 0) / arg
    if measure == "err":
        gmax = max([r for r in qrels_q.values() if r >= 0], default=0)
        total, stay = 0.0, 1.0
        for i, r in enumerate(rels[: arg or len(rels)]):
            p = (2 ** max(r, 0) - 1) / 2**gmax
            total += stay * p / (i + 1)
            stay *= 1 - p
        return total
    raise AssertionError(measure)


ORACLE_METRICS = (
    [(f"iprec_at_recall_{x:.2f}", "iprec", x) for x in np.linspace(0, 1, 11)]
    + [("iprec_at_recall_0.25", "iprec", 0.25), ("iprec_at_recall_0.05", "iprec", 0.05)]
    + [("rbp", "rbp", 0.9), ("rbp.p=0.5", "rbp", 0.5), ("rbp@0.95", "rbp", 0.95)]
    + [("unj@5", "unj", 5), ("unj_10", "unj", 10), ("unj.50", "unj", 50)]
    + [("judged_share@5", "judged", 5), ("judged_share@50", "judged", 50)]
    + [("err_qmax", "err", None), ("err_qmax@3", "err", 3), ("ERR_QMAX@10", "err", 10)]
)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("level", "judged_only"), [(1, False), (2, True), (0, False)])
def test_equal_to_trec_eval_transcription(seed: int, level: int, judged_only: bool) -> None:
    qrels, run = _random_pair(seed + 10)
    names = [n for n, _, _ in ORACLE_METRICS]
    res = evaluate(qrels, run, names, per_query=True, relevance_level=level,
                   judged_only=judged_only)
    for name, measure, arg in ORACLE_METRICS:
        want = [_oracle(qrels[q], run.get(q, {}), measure, arg, level, judged_only)
                for q in res.qids]
        np.testing.assert_allclose(res.per_query[name], want, rtol=0, atol=1e-12,
                                   err_msg=name)


def test_iprec_uses_trec_eval_10_rounding_not_9() -> None:
    """trec_eval 10.0 turns the level into lround(X * num_rel) relevant documents; 9.x (what
    pytrec_eval wraps) used (long)(X * num_rel + 0.9). 14 relevant, level 0.1: 10.0 -> 1
    (reached by the one relevant document at rank 1: 1.0), 9.x -> 2 (never reached: 0.0).
    The trec_eval 10.0 binary prints 1.0000."""
    qrels = {"q": {f"r{i}": 1 for i in range(14)}}
    run = {"q": {"r0": 2.0, "n": 1.0}}
    res = evaluate(qrels, run, ["iprec_at_recall_0.10", "iprec_at_recall_0.00",
                                "iprec_at_recall_0.20"])
    assert dict(res) == {"iprec_at_recall_0.10": 1.0, "iprec_at_recall_0.00": 1.0,
                         "iprec_at_recall_0.20": 0.0}
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)["q"]
    assert ref["iprec_at_recall_0.10"] == 0.0  # the documented 9.x difference


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("num_q", 1), ("num_ret", 5), ("num_rel", 3), ("num_rel_ret", 2),
        ("set_P", 2 / 5), ("set_recall", 2 / 3), ("set_F", 2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3)),
        ("set_F.0.5", 1.5 * (2 / 5) * (2 / 3) / (0.5 * 2 / 5 + 2 / 3)),
        ("Rprec", 0.0),  # top 3: d, c, e
        # bpref: N = 1 non-relevant judgement (c), R = 3; b and a each have 1 non-rel above:
        # (1 - min(1, 3) / min(1, 3)) * 2 = 0
        ("bpref", 0.0),
        # infAP: b at j=3 with r=0, n=1, u=1 (d): 1/4 + 3/4 * (2/3) * (e/(1+2e));
        # a at j=4 with r=1, n=1, u=1: 1/5 + 4/5 * (3/4) * ((1+e)/(2+2e)); / 3
        ("infAP", (0.25 + 0.75 * (2 / 3) * (1e-5 / (1 + 2e-5))
                   + 0.2 + 0.8 * 0.75 * ((1 + 1e-5) / (2 + 2e-5))) / 3),
        ("gm_map", (1 / 4 + 2 / 5) / 3),  # one query: exp(log(AP)) = AP
        ("unj@2", 1 / 2), ("unj@3", 2 / 3), ("unj@10", 2 / 10),  # d (-1) and e are unjudged
        ("judged_share@3", 1 / 3), ("judged_share@10", 3 / 10),
        # rbp, gains normalised by the top level 2: b = 1 at i=3, a = 1/2 at i=4
        ("rbp.p=0.5", 0.5 * (0.5**3 + 0.5 * 0.5**4)),
        # err, gmax = 2: R(b) = 3/4 at rank 4, R(a) = 1/4 at rank 5
        ("err_qmax", (3 / 4) / 4 + (1 / 4) * (1 / 4) / 5),
        ("err_qmax@4", (3 / 4) / 4),
    ],
)
def test_hand_computed(metric: str, expected: float) -> None:
    assert evaluate(QRELS, RUN, [metric])[metric] == pytest.approx(expected, abs=1e-12)


def test_relevance_level_and_judged_only_by_hand() -> None:
    # -l 2: only b (2) is relevant; num_rel 1; b at rank 4 -> map 1/4, recall@4 1.
    res = evaluate(QRELS, RUN, ["map", "num_rel", "recall@4", "P@5"], relevance_level=2)
    assert dict(res) == pytest.approx({"map": 0.25, "num_rel": 1, "recall@4": 1.0, "P@5": 0.2})
    # -J: d (-1) and e (not judged) leave the ranking: c, b, a -> b at 2, a at 3.
    res = evaluate(QRELS, RUN, ["map", "num_ret", "recip_rank", "ndcg@2"], judged_only=True)
    idcg2 = 2 + 1 / math.log2(3)
    assert dict(res) == pytest.approx(
        {"map": (1 / 2 + 2 / 3) / 3, "num_ret": 3, "recip_rank": 0.5,
         "ndcg@2": (2 / math.log2(3)) / idcg2}
    )
    # nDCG gains ignore -l (trec_eval's gains are the levels): a still adds gain 1.
    assert evaluate(QRELS, RUN, ["ndcg"], relevance_level=2)["ndcg"] == pytest.approx(
        evaluate(QRELS, RUN, ["ndcg"])["ndcg"], abs=1e-15)


def test_summaries_sum_counts_and_take_the_geometric_mean() -> None:
    qrels = {"a": {"x": 1, "y": 1}, "b": {"x": 1}, "c": {"z": 1}}
    run = {"a": {"x": 2.0, "w": 1.0}, "b": {"w": 2.0, "x": 1.0}, "c": {"w": 1.0}}
    res = evaluate(qrels, run, ["num_q", "num_ret", "num_rel", "num_rel_ret", "gm_map"],
                   per_query=True)
    assert res["num_q"] == 3 and res["num_ret"] == 5
    assert res["num_rel"] == 4 and res["num_rel_ret"] == 2
    # APs 0.5, 0.5, 0 (floored at 0.00001)
    assert res["gm_map"] == pytest.approx((0.5 * 0.5 * 1e-5) ** (1 / 3), rel=1e-12)
    np.testing.assert_allclose(res.per_query["gm_map"],
                               [math.log(0.5), math.log(0.5), math.log(1e-5)], rtol=1e-15)


@pytest.mark.parametrize(
    ("name", "measure", "k", "param"),
    [
        ("ndcg_cut_10", "ndcg", 10, None), ("P_5", "precision", 5, None),
        ("iprec_at_recall_0.10", "iprec_at_recall", None, 0.1), ("set_F", "set_f", None, 1.0),
        ("set_F.0.5", "set_f", None, 0.5), ("rbp", "rbp", None, 0.9),
        ("rbp.p=0.8", "rbp", None, 0.8), ("num_rel_ret", "num_rel_ret", None, None),
        ("Rprec", "rprec", None, None), ("infAP", "infap", None, None),
        ("unj.5", "unj", 5, None), ("judged_share@10", "judged_share", 10, None),
        ("recall_100", "recall", 100, None), ("map_cut_5", "map", 5, None),
    ],
)
def test_trec_eval_spellings(name, measure, k, param) -> None:
    spec = parse_metric(name)
    assert (spec.measure, spec.k, spec.param) == (measure, k, param)


@pytest.mark.parametrize(
    ("bad", "why"),
    [("iprec_at_recall", "needs a parameter"), ("iprec_at_recall_1.5", "between 0 and 1"),
     ("rbp.p=1", "strictly between"), ("unj", "needs a cutoff"), ("num_q@5", "takes no"),
     ("P_0.5", "positive integer"), ("bpref_3", "takes no")],
)
def test_bad_names(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_metric(bad)


def test_relevance_level_is_checked() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        evaluate(QRELS, RUN, ["map"], relevance_level=-1)
    with pytest.raises(ValueError, match="integer"):
        evaluate(QRELS, RUN, ["map"], relevance_level=1.5)  # type: ignore[arg-type]


def test_judged_ranks_only_built_when_a_measure_needs_them() -> None:
    """Proportional cost: the default measures rank relevant documents only."""
    qrels, run = _random_pair(3)
    arrays = arrays_from_dicts(qrels, run)
    assert build_hits(arrays).jq is None
    hits = build_hits(arrays, need_judged=True)
    n_judged_retrieved = sum(1 for q in arrays.qids for d in qrels.get(q, {})
                             if d in run.get(q, {}))
    assert hits.jq is not None and hits.jq.size == n_judged_retrieved


# ------------------------------------------------------------------ trec_eval's own test files

TREC_EVAL_DATA = Path(os.environ.get("QUERYEVAL_TREC_EVAL_TESTS", "/nonexistent"))
"""trec_eval 10.0's own ``test/`` folder (usnistgov/trec_eval), if the environment names one:
an optional reproduction check; we do not ship another project's test files."""


def _expected(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        out.setdefault(name, {})[qid] = value
    return out


ALL_TREC = {"11pt_avg", "Rndcg", "bpref", "infAP", "gm_map", "rbp", "unj_5", "set_F", "ndcg_rel",
            "G", "binG", "Rprec_mult_0.20", "relative_P_5", "utility", "set_map",
            "set_relative_P", "gm_bpref", "num_nonrel_judged_ret"}


@pytest.mark.parametrize(
    ("qrels", "results", "expected", "options", "must"),
    [("qrels.test", "results.test", "out.test.aq", {"missing_query": "skip"}, ALL_TREC),
     ("qrels.test", "results.trunc", "out.test.aqc", {"missing_query": "zero"}, ALL_TREC),
     ("qrels.test", "results.trunc", "out.test.aqcM", {"missing_query": "zero", "max_docs": 100},
      ALL_TREC),
     ("qrels.rel_level", "results.test", "out.test.aql",
      {"missing_query": "skip", "relevance_level": 2}, ALL_TREC),
     ("qrels.test", "results.test", "out.test.meas_params", {"missing_query": "skip"},
      {"ndcg_1=3,2=9,4=4.5", "iprec_at_recall_0.25", "ndcg_cut_23", "P_7", "recall_2000",
       "Rprec_mult_0.35", "Rprec_mult_5.00", "utility_2,-1,0,0", "11pt_avg_.25,.5,.75"})],
)
def test_equal_to_trec_eval_test_outputs(qrels: str, results: str, expected: str, options,
                                         must) -> None:
    """Every measure of trec_eval 10.0's own expected outputs (``-m all_trec -q``, with -c, with
    -l2) that queryeval has, on every query and on ``all``, to the 4 printed decimals."""
    if not (TREC_EVAL_DATA / expected).is_file():
        pytest.skip("set QUERYEVAL_TREC_EVAL_TESTS to trec_eval 10.0's test/ folder")
    want = _expected(TREC_EVAL_DATA / expected)
    names = []
    for name in want:
        try:
            parse_metric(name)
        except ValueError:
            continue
        names.append(name)
    assert must <= set(names)
    res = evaluate_files(TREC_EVAL_DATA / qrels, TREC_EVAL_DATA / results, names,
                         per_query=True, **options)
    checked = 0
    for name in names:
        spec = parse_metric(name)
        for qid, text in want[name].items():
            got = res.means[name] if qid == "all" else res.query(qid)[name]
            if spec.aggregate == "sum":
                assert got == int(text), (name, qid)
            else:
                assert f"{got:6.4f}" == text.rjust(6), (name, qid, got, text)
            checked += 1
    assert checked >= 50


def test_err_with_huge_levels_stays_finite() -> None:
    """(2^g - 1) / 2^gmax is computed without forming 2^g: levels of 2000 do not overflow."""
    res = evaluate({"q": {"a": 2000, "b": 1999}}, {"q": {"a": 2.0, "b": 1.0}}, ["err_qmax"])
    # R(a) = 1 - 2^-2000 = 1.0 in floating point, so b adds nothing: ERR = 1
    assert res["err_qmax"] == 1.0


def _ndcg_gains_oracle(qrels_q, run_q, gains: dict[int, float], judged_only: bool) -> float:
    """m_ndcg.c of trec_eval 10.0 with ``-m ndcg.L=G,...``, transcribed."""
    rels = _ranked(qrels_q, run_q, judged_only)
    levels = [r for r in qrels_q.values() if r >= 0]
    top = max(levels, default=-1)
    table = {lvl: (gains.get(lvl, float(lvl)), levels.count(lvl)) for lvl in range(top + 1)}
    for lvl, g in gains.items():
        table.setdefault(lvl, (g, 0))
    ideal = sorted(table.values())  # by gain, ascending; then walk it from the top
    dcg = sum(table.get(r, (0.0, 0))[0] / math.log2(i + 2) for i, r in enumerate(rels))
    idcg, i = 0.0, 0
    for gain, count in reversed(ideal):
        if gain <= 0:
            break
        for _ in range(count):
            idcg += gain / math.log2(i + 2)
            i += 1
    return dcg / idcg if idcg > 0 else 0.0


@pytest.mark.parametrize("spec", ["1=3,2=9,4=4.5", "0=1,1=2,3=-1", "2=0,3=10"])
@pytest.mark.parametrize("judged_only", [False, True])
def test_ndcg_gains_equal_the_transcription(spec: str, judged_only: bool) -> None:
    """Also compared with a trec_eval 10.0 build on these inputs (all equal to 4 decimals)."""
    gains = {int(a): float(b) for a, b in (p.split("=") for p in spec.split(","))}
    qrels, run = _random_pair(4)
    name = f"ndcg.{spec}"
    res = evaluate(qrels, run, [name, f"ndcg_{spec}"], per_query=True, judged_only=judged_only)
    want = [_ndcg_gains_oracle(qrels[q], run.get(q, {}), gains, judged_only) for q in res.qids]
    np.testing.assert_allclose(res.per_query[name], want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(res.per_query[name], res.per_query[f"ndcg_{spec}"])


@pytest.mark.parametrize(("bad", "why"), [("P.1=2", "only ndcg, Rndcg, rbp, ndcg_rel and G"),
                                          ("ndcg.1=2,1=3", "two gains"),
                                          ("ndcg_cut.1=2", "ndcg_cut has no gains")])
def test_bad_gain_specs(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_metric(bad)


def test_trec_eval_parameter_lists_expand() -> None:
    res = evaluate(QRELS, RUN, ["P.4,5", "iprec_at_recall..10,.50", "ndcg.1=3,2=9"])
    assert list(res) == ["P.4", "P.5", "iprec_at_recall..10", "iprec_at_recall..50",
                         "ndcg.1=3,2=9"]
    assert res["P.4"] == 0.25 and res["P.5"] == pytest.approx(0.4)
