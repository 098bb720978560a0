"""ir_measures' measure strings give ir_measures' own values (ir_measures 0.4, its default
providers: pytrec_eval, msmarco for RR@k, judged for Judged@k, gdeval for ERR@k), per query and
overall, on trec_eval's small test files and on random runs with ties, graded and -1
judgements, a judged query the run lacks, a query judged only non-relevant and a query nobody
judged; the strings queryeval does not compute are refused with one line naming them."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from queryeval.metrics.ranking import evaluate, parse_metric
from queryeval.suite.trec import read_qrels, read_run

ir_measures = pytest.importorskip("ir_measures")

DATA = Path(__file__).parents[1] / "trec_more"

#: every supported form, parameters included (docs/ranking.md, "ir_measures' names")
MEASURES = [
    "AP", "AP@5", "AP(rel=2)", "AP(judged_only=True)", "MAP", "P@5", "P(rel=2)@5",
    "P(judged_only=True)@3", "Precision@10", "R@10", "R@100", "R(judged_only=True)@5", "RR",
    "RR(rel=2)", "RR(judged_only=True)", "RR@3", "RR(rel=2)@5", "MRR@10", "nDCG", "nDCG@10",
    "NDCG@5", "nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10", "nDCG(gains={1:3})", "nDCG(judged_only=True)@5",
    "Rprec", "Rprec(rel=2)", "Bpref", "Bpref(rel=2)", "infAP", "Success@1", "Success(rel=2)@5",
    "IPrec@0.5", "IPrec@0.0", "IPrec(recall=0.25)", "SetP", "SetP(rel=2)", "SetP(relative=True)",
    "SetRelP", "SetR", "SetR(rel=2)", "SetF", "SetF(beta=0.5)", "SetAP", "NumQ", "NumRet",
    "NumRet(rel=2)", "NumRelRet", "NumRel", "Judged@1", "Judged@5", "Judged@100",
]
#: gdeval (perl) prints its values with 5 decimals; it reads numeric query ids only
GDEVAL = ["ERR@5", "ERR@20"]


def random_pair(seed: int):
    """Numeric query ids (gdeval's), ties (scores with one decimal), grades -1..4."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(8):
        docs = [f"d{i}" for i in rng.sample(range(30), 14)]
        qrels[str(q)] = {d: rng.choice([-1, 0, 0, 1, 1, 2, 3, 4]) for d in docs[:9]}
        run[str(q)] = {d: float(rng.randint(0, 9)) / 10 for d in docs[3:]}
    qrels["0"] = {d: rng.choice([-1, 0]) for d in qrels["0"]}  # judged only non-relevant
    del run["1"]  # a judged query the run lacks
    run["99"] = {"d1": 1.0}  # a query nobody judged
    return qrels, run


def trec_pair():
    """trec_eval's test files (tests/trec_more), query ids made numbers for gdeval."""
    qrels, run = read_qrels(DATA / "qrels.txt"), read_run(DATA / "run.txt")
    ids = {q: str(i) for i, q in enumerate(sorted(set(qrels) | set(run)))}
    return ({ids[q]: v for q, v in qrels.items()}, {ids[q]: v for q, v in run.items()})


def reference(name: str, qrels, run) -> tuple[float, dict[str, float]]:
    """ir_measures' overall value and per-query values for one string, computed alone."""
    measure = ir_measures.parse_measure(name)
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    return ir_measures.calc_aggregate([measure], qrels, run)[measure], per_query


def check(names, qrels, run, tol):
    ours = evaluate(qrels, run, names, per_query=True)
    for name in names:
        mean, per_query = reference(name, qrels, run)
        got = {q: float(ours.per_query[name][i]) for i, q in enumerate(ours.qids)}
        assert got == pytest.approx(per_query, abs=tol), name
        assert ours[name] == pytest.approx(mean, abs=tol), name


@pytest.mark.parametrize("seed", range(4))
def test_random_runs_equal_ir_measures(seed):
    check(MEASURES, *random_pair(seed), 1e-12)


def test_trec_eval_test_files_equal_ir_measures():
    check(MEASURES, *trec_pair(), 1e-12)


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval is a perl script")
@pytest.mark.parametrize("pair", [random_pair(7), random_pair(8), trec_pair()])
def test_err_equals_gdeval(pair):
    check(GDEVAL, *pair, 5.1e-6)


def test_ties_follow_each_provider():
    """All four documents tie: pytrec_eval ranks z, y, b, a (docid descending); ir_measures'
    msmarco and judged providers rank a, b, y, z (ascending)."""
    qrels = {"1": {"a": 1, "z": 2, "y": -1}}
    run = {"1": {"a": 1.0, "b": 1.0, "y": 1.0, "z": 1.0}}
    res = evaluate(qrels, run, ["RR", "RR@10", "Judged@1", "Judged@2", "P@1", "ERR@1"])
    assert res["RR"] == 1.0  # z (relevant) first
    assert res["RR@10"] == 1.0  # a (relevant) first
    assert res["Judged@1"] == 1.0 and res["Judged@2"] == 0.5  # a judged, b not
    assert res["P@1"] == 1.0
    assert res["ERR@1"] == pytest.approx((2**2 - 1) / 2**4)  # z, grade 2, gdeval's max 4
    for name in ("RR", "RR@10", "Judged@1", "Judged@2", "P@1"):
        assert res[name] == pytest.approx(reference(name, qrels, run)[0]), name


def test_judged_is_ir_measures_definition():
    """The issue's case: one document retrieved, judged -1. ir_measures' Judged@5 counts it
    (any qrels entry) over min(5, 1) = 1; our judged_share@5 counts judgements >= 0 over 5."""
    qrels, run = {"1": {"a": -1, "b": 1}}, {"1": {"a": 1.0}}
    res = evaluate(qrels, run, ["Judged@5", "judged_share@5", "unj@5"])
    assert res["Judged@5"] == 1.0 == reference("Judged@5", qrels, run)[0]
    assert res["judged_share@5"] == 0.0 and res["unj@5"] == 1 / 5


def test_err_uses_gdeval_max_grade():
    """One document of grade 1 at rank 1: gdeval (1/16) against the query's own top grade (1/2)."""
    qrels, run = {"1": {"a": 1}}, {"1": {"a": 1.0}}
    res = evaluate(qrels, run, ["ERR@10", "err_qmax@10"])
    assert res["ERR@10"] == pytest.approx(1 / 16) and res["err_qmax@10"] == pytest.approx(1 / 2)


def test_call_options_apply_where_the_string_sets_none():
    qrels, run = random_pair(3)
    deep = evaluate(qrels, run, ["AP", "P@5", "nDCG@10"], relevance_level=2, judged_only=True)
    own = evaluate(qrels, run, ["AP(rel=2,judged_only=True)", "P(rel=2,judged_only=True)@5",
                                "nDCG(judged_only=True)@10"])
    assert list(deep.means.values()) == pytest.approx(list(own.means.values()), abs=1e-15)
    fixed = evaluate(qrels, run, ["AP(rel=1)"], relevance_level=2)
    assert fixed["AP(rel=1)"] == pytest.approx(reference("AP", qrels, run)[0], abs=1e-12)


@pytest.mark.parametrize(("name", "words"), [
    ("RBP", "ir_measures' RBP is not computed here"),
    ("alpha_nDCG@10", "ir_measures' alpha_nDCG is not computed here"),
    ("ERR", "ERR needs a cutoff"),
    ("P", "P needs a cutoff"),
    ("nDCG(dcg='exp-log2')@10", "gdeval's nDCG"),
    ("AP(foo=1)", "AP takes no parameter 'foo'"),
    ("NumRel(rel=2)", "NumRel takes rel=1 only"),
    ("RR(judged_only=True)@10", "RR@k takes no judged_only"),
    ("AP(rel=__import__('os'))", "parameter values must be literals"),
    ("AP(rel=-1)", "rel must be an integer from 0"),
    ("P@99999999999999999999", "cutoff must be an integer from 1"),
    ("AP(rel=" + "(" * 250 + "1" + ")" * 250 + ")", "bad metric"),  # too deep for ast
    ("P(rel=2)@5; import os", "expected Name, Name@x"),
    ("nDCG(gains={1:-3})@5", "gains must map integer levels to integer gains >= 0"),
    ("SetP@5", "SetP takes no @ parameter"),
    ("judged@5", "ambiguous: ir_measures' Judged@k"),
    ("err@10", "ambiguous: ir_measures' ERR@k"),
])
def test_unsupported_strings_are_refused_by_name(name, words):
    with pytest.raises(ValueError, match="^[^\n]*$") as err:
        parse_metric(name)
    assert words in str(err.value) and repr(name) in str(err.value)


def test_err_refuses_grades_gdeval_refuses():
    with pytest.raises(ValueError, match="ERR@5: ir_measures' ERR \\(gdeval\\) reads grades up to 4"):
        evaluate({"1": {"a": 5}}, {"1": {"a": 1.0}}, ["ERR@5"])


def test_trec_command_gives_ir_measures_values_on_files_ir_measures_reads():
    import json

    from typer.testing import CliRunner

    from queryeval.cli.app import app

    names = ["P(rel=2)@5", "Judged@5", "RR@10", "NumQ", "AP", "nDCG(gains={0:0,1:1,2:3})@10"]
    res = CliRunner().invoke(app, ["trec", str(DATA / "qrels.txt"), str(DATA / "run.txt"),
                                   "--json", *(a for n in names for a in ("-m", n))])
    assert res.exit_code == 0, res.output
    qrels = list(ir_measures.read_trec_qrels(str(DATA / "qrels.txt")))
    run = list(ir_measures.read_trec_run(str(DATA / "run.txt")))
    want = ir_measures.calc_aggregate([ir_measures.parse_measure(n) for n in names], qrels, run)
    got = json.loads(res.output)["means"]
    assert got == pytest.approx({n: want[ir_measures.parse_measure(n)] for n in names}, abs=1e-12)
