"""The pass rate corrected for the judge's known errors (Rogan–Gladen) from the judge-check
recorded for the judge's model and prompt version: hand-computed values, when it is
undefined, an interval that carries the judge-check's uncertainty and covers the true rate,
and the figure beside the raw rate in a judged free-form run's metrics, report and viewer."""

from __future__ import annotations

import numpy as np
import pytest

import queryeval as qe
from helpers.freeform_task import FakeJudge
from queryeval.engines.judge.checks import save_check
from queryeval.engines.judge.prompt import PROMPT_VERSION
from queryeval.report.html import render_report
from queryeval.run.results import RunResults
from queryeval.tasks import judging
from queryeval.viewer.results import run_figures

KEY = judging.CORRECTED


def test_rogan_gladen_hand_computed():
    assert judging.rogan_gladen(0.6, 0.9, 0.8) == pytest.approx(0.4 / 0.7)
    assert judging.rogan_gladen(0.1, 0.9, 0.8) == 0.0       # clipped at 0
    assert judging.rogan_gladen(0.99, 0.9, 0.95) == 1.0     # clipped at 1
    assert judging.rogan_gladen(0.5, 0.5, 0.5) is None      # a coin: undefined
    assert judging.rogan_gladen(0.5, 0.3, 0.6) is None      # TPR + TNR < 1: undefined


def test_corrected_rate_corrects_only_the_judged_cases():
    # 10 cases, 6 pass; the judge decided 5 of them and passed 3; check: TPR 45/50, TNR 40/50
    fig = judging.corrected_pass_rate(10, 6, 5, 3, [[40, 10], [5, 45]], resamples=4000)
    assert fig[KEY] == pytest.approx((3 + 5 * (0.6 + 0.8 - 1) / (0.9 + 0.8 - 1)) / 10)
    assert fig[f"{KEY}_ci_low"] <= fig[KEY] <= fig[f"{KEY}_ci_high"]
    # 200 cases, 100 judged: a judge-check of a fifth the size gives the same point and a
    # wider interval (the check's own uncertainty is carried)
    big = judging.corrected_pass_rate(200, 120, 100, 60, [[40, 10], [5, 45]], resamples=4000)
    small = judging.corrected_pass_rate(200, 120, 100, 60, [[8, 2], [1, 9]], resamples=4000)
    assert small[KEY] == pytest.approx(big[KEY]) == pytest.approx((60 + 100 * 0.4 / 0.7) / 200)
    assert (small[f"{KEY}_ci_high"] - small[f"{KEY}_ci_low"]) > \
        1.5 * (big[f"{KEY}_ci_high"] - big[f"{KEY}_ci_low"])
    assert judging.corrected_pass_rate(10, 6, 0, 0, [[40, 10], [5, 45]]) == {}   # none judged
    assert judging.corrected_pass_rate(10, 6, 5, 3, [[25, 25], [25, 25]]) == {}  # a coin
    assert judging.corrected_pass_rate(10, 6, 5, 3, [[0, 0], [5, 45]]) == {}     # no human fail
    assert judging.corrected_pass_rate(10, 6, 5, 3, "bad") == {}


def test_corrected_interval_covers_the_true_rate():
    # 400 simulated runs of 200 judge-decided cases, true pass rate 0.5, a judge with TPR 0.85
    # and TNR 0.9, each checked on 80 human-pass and 80 human-fail cases
    rng = np.random.default_rng(40)
    covered = 0
    for k in range(400):
        truth = rng.random(200) < 0.5
        says = np.where(truth, rng.random(200) < 0.85, rng.random(200) >= 0.9)
        tp, tn = rng.binomial(80, 0.85), rng.binomial(80, 0.9)
        fig = judging.corrected_pass_rate(200, int(says.sum()), 200, int(says.sum()),
                                          [[tn, 80 - tn], [80 - tp, tp]], resamples=1000,
                                          seed=k)
        covered += fig[f"{KEY}_ci_low"] <= 0.5 <= fig[f"{KEY}_ci_high"]
    assert abs(covered / 400 - 0.95) <= 0.035


def test_judged_run_reports_the_corrected_rate_beside_the_raw_one(tmp_path, monkeypatch):
    judge = FakeJudge(passes={f"c{i}" for i in range(6)})
    monkeypatch.setattr("queryeval.engines.judge.make_judge", lambda options: judge)
    checks = tmp_path / "checks"
    save_check({"model": "fake-judge", "prompt_version": PROMPT_VERSION, "n": 100,
                "tpr": {"value": 0.9}, "tnr": {"value": 0.8},
                "confusion": [[40, 10], [5, 45]]}, checks)
    cases = [{"id": f"c{i}", "conversation": [{"role": "user", "content": f"why {i}?",
              "target": {"reference": {"answer": "a supply shortage"}}}]} for i in range(10)]
    responses = [{"id": f"c{i}", "response": "Suppliers could not deliver."} for i in range(10)]
    run = qe.evaluate(cases, responses=responses, out=tmp_path / "runs",
                      judge={"model": "fake-judge", "base_url": "http://127.0.0.1:9/v1",
                             "checks_dir": str(checks)})
    overall = run.overall
    assert overall["judge_decided"] == 10 and overall["pass_rate"] == pytest.approx(0.6)
    want = (0.6 + 0.8 - 1) / (0.9 + 0.8 - 1)
    assert overall[KEY] == pytest.approx(want)
    assert list(overall).index(KEY) == list(overall).index("pass_rate") + 1
    html = render_report(run.path, resamples=300)
    assert f"{KEY}</td>" in html and f"{KEY}_ci_low" not in html
    rows = {r["metric"]: r for r in run_figures(RunResults.open(run.path), resamples=300)["overall_rows"]}
    assert rows[KEY]["low"] == pytest.approx(overall[f"{KEY}_ci_low"])
    assert rows[KEY]["high"] == pytest.approx(overall[f"{KEY}_ci_high"])
    assert f"{KEY}_ci_low" not in rows
    # the console summary says it beside the raw rate
    from queryeval.tasks.freeform.task import FreeformTask

    notes = [x.text for x in FreeformTask({}).summary(run.metrics) if hasattr(x, "text")]
    assert any(f"judge's known errors (Rogan-Gladen, from its judge-check): {want:.4f}" in t
               and "(raw 0.6000)" in t for t in notes)
