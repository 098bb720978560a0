"""One figure, one interval: the case-bootstrap CI of a figure is the same in the metrics'
repeats section (console, xlsx Repeats sheet, HTML Repeats section), the HTML report's Overall
table and the viewer, whatever order the suite lists its cases in."""

from __future__ import annotations

import pytest

import queryeval as qe
from helpers.repeats import CASES, seeded_bot
from queryeval.report.html import report_figures

# suite order is the reverse of case id order (c38, c36, ..., c00): an interval that took the
# cases in suite order in one place and in id order in another would differ
REVERSED = CASES[::-2]


def _viewer_row(run: qe.Run, metric: str) -> dict:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from queryeval.viewer.server import create_app

    client = TestClient(create_app(run.folder.parent, resamples=10_000),
                        base_url="http://127.0.0.1")
    doc = client.get(f"/api/runs/{run.batch_id}").json()
    return next(r for r in doc["overall_rows"] if r["metric"] == metric)


def test_repeats_section_overall_table_and_viewer_give_one_interval(tmp_path):
    run = qe.evaluate(REVERSED, system=seeded_bot, repeats=4, out=tmp_path / "o")
    rep = run.metrics["repeats"]["overall"]
    means = rep["macro_recall_mean"]
    # an attempt passes exactly when its macro recall is 1 (the bot answers all or nothing)
    assert (rep["pass_rate"]["ci_low"], rep["pass_rate"]["ci_high"]) == (
        means["ci_low"], means["ci_high"])
    assert 0 < means["mean"] < 1 and means["ci_low"] < means["ci_high"]

    ci = report_figures(run.path).cis["macro_recall"]
    assert ci.mean == pytest.approx(means["mean"], abs=1e-15)
    assert (ci.low, ci.high, ci.n) == (means["ci_low"], means["ci_high"], means["n"])

    row = _viewer_row(run, "macro_recall")
    assert (row["low"], row["high"], row["n"]) == (means["ci_low"], means["ci_high"], 20)


def test_a_deterministic_repeated_run_keeps_the_plain_runs_intervals(tmp_path):
    def fixed(req: dict) -> dict:  # the answer depends on the case only, never on the repeat
        return seeded_bot({"case_id": req["case_id"]})

    plain = qe.evaluate(REVERSED, system=fixed, out=tmp_path / "p")
    rep = qe.evaluate(REVERSED, system=fixed, repeats=3, out=tmp_path / "r")
    a, b = report_figures(plain.path).cis, report_figures(rep.path).cis
    assert a["macro_recall"].low < a["macro_recall"].high
    for name in ("macro_recall", "macro_precision"):
        assert (a[name].low, a[name].high, a[name].n) == (b[name].low, b[name].high, b[name].n)
    assert (a["macro_recall"].low, a["macro_recall"].high) == (
        rep.metrics["repeats"]["overall"]["macro_recall_mean"]["ci_low"],
        rep.metrics["repeats"]["overall"]["macro_recall_mean"]["ci_high"])
