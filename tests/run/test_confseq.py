"""The betting confidence sequence of run/confseq.py (Waudby-Smith & Ramdas 2023, hedged
capital with predictable plug-in bets): its capital against a brute-force loop over a grid of
candidate means, one step by hand, the decisions, and simulations: over thousands of A/A runs
stopped the moment the interval decides, the false decision rate stays at most alpha (where
a fixed-n interval looked at after every case does not)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from queryeval.run.confseq import (
    DECISIONS,
    ConfidenceSequence,
    decide,
    decide_many,
    first_decision,
    simulate_stops,
    to_unit,
)


def brute_capital(xs: list[float], m: float, alpha: float) -> list[float]:
    """K_t(m) for t = 1..n, a plain loop over the paper's definitions (no numpy)."""
    out, kp, km, total, var = [], 1.0, 1.0, 0.0, 0.0
    for t, x in enumerate(xs, start=1):
        sigma2 = (0.25 + var) / t
        lam = math.sqrt(2 * math.log(2 / alpha) / (sigma2 * t * math.log(1 + t)))
        kp *= 1 + min(lam, 0.5 / m) * (x - m)
        km *= 1 - min(lam, 0.5 / (1 - m)) * (x - m)
        total += x
        mean = (0.5 + total) / (t + 1)
        var += (x - mean) ** 2
        out.append(max(0.5 * kp, 0.5 * km))
    return out


def test_one_step_by_hand():
    """x1 = 1 at m = 1/2: λ1 = sqrt(2·ln 40 / (1/4 · ln 2)) = 6.52 is cut to c/m = 1 on both
    sides, so K+ = 1 + 1/2 = 1.5, K− = 1 − 1/2 = 0.5 and K = max(0.75, 0.25) = 0.75."""
    cs = ConfidenceSequence(0.05, points=5)  # grid 0.25, 0.5, 0.75
    assert cs.bet() == pytest.approx(math.sqrt(2 * math.log(40) / (0.25 * math.log(2))))
    cs.update(1.0)
    k = np.exp(np.maximum(math.log(0.5) + cs._log_plus, math.log(0.5) + cs._log_minus))
    assert k[1] == pytest.approx(0.75)
    assert brute_capital([1.0], 0.5, 0.05)[0] == pytest.approx(0.75)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_capital_and_interval_match_a_brute_force_loop_on_a_grid(seed):
    rng = np.random.default_rng(seed)
    alpha = 0.1
    xs = list(rng.choice([0.0, 0.5, 1.0], size=60, p=[0.15, 0.55, 0.3])) if seed else \
        list(rng.beta(5, 2, size=60))
    points = 41
    cs = ConfidenceSequence(alpha, points=points)
    grid = np.linspace(0, 1, points)[1:-1]
    brute = np.array([brute_capital(xs, float(m), alpha) for m in grid])  # (m, t)
    ever = np.zeros(grid.size, dtype=bool)
    for t, x in enumerate(xs):
        cs.update(x)
        k = np.exp(cs._log_k)
        np.testing.assert_allclose(k, brute[:, t], rtol=1e-9)
        ever |= brute[:, t] >= 1 / alpha
        assert np.array_equal(cs.rejected, ever)
        kept = np.flatnonzero(~ever)
        low, high = cs.bounds()
        step = 1 / (points - 1)
        assert float(low) == pytest.approx(max(grid[kept[0]] - step, 0.0))
        assert float(high) == pytest.approx(min(grid[kept[-1]] + step, 1.0))
    assert float(high) - float(low) < 0.6  # 60 observations narrowed it


def test_the_interval_holds_the_exact_set_between_grid_points():
    """Every m the exact set holds (brute force at m off the grid) lies inside the interval."""
    rng = np.random.default_rng(7)
    xs = list(rng.uniform(0.2, 0.9, size=80))
    cs = ConfidenceSequence(0.05, points=101)
    for x in xs:
        cs.update(x)
    low, high = (float(v) for v in cs.bounds())
    fine = np.linspace(0.001, 0.999, 997)
    held = [m for m in fine if max(brute_capital(xs, float(m), 0.05)) < 20]
    assert held and low <= min(held) and max(held) <= high


