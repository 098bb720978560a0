"""Simulated A/A compares on clustered cases: the compare's tests (the randomization test on
the clusters' sums, the CR1 t-test) reject a true null at alpha ± 1 point whatever the
intra-cluster correlation, while the independent-cases tests reject far too often.

Each simulated pair has G clusters of M cases; the paired difference of case j in cluster g
is ``sqrt(ICC)·u_g + sqrt(1 − ICC)·e_gj`` (u, e standard normal): A and B exchangeable,
differences shared within a cluster in proportion ICC. Vectorised with numpy: the
independent-cases t-test and the CR1 t-test over all pairs at once, the randomization
test through :func:`queryeval.metrics.stats.sign_flip_test` itself (2**G exact patterns)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sp

from queryeval.metrics import stats

ALPHA = 0.05
G, M, SIMS = 10, 10, 4000


def _diffs(icc: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((SIMS, G, 1))
    e = rng.standard_normal((SIMS, G, M))
    d = (np.sqrt(icc) * u + np.sqrt(1 - icc) * e).reshape(SIMS, G * M)
    index = np.repeat(np.arange(G), M)
    return d, index


def _cr1_p(d: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The CR1 t-test of every row at once (the formula of stats.cluster_variance)."""
    n = d.shape[1]
    mean = d.mean(axis=1, keepdims=True)
    sums = d.reshape(SIMS, G, M).sum(axis=2)
    var = G / (G - 1) * ((sums - M * mean) ** 2).sum(axis=1) / n**2
    return 2 * sp.t.sf(np.abs(mean[:, 0]) / np.sqrt(var), G - 1)


@pytest.mark.parametrize("icc", [0.0, 0.2, 0.5, 0.8])
def test_clustered_compare_keeps_alpha_and_independent_tests_do_not(icc):
    d, index = _diffs(icc, seed=int(icc * 10))
    # the randomization test the compare runs: sign flips of the clusters' sums
    sums = d.reshape(SIMS, G, M).sum(axis=2)
    p_rand = np.array([stats.sign_flip_test(row).p_value for row in sums])
    assert abs((p_rand < ALPHA).mean() - ALPHA) <= 0.01
    # the CR1 t-test (vectorised) agrees with stats.cluster_t_test on a few rows
    p_cr = _cr1_p(d, index)
    for k in range(3):
        assert p_cr[k] == pytest.approx(stats.cluster_t_test(d[k], index).p_value)
    assert abs((p_cr < ALPHA).mean() - ALPHA) <= 0.01
    # today's independent-cases paired t-test (what the compare did without clusters)
    p_iid = sp.ttest_1samp(d, 0, axis=1).pvalue
    rate = (p_iid < ALPHA).mean()
    if icc == 0.0:
        assert abs(rate - ALPHA) <= 0.01
    else:  # design effect 1 + (M − 1)·ICC: 2.8 at ICC 0.2, 8.2 at ICC 0.8
        assert rate > 0.15


def test_independent_randomization_test_fails_on_clusters():
    # today's sign-flip over the 100 cases (Monte Carlo) on 300 pairs at ICC 0.5
    d, _ = _diffs(0.5, seed=7)
    p = np.array([stats.sign_flip_test(row, resamples=500, seed=k).p_value
                  for k, row in enumerate(d[:300])])
    assert (p < ALPHA).mean() > 0.25
