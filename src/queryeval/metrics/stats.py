"""Statistics for reports and run comparisons (numpy/scipy, no I/O).

* :func:`bootstrap_ci` — percentile bootstrap confidence interval of a mean. Seeded; the
  resampled indices are drawn as one ``(resamples, n)`` matrix (in blocks bounded in memory)
  and the means are taken along the rows.
* :func:`sign_flip_test` — the paired randomization test: under H0 (the two systems are
  exchangeable on every case) each paired difference is equally likely to carry either sign,
  so the null distribution of the mean difference is the set of its 2**n sign flips. Exact
  enumeration for ``n <= exact_max_n`` (meet in the middle: the sums of the two halves' flips
  are added as an outer sum), seeded Monte Carlo otherwise, with the +1 correction
  ``p = (hits + 1) / (resamples + 1)`` so a sampled p is never 0.
* :func:`paired_t_test` — scipy's ``ttest_rel`` with the zero-variance cases made explicit
  (scipy.stats imported there, when a t-test is asked for).
* :func:`holm` — Holm-Bonferroni step-down adjustment across metrics.
* :func:`paired_bootstrap_ci` — bootstrap CI of the mean of the paired differences.
* Clusters (:func:`cluster_index`): :func:`cluster_bootstrap_ci` / :func:`cluster_ratio_ci`
  resample whole clusters (the interval never narrower than the independent-cases one), :func:`cluster_t_test` uses the CR1 sandwich standard error,
  :func:`design_effect` gives the design effect and the effective n; the sign-flip test of
  clustered differences flips the clusters' sums (:func:`cluster_totals`). With one case per
  cluster each is exactly its unclustered counterpart.

See docs/reports.md for why these tests and these conventions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Largest number of entries of one resampling block (indices or signs); bounds memory.
BLOCK_ELEMENTS = 4_000_000


def _as_1d(values: Sequence[float] | np.ndarray, name: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite numbers (no NaN/inf)")
    return arr


def _blocks(total: int, per_row: int) -> list[int]:
    """Row counts of blocks whose ``rows * per_row`` stays under :data:`BLOCK_ELEMENTS`."""
    rows = max(1, BLOCK_ELEMENTS // max(per_row, 1))
    out = []
    while total > 0:
        out.append(min(rows, total))
        total -= out[-1]
    return out


@dataclass(frozen=True)
class MeanCI:
    """A mean with its percentile bootstrap interval (``low``/``high`` None when n == 0).
    With clusters (:func:`cluster_bootstrap_ci`): their number, the design effect and the
    effective n; None when every case is its own cluster."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    confidence: float
    clusters: int | None = None
    design_effect: float | None = None
    effective_n: float | None = None

    def to_dict(self) -> dict:
        out = {"mean": self.mean, "ci_low": self.low, "ci_high": self.high, "n": self.n,
               "confidence": self.confidence}
        if self.clusters is not None:
            out.update(clusters=self.clusters, design_effect=self.design_effect,
                       effective_n=self.effective_n)
        return out