def test_decisions():
    assert decide(0.01, 0.3) == "better"
    assert decide(-0.3, -0.01) == "worse"
    assert decide(-0.04, 0.04, margin=0.05) == "equivalent"
    assert decide(-0.04, 0.04) == "undecided"
    assert decide(-0.06, 0.04, margin=0.05) == "undecided"
    assert decide(0.01, 0.03, margin=0.05) == "better"  # a direction proven comes first
    got = decide_many(np.array([0.01, -0.3, -0.04, -0.06]), np.array([0.3, -0.01, 0.04, 0.04]),
                      0.05)
    assert [DECISIONS[i] for i in got] == ["better", "worse", "equivalent", "undecided"]
    assert to_unit(-1.0) == 0.0 and to_unit(1.0) == 1.0 and to_unit(0.0) == 0.5


def test_clear_differences_decide_early():
    better = first_decision(np.ones(50), 0.05)
    worse = first_decision(-np.ones(50), 0.05)
    assert better.decision == "better" and better.low > 0 and better.cases < 20
    assert worse.decision == "worse" and worse.high < 0 and worse.cases == better.cases
    same = first_decision(np.zeros(400), 0.05, margin=0.1)
    assert same.decision == "equivalent" and -0.1 < same.low and same.high < 0.1
    assert first_decision(np.zeros(400), 0.05).decision == "undecided"


def _aa_pass_fail(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    """A/A: both systems pass a case with the same case-specific chance (paired, d = B − A)."""
    p = rng.uniform(0, 1, (runs, n))
    return (rng.random((runs, n)) < p).astype(float) - (rng.random((runs, n)) < p)


def _aa_scores(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    """A/A with scores in [0, 1]: each case's two scores drawn from the same Beta."""
    a = rng.uniform(0.5, 5, (runs, n))
    b = rng.uniform(0.5, 5, (runs, n))
    return rng.beta(a, b) - rng.beta(a, b)


@pytest.mark.parametrize("make", [_aa_pass_fail, _aa_scores])
def test_false_decision_rate_of_2000_aa_runs_is_at_most_alpha(make):
    """Stopped at the first decision (better or worse) over up to 200 cases: the share of A/A
    runs that decide a direction is at most alpha (exactly: at most alpha in expectation; the
    bound 0.05 holds with room, the betting sequence is conservative)."""
    rng = np.random.default_rng(38)
    diffs = make(rng, 2000, 200)
    decision, used = simulate_stops(diffs, 0.05, points=101)
    false = np.isin(decision, [0, 1]).mean()
    assert false <= 0.05
    assert (used[np.isin(decision, [0, 1])] < 200).all()


def test_a_fixed_n_interval_peeked_at_after_every_case_fails_the_same_check():
    """What the test above guards against: the 95% normal interval of the mean difference,
    read after every case and stopped when it excludes 0, decides a direction in far more
    than 5% of the same A/A runs."""
    rng = np.random.default_rng(38)
    diffs = _aa_pass_fail(rng, 2000, 200)
    t = np.arange(1, 201)
    mean = np.cumsum(diffs, axis=1) / t
    var = (np.cumsum(diffs**2, axis=1) - t * mean**2) / np.maximum(t - 1, 1)
    half = 1.96 * np.sqrt(np.maximum(var, 1e-12) / t)
    excluded = (np.abs(mean) > half)[:, 9:]  # from the 10th case on
    assert excluded.any(axis=1).mean() > 0.15


def test_coverage_of_a_nonzero_mean_at_every_time():
    """The running interval holds the true mean at all times at once in at least 1 − alpha
    of the runs (values in [0, 1] with mean 0.3)."""
    rng = np.random.default_rng(5)
    xs = rng.choice([0.0, 0.5, 1.0], size=(2000, 150), p=[0.55, 0.3, 0.15])  # mean 0.3
    cs = ConfidenceSequence(0.05, shape=(2000,), points=101)
    miss = np.zeros(2000, dtype=bool)
    for t in range(150):
        cs.update(xs[:, t])
        low, high = cs.bounds()
        miss |= (low > 0.3) | (high < 0.3)
    assert miss.mean() <= 0.05


def test_bad_observations_are_refused():
    cs = ConfidenceSequence(0.05)
    with pytest.raises(ValueError):
        cs.update(1.5)
    with pytest.raises(ValueError):
        cs.update(float("nan"))
    with pytest.raises(ValueError):
        ConfidenceSequence(1.0)
