"""A cluster bootstrap interval is never narrower than the independent-cases one: with
clusters whose cases differ more within than between (design effect < 1) it spans the
independent interval; with clustered, alike cases it is the (wider) cluster interval."""

from __future__ import annotations

import numpy as np

from queryeval.metrics import stats


def test_negative_intra_cluster_correlation_keeps_the_independent_width():
    # 10 clusters of 4 cases, each exactly half passes: every cluster's mean is 0.5, so the
    # cluster bootstrap alone gives a zero-width interval (design effect far below 1)
    values = np.array([1, 0, 1, 0] * 10, dtype=float)
    index = np.repeat(np.arange(10), 4)
    iid = stats.bootstrap_ci(values, resamples=2000, seed=0)
    clustered = stats.cluster_bootstrap_ci(values, index, resamples=2000, seed=0)
    assert clustered.design_effect is not None and clustered.design_effect < 0.1
    assert (clustered.low, clustered.high) == (iid.low, iid.high)
    assert iid.high - iid.low > 0.2


def test_alike_clusters_give_the_wider_cluster_interval():
    rng = np.random.default_rng(1)
    outcome = rng.integers(0, 2, size=20)            # 20 clusters, each all pass or all fail
    values = np.repeat(outcome, 10).astype(float)
    index = np.repeat(np.arange(20), 10)
    iid = stats.bootstrap_ci(values, resamples=2000, seed=0)
    clustered = stats.cluster_bootstrap_ci(values, index, resamples=2000, seed=0)
    assert clustered.design_effect > 5
    assert clustered.high - clustered.low > 2 * (iid.high - iid.low)
