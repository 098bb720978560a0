"""Statistics: hand-computed small cases, scipy cross-checks and brute-force oracles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sp

from queryeval.metrics import stats


# --- bootstrap ----------------------------------------------------------------------------
def test_bootstrap_empty_and_constant():
    empty = stats.bootstrap_ci([])
    assert (empty.mean, empty.low, empty.high, empty.n) == (None, None, None, 0)
    const = stats.bootstrap_ci([0.5, 0.5, 0.5])
    assert (const.mean, const.low, const.high) == (0.5, 0.5, 0.5)
    single = stats.bootstrap_ci([0.25])
    assert (single.low, single.high) == (0.25, 0.25)


def test_bootstrap_two_points_hand_computed():
    # resampled means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: the 2.5% and
    # 97.5% quantiles are 0 and 1.
    ci = stats.bootstrap_ci([0.0, 1.0], resamples=20_000, seed=1)
    assert ci.mean == 0.5
    assert (ci.low, ci.high) == (0.0, 1.0)
    means = stats.bootstrap_means([0.0, 1.0], resamples=20_000, seed=1)
    assert set(np.unique(means)) == {0.0, 0.5, 1.0}
    assert abs(np.mean(means == 0.5) - 0.5) < 0.02


def test_bootstrap_seeded_and_blocked(monkeypatch):
    values = np.random.default_rng(3).random(37)
    one = stats.bootstrap_means(values, resamples=5000, seed=7)
    assert np.array_equal(one, stats.bootstrap_means(values, resamples=5000, seed=7))
    assert not np.array_equal(one, stats.bootstrap_means(values, resamples=5000, seed=8))
    # blocks are consumed from one generator stream, so the result does not depend on the
    # block size except through the draw order; the distribution stays the same
    monkeypatch.setattr(stats, "BLOCK_ELEMENTS", 100)
    small = stats.bootstrap_means(values, resamples=5000, seed=7)
    assert small.shape == (5000,)
    assert abs(small.mean() - values.mean()) < 0.01


@pytest.mark.parametrize("seed", [0, 1])
def test_bootstrap_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    values = rng.beta(2, 5, size=60)
    ours = stats.bootstrap_ci(values, resamples=20_000, seed=seed)
    ref = sp.bootstrap((values,), np.mean, method="percentile", n_resamples=20_000,
                       random_state=np.random.default_rng(seed + 100), vectorized=True)
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert abs(ours.low - ref.confidence_interval.low) < 0.05 * width
    assert abs(ours.high - ref.confidence_interval.high) < 0.05 * width
    assert ours.low < ours.mean < ours.high


def test_paired_bootstrap_is_bootstrap_of_differences():
    a = [0.0, 0.5, 1.0, 1.0, 0.2]
    b = [1.0, 0.5, 1.0, 0.0, 0.9]
    diff = np.subtract(b, a)
    assert stats.paired_bootstrap_ci(a, b, seed=4) == stats.bootstrap_ci(diff, seed=4)
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_bootstrap_ci([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        stats.bootstrap_ci([1.0, math.nan])


# --- sign-flip test -------------------------------------------------------------------------
def _brute_force_p(diffs: list[float]) -> float:
    observed = abs(sum(diffs))
    hits = sum(
        1 for signs in itertools.product((-1, 1), repeat=len(diffs))
        if abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed - 1e-9
    )
    return hits / 2 ** len(diffs)


def test_sign_flip_hand_computed():
    # flips of 1, 2, 3 give sums 6, 4, 2, 0, 0, -2, -4, -6: |T| >= 6 twice in 8
    r = stats.sign_flip_test([1.0, 2.0, 3.0])
    assert r.method == "exact" and r.p_value == 0.25 and r.statistic == 6.0
    assert r.resamples == 8
    assert stats.sign_flip_test([1.0] * 5).p_value == 2 / 32
    assert stats.sign_flip_test([1.0, -1.0]).p_value == 1.0
    assert stats.sign_flip_test([0.0, 0.0, 0.0]).p_value == 1.0
    assert stats.sign_flip_test([]).p_value is None
    assert stats.sign_flip_test([0.5]).p_value == 1.0  # one pair: both flips reach |0.5|


def test_sign_flip_ties_despite_rounding():
    # 0.1 + 0.2 != 0.3 in floating point; the flip (+0.1, +0.2, -0.3) ties T = 0 exactly
    diffs = [0.1, 0.2, -0.3]
    assert stats.sign_flip_test(diffs).p_value == _brute_force_p(diffs) == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 0.3333333333333333]),
                min_size=1, max_size=9))
def test_sign_flip_exact_matches_brute_force(diffs):
    assert stats.sign_flip_test(diffs).p_value == pytest.approx(_brute_force_p(diffs), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_sign_flip_matches_scipy_permutation_test(seed):
    rng = np.random.default_rng(seed)
    n = 6 + seed * 2
    a = rng.choice([0.0, 0.5, 1.0], size=n)
    b = np.clip(a + rng.choice([-0.5, 0.0, 0.5, 1.0], size=n), 0, 1)
    ref = sp.permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis),
                              permutation_type="samples", vectorized=True,
                              alternative="two-sided", n_resamples=np.inf)
    ours = stats.sign_flip_test(b - a)
    assert ours.p_value == pytest.approx(min(1.0, ref.pvalue), abs=1e-12)


def test_sign_flip_monte_carlo_close_to_exact():
    rng = np.random.default_rng(11)
    diffs = rng.normal(0.15, 0.5, size=24)
    exact = stats.sign_flip_test(diffs, exact_max_n=24)
    mc = stats.sign_flip_test(diffs, exact_max_n=20, resamples=40_000, seed=5)
    assert exact.method == "exact" and exact.resamples == 2**24
    assert mc.method == "monte_carlo" and mc.resamples == 40_000
    se = math.sqrt(exact.p_value * (1 - exact.p_value) / 40_000)
    assert abs(mc.p_value - exact.p_value) < 5 * se + 1e-4
    assert mc == stats.sign_flip_test(diffs, exact_max_n=20, resamples=40_000, seed=5)


def test_sign_flip_monte_carlo_plus_one_correction():
    # 30 equal positive differences: only the all-plus and all-minus flips reach |T_obs|,
    # probability 2**-29, so with 99 resamples the hits are 0 and p = (0 + 1) / (99 + 1)
    r = stats.sign_flip_test([1.0] * 30, resamples=99, seed=0)
    assert r.p_value == 0.01


# --- t-test -------------------------------------------------------------------------------
def test_t_test_zero_variance_and_small_n():
    assert stats.paired_t_test([1, 2, 3], [1, 2, 3]).p_value == 1.0
    shifted = stats.paired_t_test([0, 1, 2], [1, 2, 3])
    assert shifted.p_value == 0.0 and shifted.statistic == math.inf
    assert stats.paired_t_test([1, 2, 3], [0, 1, 2]).statistic == -math.inf
    assert stats.paired_t_test([1.0], [0.0]).p_value is None


def test_t_test_matches_scipy_and_hand_value():
    # differences 1, 0.5: mean .75, sd .3536, t = .75 / (.3536 / sqrt 2) = 3, df 1
    r = stats.paired_t_test([0.0, 1.0], [1.0, 1.5])
    assert r.statistic == pytest.approx(3.0)
    assert r.p_value == pytest.approx(2 * sp.t.sf(3.0, 1))
    rng = np.random.default_rng(2)
    a, b = rng.random(15), rng.random(15)
    assert stats.paired_t_test(a, b).p_value == pytest.approx(sp.ttest_rel(b, a).pvalue)


# --- Holm ---------------------------------------------------------------------------------
def test_holm_hand_computed():
    # sorted .01, .03, .04 times 3, 2, 1 = .03, .06, .04; the running maximum makes the last .06
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # step-down monotonicity: 3 * 0.011 = 0.033 < 4 * 0.01 = 0.04, so it is raised to 0.04
    assert stats.holm([0.01, 0.02, 0.5, 0.011]) == pytest.approx([0.04, 0.04, 0.5, 0.04])
    assert stats.holm([0.4, 0.6]) == [0.8, 0.8]
    assert stats.holm([0.9, 0.9]) == [1.0, 1.0]
    assert stats.holm([None, 0.02, 0.03]) == pytest.approx([None, 0.04, 0.04])
    assert stats.holm([]) == []
    with pytest.raises(ValueError):
        stats.holm([1.5])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_holm_rejections_match_sequential_procedure(ps):
    """Adjusted p < alpha exactly for the hypotheses Holm's sequential procedure rejects."""
    alpha = 0.05
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    rejected = set()
    for rank, i in enumerate(order):
        if ps[i] * (len(ps) - rank) < alpha:
            rejected.add(i)
        else:
            break
    adjusted = stats.holm(ps)
    assert {i for i, p in enumerate(adjusted) if p < alpha} == rejected
    assert all(a >= p for a, p in zip(adjusted, ps, strict=True))


