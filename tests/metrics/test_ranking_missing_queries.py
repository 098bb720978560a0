"""One rule for judged queries a run lacks and queries judged only non-relevant, the same in
``queryeval run`` (a BEIR folder and recorded responses) and ``queryeval trec`` (the same
judgements as qrels and run files): trec_eval -c by default (a missing query scores 0 and
counts; a failed call), pytrec_eval's convention behind the switch (``run --on-error skip``,
``trec --missing-query skip``); a query judged only 0 counts, as 0, under both."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from queryeval.cli.app import app, main
from queryeval.metrics.ranking import evaluate

# q1: its relevant document first; q2: judged, absent from the responses; q3: judged only 0;
# q4: two relevant documents, one retrieved second.
QRELS = {"q1": {"c1": 1}, "q2": {"c2": 1}, "q3": {"c3": 0}, "q4": {"c4": 1, "c5": 1}}
RANKED = {"q1": ["c1", "c2"], "q3": ["c3"], "q4": ["c6", "c5"]}
Q4_NDCG = (1 / math.log2(3)) / (1 + 1 / math.log2(3))  # DCG c5 at rank 2 / IDCG of two
ZERO = {"ndcg@10": (1 + 0 + 0 + Q4_NDCG) / 4, "mrr@10": (1 + 0 + 0 + 0.5) / 4}
SKIP = {"ndcg@10": (1 + 0 + Q4_NDCG) / 3, "mrr@10": (1 + 0 + 0.5) / 3}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    write_jsonl(folder / "corpus.jsonl", [{"_id": f"c{i}", "title": "", "text": f"text {i}"}
                                          for i in range(1, 7)])
    write_jsonl(folder / "queries.jsonl", [{"_id": q, "text": f"{q}?"} for q in QRELS])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q, docs in QRELS.items() for d, r in docs.items()))
    write_jsonl(tmp_path / "out.jsonl", [
        {"case_id": q, "retrieved_chunks": [{"chunk_id": d} for d in docs]}
        for q, docs in RANKED.items()])
    (tmp_path / "qrels.txt").write_text("".join(
        f"{q} 0 {d} {r}\n" for q, docs in QRELS.items() for d, r in docs.items()))
    (tmp_path / "run.txt").write_text("".join(
        f"{q} Q0 {d} {i + 1} {len(docs) - i} t\n"
        for q, docs in RANKED.items() for i, d in enumerate(docs)))
    return tmp_path


def run_metrics(tmp, *args):
    out = tmp / f"runs{len(list(tmp.glob('runs*')))}"
    res = CliRunner().invoke(app, [
        "run", str(tmp / "beir"), "--responses", str(tmp / "out.jsonl"), "--corpus",
        str(tmp / "beir" / "corpus.jsonl"), "--k", "10", "--out", str(out), *args])
    (metrics,) = out.glob("*/metrics_*.json")
    (html,) = out.glob("*/report_*.html")
    return res, {**json.loads(metrics.read_text())["overall_metrics"], "html": html.read_text()}


def trec_json(tmp, *args):
    res = CliRunner().invoke(app, ["trec", str(tmp / "qrels.txt"), str(tmp / "run.txt"),
                                   "-m", "ndcg@10", "-m", "mrr@10", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def pytrec_eval_means():
    """pytrec_eval's figures: per query for the queries in the run, averaged (BEIR's nDCG)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in RANKED.items()}
    per_query = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10", "recip_rank"}).evaluate(run)
    return {"ndcg@10": sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query),
            "mrr@10": sum(v["recip_rank"] for v in per_query.values()) / len(per_query)}


def test_run_and_trec_give_trec_eval_c_figures_by_default(files):
    res, overall = run_metrics(files)
    trec = trec_json(files)
    for name, want in ZERO.items():
        assert overall[name] == pytest.approx(want, abs=1e-12)
        assert trec["means"][name] == pytest.approx(want, abs=1e-12)
    assert evaluate(QRELS, {q: {d: float(-i) for i, d in enumerate(docs)}
                            for q, docs in RANKED.items()},
                    list(ZERO)).means == pytest.approx(ZERO, abs=1e-12)
    assert (overall["missing_queries"], overall["queries_without_relevant"],
            overall["missing_query"]) == (1, 1, "zero")
    assert (trec["missing_queries"], trec["queries_without_relevant"],
            trec["missing_query"]) == (1, 1, "zero")
    assert overall["total_questions"] == trec["queries"] == 4
    assert "1 judged query has no response: each scores 0 and counts" in res.output
    assert all(key in overall["html"] for key in
               ("missing_queries", "missing_query", "queries_without_relevant"))
    assert "1 query is judged only non-relevant" in res.output


def test_the_switch_gives_pytrec_eval_figures_in_both(files):
    _, overall = run_metrics(files, "--on-error", "skip")
    trec = trec_json(files, "--missing-query", "skip")
    reference = pytrec_eval_means()
    for name, want in SKIP.items():
        assert reference[name] == pytest.approx(want, abs=1e-12)
        assert overall[name] == pytest.approx(want, abs=1e-12)
        assert trec["means"][name] == pytest.approx(want, abs=1e-12)
    assert (overall["missing_queries"], overall["missing_query"]) == (1, "skip")
    assert overall["queries_without_relevant"] == trec["queries_without_relevant"] == 1
    assert overall["total_questions"] == trec["queries"] == 3


@pytest.mark.parametrize(("rate", "code"), [("0.2", 3), ("0.3", 0)])  # 1 of 4 calls failed
def test_a_missing_query_counts_toward_the_exit_code(files, rate, code):
    args = ["run", str(files / "beir"), "--responses", str(files / "out.jsonl"), "--corpus",
            str(files / "beir" / "corpus.jsonl"), "--out", str(files / "runs"), "-q"]
    assert main([*args, "--max-error-rate", rate]) == code


def test_trec_heading_names_queries_without_relevant_judgement(files):
    res = CliRunner().invoke(app, ["trec", str(files / "qrels.txt"), str(files / "run.txt"),
                                   "-m", "ndcg@10"])
    assert res.exit_code == 0, res.output
    assert "1 query has no relevant judgement (0 on every measure, counted)" in res.output