def bootstrap_means(values: Sequence[float] | np.ndarray, *, resamples: int = 10_000,
                    seed: int | None = 0) -> np.ndarray:
    """The ``resamples`` bootstrap means of ``values`` (resampling cases with replacement)."""
    arr = _as_1d(values)
    n = arr.size
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    rng = np.random.default_rng(seed)
    parts = []
    for rows in _blocks(resamples, n):
        idx = rng.integers(0, n, size=(rows, n))
        parts.append(arr[idx].mean(axis=1))
    return np.concatenate(parts)


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, confidence: float = 0.95,
                 resamples: int = 10_000, seed: int | None = 0) -> MeanCI:
    """Percentile bootstrap CI of the mean.

    ``n == 0``: mean and bounds are None. ``n == 1`` or constant values: the interval is the
    single point (every resample has the same mean). Bounds are the ``(1-confidence)/2`` and
    ``(1+confidence)/2`` quantiles (linear interpolation) of the resampled means.
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    arr = _as_1d(values)
    if arr.size == 0:
        return MeanCI(None, None, None, 0, confidence)
    mean = float(arr.mean())
    if np.all(arr == arr[0]):
        return MeanCI(mean, mean, mean, int(arr.size), confidence)
    means = bootstrap_means(arr, resamples=resamples, seed=seed)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return MeanCI(mean, float(low), float(high), int(arr.size), confidence)


def _ratio_inputs(numerators: Sequence[float] | np.ndarray,
                  denominators: Sequence[float] | np.ndarray,
                  confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """A pooled ratio's numerators and denominators as arrays of one length, and the
    confidence checked (the ratio intervals' common arguments)."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    num, den = _as_1d(numerators, "numerators"), _as_1d(denominators, "denominators")
    if num.size != den.size:
        raise ValueError(f"numerators and denominators differ in length ({num.size} vs {den.size})")
    return num, den


def bootstrap_ratio_ci(numerators: Sequence[float] | np.ndarray,
                       denominators: Sequence[float] | np.ndarray, *, confidence: float = 0.95,
                       resamples: int = 10_000, seed: int | None = 0) -> MeanCI:
    """Percentile bootstrap CI of a pooled ratio ``sum(num) / sum(den)`` (e.g. correct
    sub-answers over sub-answers): cases are resampled with their numerator and denominator
    together. ``mean`` is the ratio itself; None (and no interval) when ``sum(den) == 0``.
    A resample whose denominators sum to 0 has no ratio and is left out of the quantiles."""
    num, den = _ratio_inputs(numerators, denominators, confidence)
    n = int(num.size)
    if n == 0 or den.sum() == 0:
        return MeanCI(None, None, None, n, confidence)
    ratio = float(num.sum() / den.sum())
    if np.all(num * den[0] == den * num[0]):  # every case has the same ratio: a point
        return MeanCI(ratio, ratio, ratio, n, confidence)
    low, high = _resampled_ratio(num, den, confidence=confidence, resamples=resamples, seed=seed)
    return MeanCI(ratio, low, high, n, confidence)


def _resampled_ratio(top: np.ndarray, bottom: np.ndarray, *, confidence: float,
                     resamples: int, seed: int | None) -> tuple[float, float]:
    """The percentile interval of ``sum(top) / sum(bottom)`` over resamples (with
    replacement) of the units: cases, or whole clusters given their sums. A resample whose
    bottom sums to 0 has no ratio and is left out of the quantiles."""
    g = int(top.size)
    rng = np.random.default_rng(seed)
    parts = []
    for rows in _blocks(resamples, g):
        idx = rng.integers(0, g, size=(rows, g))
        t, b = top[idx].sum(axis=1), bottom[idx].sum(axis=1)
        parts.append(t[b != 0] / b[b != 0])
    ratios = np.concatenate(parts)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return float(low), float(high)


# --- clusters: cases that share a source are resampled, flipped and tested together -------------
def cluster_index(labels: Sequence[str | None]) -> np.ndarray | None:
    """Each case's cluster as an integer (clusters numbered in order of first appearance; a
    None or blank label is a cluster of its own), or None when every cluster holds one case:
    then every method below is exactly the unclustered one."""
    ids: dict[str, int] = {}
    out = np.empty(len(labels), dtype=np.int64)
    for k, label in enumerate(labels):
        key = f"\x00{k}" if label is None or label == "" else f"c{label}"
        out[k] = ids.setdefault(key, len(ids))
    return None if len(ids) == len(labels) else out


def cluster_totals(values: Sequence[float] | np.ndarray, index: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(sum of the values, number of cases) of each cluster, in cluster order."""
    arr = _as_1d(values)
    if arr.size != index.size:
        raise ValueError(f"values and clusters differ in length ({arr.size} vs {index.size})")
    g = int(index.max()) + 1 if index.size else 0
    return (np.bincount(index, weights=arr, minlength=g),
            np.bincount(index, minlength=g).astype(float))


def cluster_variance(values: Sequence[float] | np.ndarray, index: np.ndarray | None) -> float | None:
    """The cluster-robust (CR1 sandwich) variance of the mean, ``G/(G-1) · Σ_g (S_g −
    n_g·mean)² / N²`` over the G clusters' sums ``S_g`` and sizes ``n_g``; with one case per
    cluster it is ``s²/N`` (the usual variance of a mean). None with fewer than 2 clusters."""
    arr = _as_1d(values)
    if index is None:
        index = np.arange(arr.size)
    sums, sizes = cluster_totals(arr, index)
    g, n = sums.size, arr.size
    if g < 2:
        return None
    mean = arr.sum() / n
    return float(g / (g - 1) * np.sum((sums - sizes * mean) ** 2) / n**2)


def design_effect(values: Sequence[float] | np.ndarray, index: np.ndarray | None
                  ) -> tuple[float | None, float | None]:
    """(design effect, effective n): the cluster-robust variance of the mean over the
    independent-cases one ``s²/N``, and ``N / max(design effect, 1)``. (1, N) with one case
    per cluster; (None, None) when the values do not vary or there are fewer than 2
    clusters. A design effect below 1 is given as measured, but the effective n is never
    above N: as the intervals (:func:`cluster_ratio_ci`), it claims no more precision than
    independent cases give."""
    arr = _as_1d(values)
    n = arr.size
    robust = cluster_variance(arr, index)
    if robust is None or n < 2:
        return None, None
    iid = float(arr.var(ddof=1)) / n
    if iid == 0:
        return None, None
    deff = robust / iid
    return deff, n / max(deff, 1.0)


def cluster_bootstrap_ci(values: Sequence[float] | np.ndarray, index: np.ndarray | None, *,
                         confidence: float = 0.95, resamples: int = 10_000,
                         seed: int | None = 0) -> MeanCI:
    """Percentile cluster bootstrap CI of the mean: whole clusters are resampled with
    replacement, each resample's mean is its cases' total over its number of cases.
    ``index is None`` (one case per cluster): exactly :func:`bootstrap_ci`. The result
    carries the number of clusters, the design effect and the effective n."""
    if index is None:
        return bootstrap_ci(values, confidence=confidence, resamples=resamples, seed=seed)
    return cluster_ratio_ci(values, np.ones(len(index)), index, confidence=confidence,
                            resamples=resamples, seed=seed, mean_of=values)


def cluster_ratio_ci(numerators: Sequence[float] | np.ndarray,
                     denominators: Sequence[float] | np.ndarray, index: np.ndarray | None, *,
                     confidence: float = 0.95, resamples: int = 10_000, seed: int | None = 0,
                     mean_of: Sequence[float] | np.ndarray | None = None) -> MeanCI:
    """Percentile cluster bootstrap CI of ``sum(num) / sum(den)`` resampling whole clusters
    (``index is None``: exactly :func:`bootstrap_ratio_ci`). ``mean_of``: the per-case
    values whose design effect is reported (the numerators when not given)."""
    if index is None:
        return bootstrap_ratio_ci(numerators, denominators, confidence=confidence,
                                  resamples=resamples, seed=seed)
    num, den = _ratio_inputs(numerators, denominators, confidence)
    n = int(num.size)
    top, bottom = cluster_totals(num, index)[0], cluster_totals(den, index)[0]
    g = int(top.size)
    per_case = num / np.where(den == 0, 1, den) if mean_of is None else _as_1d(mean_of)
    deff, eff = design_effect(per_case, index)
    if n == 0 or den.sum() == 0:
        return MeanCI(None, None, None, n, confidence, g, deff, eff)
    ratio = float(num.sum() / den.sum())
    if np.all(num * den[0] == den * num[0]):
        return MeanCI(ratio, ratio, ratio, n, confidence, g, deff, eff)
    low, high = _resampled_ratio(top, bottom, confidence=confidence, resamples=resamples,
                                 seed=seed)
    # never narrower than the independent-cases interval: a design effect below 1 (cases of
    # one cluster less alike than cases of different ones) is rarely real in evaluation data
    # and, with few clusters, mostly the bootstrap's noise; claiming more precision than
    # independent cases give would be a claim the data cannot prove (docs/compare.md)
    iid = bootstrap_ratio_ci(num, den, confidence=confidence, resamples=resamples, seed=seed)
    if iid.low is not None and iid.high is not None:
        low, high = min(low, iid.low), max(high, iid.high)
    return MeanCI(ratio, low, high, n, confidence, g, deff, eff)


def paired_bootstrap_ci(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                        confidence: float = 0.95, resamples: int = 10_000,
                        seed: int | None = 0) -> MeanCI:
    """Bootstrap CI of ``mean(b - a)``: cases are resampled as pairs."""
    a_arr, b_arr = _paired(a, b)
    return bootstrap_ci(b_arr - a_arr, confidence=confidence, resamples=resamples, seed=seed)


def _paired(a, b) -> tuple[np.ndarray, np.ndarray]:
    a_arr, b_arr = _as_1d(a, "a"), _as_1d(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"paired samples differ in length ({a_arr.size} vs {b_arr.size})")
    return a_arr, b_arr


@dataclass(frozen=True)
class TestResult:
    """A two-sided p-value and how it was obtained."""

    p_value: float | None
    statistic: float | None
    method: str
    resamples: int | None = None
    """Sign patterns evaluated (2**n when exact)."""


def _sign_matrix(k: int) -> np.ndarray:
    """All 2**k sign vectors of length k as rows of +-1."""
    bits = (np.arange(2**k, dtype=np.int64)[:, None] >> np.arange(k, dtype=np.int64)) & 1
    return (bits * 2 - 1).astype(float)


def _tolerance(diffs: np.ndarray) -> float:
    """Slack for ``|T*| >= |T_obs|`` so sums equal in exact arithmetic count as ties despite
    floating-point rounding in a different summation order."""
    return 1e-9 * max(float(np.abs(diffs).sum()), 1e-300)


def sign_flip_test(diffs: Sequence[float] | np.ndarray, *, resamples: int = 10_000,
                   seed: int | None = 0, exact_max_n: int = 20) -> TestResult:
    """Two-sided paired randomization (sign-flip) test of ``mean(diffs) == 0``.

    The statistic is the sum of the differences (equivalent to the mean for fixed n). Zero
    differences do not change any flipped sum, so the test enumerates the ``2**k`` flips of
    the ``k`` NON-ZERO differences exactly whenever ``k <= exact_max_n``, however many pairs
    there are: ``p = #{flips with |T*| >= |T_obs|} / 2**k`` (the identity flip and its
    mirror are among them, so ``p >= 2 / 2**k``: :func:`min_p_value`). Otherwise seeded Monte
    Carlo over all n differences, ``p = (hits + 1) / (resamples + 1)``, never reported below
    the exact floor ``2 / 2**k``. ``n == 0`` gives ``p = None``.
    """
    d = _as_1d(diffs, "diffs")
    n = d.size
    if n == 0:
        return TestResult(None, None, "none")
    observed = float(d.sum())
    threshold = abs(observed) - _tolerance(d)
    if not np.any(d):
        return TestResult(1.0, 0.0, "exact", 2**n if n <= exact_max_n else None)
    nz = d[d != 0]
    k = nz.size
    if k <= exact_max_n:
        half = k // 2
        left = _sign_matrix(half) @ nz[:half] if half else np.zeros(1)
        right = _sign_matrix(k - half) @ nz[half:]
        hits = 0
        for rows in _blocks(left.size, right.size):
            chunk, left = left[:rows], left[rows:]
            hits += int(np.count_nonzero(np.abs(chunk[:, None] + right[None, :]) >= threshold))
        total = 2**k
        return TestResult(hits / total, observed, "exact", total)
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    rng = np.random.default_rng(seed)
    hits = 0
    for rows in _blocks(resamples, n):
        signs = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) >= threshold))
    p = max((hits + 1) / (resamples + 1), min_p_value(k))
    return TestResult(p, observed, "monte_carlo", resamples)


def min_p_value(n_nonzero: int) -> float:
    """The smallest two-sided p the sign-flip test can give with ``n_nonzero`` non-zero
    paired differences (or cluster sums): ``2 / 2**n_nonzero`` (1 when none differ)."""
    return min(1.0, 2.0 ** (1 - n_nonzero)) if n_nonzero > 0 else 1.0


def paired_t_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> TestResult:
    """Two-sided paired t-test of ``mean(b - a) == 0`` (``scipy.stats.ttest_rel``).

    Zero variance of the differences is decided explicitly instead of scipy's NaN/warning:
    all differences 0 (identical scores) → ``p = 1.0``; all equal and non-zero → ``p = 0.0``
    (the limit as the variance goes to 0; t is ±inf). Fewer than 2 pairs → ``p = None``.
    """
    a_arr, b_arr = _paired(a, b)
    d = b_arr - a_arr
    if d.size < 2:
        return TestResult(None, None, "t")
    if np.all(d == d[0]):
        if d[0] == 0:
            return TestResult(1.0, 0.0, "t")
        return TestResult(0.0, math.copysign(math.inf, d[0]), "t")
    # Imported here, not at the top: scipy.stats takes ~0.5 s of CPU to import, and a run
    # that only reads its own batch back (queryeval run, qe.Run.batch_id) needs none of it.
    from scipy import stats as _sp

    res = _sp.ttest_rel(b_arr, a_arr)
    return TestResult(float(res.pvalue), float(res.statistic), "t")


def cluster_t_test(diffs: Sequence[float] | np.ndarray, index: np.ndarray) -> TestResult:
    """Two-sided test of ``mean(diffs) == 0`` with the cluster-robust (CR1) standard error
    of :func:`cluster_variance` and G − 1 degrees of freedom; with one case per cluster it is
    the paired t-test. Zero variance is decided as :func:`paired_t_test` does."""
    d = _as_1d(diffs, "diffs")
    var = cluster_variance(d, index)
    if var is None:
        return TestResult(None, None, "cluster_t")
    mean = float(d.sum() / d.size)
    if var <= 0:
        if mean == 0:
            return TestResult(1.0, 0.0, "cluster_t")
        return TestResult(0.0, math.copysign(math.inf, mean), "cluster_t")
    from scipy import stats as _sp

    t = mean / math.sqrt(var)
    g = int(index.max()) + 1
    return TestResult(float(2 * _sp.t.sf(abs(t), g - 1)), t, "cluster_t")


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values, in the input order.

    With the m valid p-values sorted ascending, ``adj_(i) = max_{j<=i} min(1, (m-j+1) p_(j))``
    (1-based). None entries (no test possible) stay None and do not count in m. Rejecting
    where ``adj < alpha`` controls the family-wise error rate at alpha.
    """
    valid = [(p, i) for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    for p, _ in valid:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value out of [0, 1]: {p}")
    out: list[float | None] = [None] * len(p_values)
    m = len(valid)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(valid)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