def test_sign_flip_exact_over_the_nonzero_differences_whatever_the_pairs():
    # 25 pairs, 6 differ by +1: the 2**6 flips of the non-zero ones decide; |T*| >= 6 only
    # for all-plus and all-minus, so p = 2/64 = 0.03125, the floor the compare text states
    diffs = [1.0] * 6 + [0.0] * 19
    r = stats.sign_flip_test(diffs)
    assert r.method == "exact" and r.resamples == 64
    assert r.p_value == 2 / 64 == stats.min_p_value(6)
    mixed = [1.0, 1.0, 1.0, -1.0, 0.5, 1.0] + [0.0] * 30
    assert stats.sign_flip_test(mixed).p_value == pytest.approx(_brute_force_p(mixed[:6]),
                                                                abs=1e-12)


def test_sign_flip_monte_carlo_never_below_the_exact_floor():
    # forced to Monte Carlo with 6 non-zero differences: seed 0's 2,000 flips give
    # (49 + 1) / 2001 = 0.025, under the exact floor 2/2**6; the reported p is the floor
    r = stats.sign_flip_test([1.0] * 6 + [0.0] * 19, exact_max_n=3, resamples=2000, seed=0)
    assert r.method == "monte_carlo" and r.p_value == stats.min_p_value(6) == 0.03125
