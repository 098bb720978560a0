"""Cases that share a source (a file, a document, a building) form a cluster: the compare
resamples, flips and tests whole clusters, the run report's intervals resample clusters,
and with one case per cluster every figure is today's. The cluster travels in the run log's
records, so a compare of saved runs sees it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import queryeval as qe
from helpers.compare_clusters import A_PASSES, SIZE, _cases, _responses, _runs  # noqa: E402,F401
from queryeval.metrics import stats
from queryeval.report.compare import compare_many, compare_runs
from queryeval.report.html import render_report, report_figures


def _pass_rate(comp):
    return next(m for m in comp.metrics if m.tested)


def test_the_issue_reproduction_is_not_worse_with_clusters(tmp_path):
    # 20 clusters x 10 free-form cases, outcomes shared within a cluster: A − B differ on
    # 5 clusters (50 cases), 4 against B. As independent cases that is 50 flips all but 10
    # one way; as 5 clusters it is 2**5 sign patterns of which 12 reach |T| = 30
    naive = compare_runs(*_runs(tmp_path, None), resamples=2000)
    m = _pass_rate(naive)
    assert m.diff == pytest.approx(-0.15) and m.verdict == "worse" and m.clusters is None
    clustered = compare_runs(*_runs(tmp_path, "shared"), resamples=2000)
    c = _pass_rate(clustered)
    assert c.diff == pytest.approx(-0.15)
    assert c.verdict == "no detectable difference"
    assert c.randomization_method == "exact" and c.p_randomization == 12 / 32
    assert c.clusters == 20
    # design effect by hand: d = 40 × −1, 10 × +1, 150 × 0; mean −0.15
    iid = (50 - 200 * 0.15**2) / 199 / 200
    robust = 20 / 19 * (4 * 8.5**2 + 11.5**2 + 15 * 1.5**2) / 200**2
    assert c.design_effect == pytest.approx(robust / iid)
    assert c.effective_n == pytest.approx(200 * iid / robust)
    assert c.ci_low < 0 < c.ci_high  # whole clusters resampled: the interval spans 0
    # CR1 t-test: t = mean / sqrt(robust) on 19 degrees of freedom
    from scipy import stats as sp

    assert c.p_ttest == pytest.approx(2 * sp.t.sf(0.15 / math.sqrt(robust), 19))
    assert any("20 clusters" in w for w in clustered.warnings)
    # the note's floor counts clusters that differ: 2 / 2**5, consistent with p = 12/32
    assert any("only 5 of 20 cluster(s) differ; the smallest p the test can give is 0.0625"
               in w for w in clustered.warnings)
    doc = clustered.to_dict()["metrics"]
    assert {"clusters", "design_effect", "effective_n"} <= set(doc[0])
    assert "clusters" not in naive.to_dict()["metrics"][0]


def test_one_case_per_cluster_gives_todays_figures(tmp_path):
    none_a, none_b = _runs(tmp_path, None)
    own_a, own_b = _runs(tmp_path, "own")
    plain, own = compare_runs(none_a, none_b, resamples=500), compare_runs(own_a, own_b,
                                                                           resamples=500)
    for x, y in zip(plain.metrics, own.metrics, strict=True):
        assert x.to_dict() == y.to_dict()
    assert plain.warnings == own.warnings
    # the run report's intervals too, and the metrics file: byte for byte
    assert report_figures(none_a, resamples=500).cis == report_figures(own_a, resamples=500).cis
    metrics = sorted(none_a.parent.glob("metrics_*.json"))[0].read_text()
    metrics_own = sorted(own_a.parent.glob("metrics_*.json"))[0].read_text()
    strip = {"batch_id", "timestamp", "completed_at", "started_at", "suite_info"}
    assert ({k: v for k, v in json.loads(metrics).items() if k not in strip}
            == {k: v for k, v in json.loads(metrics_own).items() if k not in strip})


def test_cluster_is_in_the_records_and_the_report_resamples_clusters(tmp_path):
    a, _ = _runs(tmp_path, "shared")
    records = [json.loads(line) for line in
               sorted(a.parent.glob("results_*.jsonl"))[0].read_text().splitlines()]
    assert records[0]["cluster"] == "file00.csv"
    fig = report_figures(a, resamples=2000)
    ci = fig.cis["pass_rate"]
    assert ci.clusters == 20 and ci.mean == pytest.approx(0.6)
    # A's outcomes are constant within a cluster: the design effect is the full
    # 1 + (m − 1)·ICC with ICC 1 (up to the CR1 and ddof factors)
    assert ci.design_effect == pytest.approx(20 / 19 * 199 / 200 * 10)
    plain = report_figures(_runs(tmp_path, None)[0], resamples=2000).cis["pass_rate"]
    assert (ci.high - ci.low) > 2.5 * (plain.high - plain.low)
    html = render_report(a, resamples=500)
    assert "200 in 20 clusters" in html


def test_nway_compare_tests_clusters(tmp_path):
    a, b = _runs(tmp_path, "shared")
    comp = compare_many([a, b], resamples=500)
    t = comp.overall.test(_pass_rate(compare_runs(a, b, resamples=500)).metric, 0, 1)
    assert t.result.clusters == 20 and t.result.p_randomization == 12 / 32
    assert any("20 clusters" in w for w in comp.warnings)


def test_cluster_by_a_metadata_field_or_tag(tmp_path):
    cases = _cases(None)
    for k, case in enumerate(cases):
        if k % 2:
            case["metadata"] = {"file_name": f"file{k // SIZE:02d}.csv"}
        else:
            case["tags"] = [f"file_name:file{k // SIZE:02d}.csv"]
    run = qe.evaluate(cases, responses=_responses(A_PASSES), out=tmp_path / "r",
                      cluster_by="file_name")
    assert {r["cluster"] for r in run.records} == {f"file{g:02d}.csv" for g in range(20)}
    batch = json.loads(run.path.read_text())
    assert batch["evaluation_config"]["cluster_by"] == "file_name"


def test_cluster_stats_hand_computed():
    assert stats.cluster_index(["a", None, "b", ""]) is None  # every case alone
    index = stats.cluster_index(["a", "a", "b", "b"])
    assert index.tolist() == [0, 0, 1, 1]
    # values 1, 1, 0, 0: mean 0.5, sums (2, 0), residuals (1, −1): CR1 = 2/1 · 2 / 16
    assert stats.cluster_variance([1, 1, 0, 0], index) == pytest.approx(0.25)
    deff, eff = stats.design_effect([1, 1, 0, 0], index)
    assert deff == pytest.approx(0.25 / ((1 / 3) / 4)) and eff == pytest.approx(4 / 3)
    # cases of one cluster less alike than of different ones: sums (1, 1, 2), mean 2/3,
    # residuals (-1/3, -1/3, 2/3): CR1 = 3/2 · (6/9) / 36; s²/N = (12/9)/5/6; the design
    # effect 0.625 is given as measured, the effective n stays 6 (it was 9.6, above N)
    neg = stats.cluster_index(["a", "a", "b", "b", "c", "c"])
    deff, eff = stats.design_effect([1, 0, 1, 0, 1, 1], neg)
    assert deff == pytest.approx((1.5 * (6 / 9) / 36) / ((12 / 9) / 5 / 6))
    assert deff == pytest.approx(0.625) and eff == 6
    from queryeval.report.compare_verdict import notes

    diffs = [0.1, -0.1, 0.1, -0.1, 0.05, 0.0] * 5
    plain = notes("m", n=30, diffs=diffs, ci=(None, None), confidence=0.95, p_raw=0.5,
                  p_adjusted=0.5, family=1, alpha=0.05)
    clustered = notes("m", n=30, diffs=diffs, ci=(None, None), confidence=0.95, p_raw=0.5,
                      p_adjusted=0.5, family=1, alpha=0.05, units=[0.3] * 6,
                      design_effect=0.625, clusters=6)
    assert plain and plain == clustered  # the cases needed not cut by a design effect < 1
    values = [0.2, 0.9, 0.4, 0.4, 1.0, 0.0]
    assert stats.cluster_bootstrap_ci(values, None, resamples=300) == \
        stats.bootstrap_ci(values, resamples=300)
    from scipy import stats as sp

    d = [0.5, -0.25, 1.0, 0.0, 0.75]
    # one case per cluster: the CR1 t-test is the one-sample (paired) t-test
    assert stats.cluster_t_test(d, np.arange(5)).p_value == \
        pytest.approx(sp.ttest_1samp(d, 0).pvalue)


def test_built_in_formats_name_their_clusters(tmp_path):
    from pathlib import Path

    from queryeval.suite.loader import load_suite

    examples = Path(__file__).resolve().parents[1].parent / "examples"
    questions = [json.loads(x) for x in
                 (examples / "answers" / "questions.jsonl").read_text().splitlines() if x]
    dab = load_suite(examples / "answers" / "questions.jsonl",
                     labels=examples / "answers" / "labels.jsonl")
    by_id = {str(q["id"]): q["file_name"] for q in questions}
    assert dab.cases and all(c.cluster == by_id[c.id] for c in dab.cases)
    (tmp_path / "q.csv").write_text(
        "question,answer,document_name,dataset,chunk_id\n"
        "Q1?,a,d.pdf,ds,c1\nQ2?,b,d.pdf,ds,c2\nQ3?,c,e.pdf,ds,c3\n", encoding="utf-8")
    ret = load_suite(tmp_path / "q.csv")
    assert [c.cluster for c in ret.iter_cases()] == ["d.pdf", "d.pdf", "e.pdf"]
    (tmp_path / "tiny.ttl").write_text("@prefix ex: <http://ex.org/> .\nex:a a ex:VAV .\n")
    qa = [{"building_id": "tiny.ttl", "queries": [
        {"query_id": "Q_1", "sparql_query": "SELECT ?v WHERE { ?v a ?t }",
         "questions": [{"question_number": 1, "text": "VAVs?", "source": "human"},
                       {"question_number": 2, "text": "Which VAV boxes?", "source": "LLM_1"}]}]}]
    (tmp_path / "tiny_qa.json").write_text(json.dumps(qa))
    bqa = load_suite(tmp_path / "tiny_qa.json")
    assert [c.cluster for c in bqa.cases] == ["tiny", "tiny"]


def test_repeats_intervals_in_the_metrics_resample_clusters(tmp_path):
    cases = _cases("shared")
    import re

    def system(question):  # passes every question about a file of A_PASSES
        g = int(re.search(r"about file (\d+)", str(question)).group(1))
        return "Paris" if g in A_PASSES else "Rome"

    run = qe.evaluate(cases, system=system, system_name="per-file", out=tmp_path / "r",
                      repeats=2)
    rep = run.metrics["repeats"]
    fig = rep["overall"]["pass_rate"]
    assert fig["mean"] == pytest.approx(0.6) and fig["clusters"] == 20
    assert fig["design_effect"] == pytest.approx(20 / 19 * 199 / 200 * 10)
    ci = stats.cluster_bootstrap_ci([1.0 if int(c["id"][1:3]) in A_PASSES else 0.0
                                     for c in sorted(cases, key=lambda c: c["id"])],
                                    np.repeat(np.arange(20), 10))
    assert (fig["ci_low"], fig["ci_high"]) == (ci.low, ci.high)
    assert "clusters" in rep["ci_method"]


def test_viewer_overall_rows_carry_the_clusters(tmp_path):
    from queryeval.run.results import RunResults
    from queryeval.viewer.results import run_figures

    a, _ = _runs(tmp_path, "shared")
    rows = run_figures(RunResults.open(a), resamples=300)["overall_rows"]
    row = next(r for r in rows if r.get("low") is not None)
    assert row["clusters"] == 20 and row["effective_n"] == pytest.approx(
        200 / (20 / 19 * 199 / 200 * 10))


def test_every_compare_output_carries_the_clusters(tmp_path):
    from queryeval.api.compare import compare

    a, b = _runs(tmp_path, "shared")
    comp = compare(a, b, resamples=300)
    frame = comp.to_pandas()
    m = _pass_rate(comp.raw)
    assert frame.loc[m.metric, "clusters"] == 20
    assert frame.loc[m.metric, "mde"] == pytest.approx(m.mde)
    html = comp.to_html(tmp_path / "c.html").read_text(encoding="utf-8")
    assert "20 clusters" in html and "detectable at 80% power" in html
    doc = json.loads(comp.to_json(tmp_path / "c.json").read_text(encoding="utf-8"))
    assert doc["metrics"][0]["clusters"] == 20 and "20 clusters" in " ".join(doc["warnings"])
    comp.to_xlsx(tmp_path / "c.xlsx")  # writes, clusters or not


def test_cluster_by_a_field_no_case_has_is_one_clear_error(tmp_path):
    from queryeval.errors import ConfigError

    with pytest.raises(ConfigError, match="--cluster-by file: no case has a metadata field"):
        qe.evaluate(_cases(None), responses=_responses(A_PASSES), out=tmp_path / "r",
                    cluster_by="file")
