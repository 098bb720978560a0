"""``queryeval plan`` and the minimum detectable effect: closed forms checked against
statsmodels' power functions (reference values below, computed outside the project's
environment), McNemar's sample size against a simulation, and the compare's headline."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers.compare_clusters import _runs  # the 20 files × 10 cases of the issue
from queryeval.errors import ConfigError
from queryeval.report import planning

# statsmodels 0.15.0, in a scratch venv:
#   from statsmodels.stats.proportion import samplesize_proportions_2indep_onetail as ss
#   ss(diff, prop2, 0.8, ratio=1, alpha=0.05, alternative="two-sided")
STATSMODELS_2INDEP = {(0.7, 0.05): 1250.716733435614, (0.5, 0.10): 387.3385166990357,
                      (0.2, 0.15): 137.91475313555486, (0.9, -0.1): 198.96341328433104}
#   NormalIndPower().solve_power(effect_size=None, nobs1=100, alpha=0.05, power=0.8, ratio=0)
STATSMODELS_ONE_SAMPLE_EFFECT_N100 = 0.2801568334667266


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    code = "import sys\nfrom queryeval.cli.app import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, check=False, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200"})


@pytest.mark.parametrize(("baseline", "effect"), list(STATSMODELS_2INDEP))
def test_independent_cases_equal_statsmodels(baseline, effect):
    assert planning.independent_cases(baseline, effect) == pytest.approx(
        STATSMODELS_2INDEP[(baseline, effect)], rel=1e-9)


def test_minimum_detectable_effect_equals_statsmodels():
    # statsmodels also counts rejections in the far tail (power 0.8 includes ~1e-6 of them),
    # so its effect is smaller by 2e-6: equal to 1e-5 relative
    assert planning.minimum_detectable_effect(1 / math.sqrt(100), alpha=0.05) == \
        pytest.approx(STATSMODELS_ONE_SAMPLE_EFFECT_N100, rel=1e-5)
    assert planning.minimum_detectable_effect(0.1, alpha=0.05) == pytest.approx(
        (1.959963984540054 + 0.8416212335729143) * 0.1, rel=1e-12)
    assert planning.minimum_detectable_effect(0.0, alpha=0.05) is None


def test_paired_cases_closed_form_and_design_effect():
    za, zb = 1.959963984540054, 0.8416212335729143
    want = (za * math.sqrt(0.2) + zb * math.sqrt(0.2 - 0.05**2)) ** 2 / 0.05**2
    assert planning.paired_cases(0.05, 0.2) == pytest.approx(want, rel=1e-12)
    p = planning.plan(0.7, 0.05, discordance=0.2, icc=0.1, cluster_size=10, repeats=3)
    assert p.design_effect == pytest.approx(1.9)
    assert p.clusters == math.ceil(math.ceil(want * 1.9) / 10) and p.cases == p.clusters * 10
    assert p.calls == 3 * p.cases
    with pytest.raises(ConfigError, match="cannot exceed the discordance"):
        planning.plan(0.7, 0.1, discordance=0.05)
    with pytest.raises(ConfigError, match="go together"):
        planning.plan(0.7, 0.1, icc=0.1)


def test_planned_cases_reach_the_power_in_simulation():
    rng = np.random.default_rng(38)
    sims = 4000
    # paired: the systems disagree on 30% of cases, B wins 20 points of them, A 10
    n = planning.plan(0.6, 0.1, discordance=0.3).cases
    cells = rng.multinomial(n, [0.2, 0.1, 0.7], size=sims)
    b, c = cells[:, 0], cells[:, 1]
    z = (b - c) / np.sqrt(np.maximum(b + c, 1))
    assert abs((np.abs(z) > 1.959963984540054).mean() - 0.8) < 0.025
    # independent: two samples of n cases at 0.6 and 0.7, the pooled two-proportion z-test
    n = planning.plan(0.6, 0.1).cases
    x1, x2 = rng.binomial(n, 0.6, size=sims) / n, rng.binomial(n, 0.7, size=sims) / n
    pooled = (x1 + x2) / 2
    z = (x2 - x1) / np.sqrt(pooled * (1 - pooled) * 2 / n)
    assert abs((np.abs(z) > 1.959963984540054).mean() - 0.8) < 0.025


def test_plan_command_prints_cases_and_json(tmp_path):
    out = _cli("plan", "--baseline", "0.7", "--effect", "0.05", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cases: 1251 cases per run")
    out = _cli("plan", "--baseline", "0.7", "--effect", "0.05", "--discordance", "0.2",
               "--icc", "0.1", "--cluster-size", "10", "--json", cwd=tmp_path)
    doc = json.loads(out.stdout)
    assert doc["cases"] == 1190 and doc["clusters"] == 119 and doc["method"] == "paired"
    bad = _cli("plan", "--baseline", "0.7", "--effect", "0.5", cwd=tmp_path)
    assert bad.returncode == 2 and "--effect 0.5" in bad.stderr and len(
        bad.stderr.strip().splitlines()) == 1


def test_plan_from_pilot_runs_and_mde_in_the_compare(tmp_path):
    from queryeval.metrics import stats
    from queryeval.report.compare import compare_runs

    a, b = _runs(tmp_path, "shared")
    out = _cli("plan", "--baseline", "0.6", "--effect", "0.1", "--pilot", str(a),
               "--pilot", str(b), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["discordance"] == 50 / 200  # 5 of 20 files × 10 cases decided differently
    assert doc["cases"] == math.ceil(planning.paired_cases(0.1, 0.25))
    comp = compare_runs(a, b, resamples=500)
    m = next(x for x in comp.metrics if x.tested)
    diffs = [-1.0] * 40 + [1.0] * 10 + [0.0] * 150
    index = np.repeat(np.arange(20), 10)  # 4 clusters at −10, one at +10, 15 at 0
    se = math.sqrt(stats.cluster_variance(diffs, index))
    assert m.mde == pytest.approx(2.801585218 * se, rel=1e-6)
    assert f"(detectable at 80% power: {m.metric} ±{m.mde:.3g}" in comp.headline()
