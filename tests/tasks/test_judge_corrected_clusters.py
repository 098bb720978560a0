"""The judge-corrected rate's interval respects clusters (issue 38): cases that share a
source are resampled as whole clusters and the number of clusters is reported; with one
case per cluster the figures are exactly the independent-cases ones."""

from __future__ import annotations

import pytest

import queryeval as qe
from helpers.freeform_task import FakeJudge
from queryeval.engines.judge.checks import save_check
from queryeval.engines.judge.prompt import PROMPT_VERSION
from queryeval.tasks import judging

KEY = judging.CORRECTED
CHECK = [[40, 10], [5, 45]]  # TNR 40/50 = 0.8, TPR 45/50 = 0.9


def _tally(label) -> judging.CorrectedTally:
    """20 files of 10 judged cases each; every case of an even file passes, of an odd one
    fails (outcomes shared within a file: the intra-cluster correlation is 1)."""
    t = judging.CorrectedTally()
    for f in range(20):
        for k in range(10):
            t.add(f % 2 == 0, True, label(f, k))
    return t


def _figures(t: judging.CorrectedTally, **kw) -> dict:
    return judging.corrected_pass_rate(t.cases, t.passes, t.judged, t.judged_passes, CHECK,
                                       clusters=list(t.clusters.values()), **kw)


def test_the_tally_counts_each_clusters_four_kinds():
    t = judging.CorrectedTally()
    for passed, judged, cluster in [(True, False, "a"), (False, False, "a"), (True, True, "a"),
                                    (False, True, "b"), (False, True, "b"), (True, True, None),
                                    (True, False, "")]:
        t.add(passed, judged, cluster)
    # rule pass, rule fail, judge pass, judge fail; None and "" are cases of their own
    assert t.clusters == {"a": [1, 1, 1, 0], "b": [0, 0, 0, 2]}
    assert (t.cases, t.passes, t.judged, t.judged_passes) == (7, 4, 4, 2)


def test_clustered_cases_widen_the_interval_and_name_the_clusters():
    clustered = _figures(_tally(lambda f, k: f"file{f}"))
    alone = _figures(_tally(lambda f, k: f"file{f}-{k}"))  # one case per cluster
    # the point is the same: the judge passed 100 of 200, (0.5 + 0.8 − 1) / (0.9 + 0.8 − 1)
    assert clustered[KEY] == alone[KEY] == pytest.approx(0.3 / 0.7)
    assert clustered[f"{KEY}_clusters"] == 20 and f"{KEY}_clusters" not in alone
    width = {name: f[f"{KEY}_ci_high"] - f[f"{KEY}_ci_low"]
             for name, f in (("clustered", clustered), ("alone", alone))}
    # 20 clusters are worth 20 cases, not 200: the cases' part of the standard error grows
    # by sqrt(10); with the judge-check's part unchanged the interval is over twice as wide
    assert width["clustered"] > 2 * width["alone"]
    assert clustered[f"{KEY}_ci_low"] <= alone[f"{KEY}_ci_low"]
    assert clustered[f"{KEY}_ci_high"] >= alone[f"{KEY}_ci_high"]


def test_one_case_per_cluster_gives_todays_figures():
    alone = _tally(lambda f, k: f"file{f}-{k}")
    assert _figures(alone, seed=7) == judging.corrected_pass_rate(
        alone.cases, alone.passes, alone.judged, alone.judged_passes, CHECK, seed=7)
    assert _figures(_tally(lambda f, k: None), seed=7) == _figures(alone, seed=7)


def test_counts_that_do_not_add_up_are_refused():
    with pytest.raises(ValueError, match="exceed"):
        judging.corrected_pass_rate(4, 2, 2, 1, CHECK, clusters=[[3, 0, 0, 0]])


def test_a_clustered_judged_run_reports_its_clusters(tmp_path, monkeypatch):
    judge = FakeJudge(passes={f"c{i}" for i in range(6)})
    monkeypatch.setattr("queryeval.engines.judge.make_judge", lambda options: judge)
    checks = tmp_path / "checks"
    save_check({"model": "fake-judge", "prompt_version": PROMPT_VERSION, "n": 100,
                "tpr": {"value": 0.9}, "tnr": {"value": 0.8}, "confusion": CHECK}, checks)
    cases = [{"id": f"c{i}", "cluster": f"doc{i // 2}",
              "conversation": [{"role": "user", "content": f"why {i}?",
                                "target": {"reference": {"answer": "a supply shortage"}}}]}
             for i in range(10)]
    responses = [{"id": f"c{i}", "response": "Suppliers could not deliver."} for i in range(10)]
    run = qe.evaluate(cases, responses=responses, out=tmp_path / "runs",
                      judge={"model": "fake-judge", "base_url": "http://127.0.0.1:9/v1",
                             "checks_dir": str(checks)})
    overall = run.overall
    assert overall[KEY] == pytest.approx((0.6 + 0.8 - 1) / (0.9 + 0.8 - 1))
    assert overall[f"{KEY}_clusters"] == 5
    from queryeval.tasks.freeform.task import FreeformTask

    notes = [x.text for x in FreeformTask({}).summary(run.metrics) if hasattr(x, "text")]
    assert any("over 5 clusters" in t and "(raw 0.6000)" in t for t in notes)
