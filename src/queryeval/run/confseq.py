"""Anytime-valid decisions on a paired difference: a betting confidence sequence.

Waudby-Smith & Ramdas (2023), "Estimating means of bounded random variables by betting"
(JRSS B), the *hedged capital process* with predictable plug-in bets (their Theorem 3 and
eq. (26)). Observations ``x_1, x_2, …`` lie in [0, 1]; for each candidate mean ``m``

* ``μ̂_t = (1/2 + Σ_{i≤t} x_i) / (t + 1)``, ``σ̂²_t = (1/4 + Σ_{i≤t} (x_i − μ̂_i)²) / (t + 1)``
* the bet ``λ_t = sqrt(2·log(2/α) / (σ̂²_{t−1} · t · log(1 + t)))``, chosen before ``x_t`` is
  seen (predictable), truncated per side: ``λ⁺_t(m) = min(λ_t, c/m)``,
  ``λ⁻_t(m) = min(λ_t, c/(1 − m))`` with ``c = 1/2``
* ``K⁺_t(m) = Π (1 + λ⁺_i(m)·(x_i − m))``, ``K⁻_t(m) = Π (1 − λ⁻_i(m)·(x_i − m))``,
  ``K_t(m) = max(θ·K⁺_t(m), (1 − θ)·K⁻_t(m))`` with ``θ = 1/2``
* the confidence sequence ``C_t = {m : K_t(m) < 1/α}``; under the true mean ``K⁺`` and ``K⁻``
  are nonnegative martingales, so by Ville's inequality ``P(∃t: μ ∉ C_t) ≤ α``: the
  interval is valid at every t at once, and so at a stopping time chosen from the data.

:class:`ConfidenceSequence` evaluates the capital on a grid of ``m`` and keeps the running
intersection of the ``C_t`` (valid too, and it never widens); the interval it reports runs
one grid step beyond the outermost grid points not rejected, so it holds every ``m`` the
exact set holds. A paired difference of per-case scores in [0, 1] lies in [−1, 1] and is
mapped to [0, 1] by ``x = (d + 1)/2`` (:func:`to_unit`); the interval is mapped back.
:func:`decide` turns an interval into better / worse / equivalent / undecided.

Pure numpy, no I/O (in the run layer, below the reports, because the run itself decides
when to stop). run/sequential.py feeds it; docs/compare.md describes the
rule. Works on a batch of sequences at once (leading axes), for the simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

C = 0.5
"""The truncation of the bets (WSR's c: 1/2 or 3/4)."""
THETA = 0.5
"""The hedge between betting on "above m" and on "below m"."""
GRID = 2001
"""Grid points of m on [0, 1] (steps of 0.0005; 0.001 in a difference)."""

DECISIONS = ("better", "worse", "equivalent", "undecided")


def to_unit(d: np.ndarray | float) -> np.ndarray:
    """A difference in [−1, 1] as a value in [0, 1]: ``(d + 1) / 2``."""
    return (np.asarray(d, dtype=float) + 1.0) / 2.0


def grid(points: int = GRID) -> np.ndarray:
    """The interior points of an even grid on [0, 1] (m = 0 and m = 1 have no bet)."""
    return np.linspace(0.0, 1.0, points)[1:-1]


class ConfidenceSequence:
    """The hedged betting confidence sequence at level ``alpha`` for values in [0, 1],
    updated one observation (or one batch of parallel sequences) at a time.

    ``shape``: the leading axes of parallel sequences (``()`` for one). State: the count
    ``t``, the plug-in mean and variance sums, the log-capital of both sides on the grid,
    and which grid points were ever rejected (the running intersection)."""

    def __init__(self, alpha: float, *, shape: tuple[int, ...] = (), points: int = GRID):
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
        self.alpha = float(alpha)
        self.m = grid(points)
        self.step = 1.0 / (points - 1)
        self.t = 0
        self._sum = np.zeros(shape)
        self._var = np.zeros(shape)  # Σ (x_i − μ̂_i)²
        self._log_plus = np.zeros((*shape, self.m.size))
        self._log_minus = np.zeros((*shape, self.m.size))
        self.rejected = np.zeros((*shape, self.m.size), dtype=bool)
        self._threshold = math.log(1.0 / self.alpha)
        self._cap_plus = C / self.m
        self._log_k = np.full((*shape, self.m.size), -np.inf)
        self._cap_minus = C / (1.0 - self.m)

    def bet(self) -> np.ndarray:
        """λ_t for the next observation, from the observations so far (predictable)."""
        t = self.t + 1
        sigma2 = (0.25 + self._var) / t  # σ̂²_{t−1} = (1/4 + Σ_{i<t} …) / t
        return np.sqrt(2.0 * math.log(2.0 / self.alpha) / (sigma2 * t * math.log(1.0 + t)))

    def update(self, x: np.ndarray | float) -> None:
        """Add one observation in [0, 1] (an array of ``shape`` for parallel sequences)."""
        x = np.asarray(x, dtype=float)
        if np.any(~np.isfinite(x)) or np.any(x < 0) or np.any(x > 1):
            raise ValueError("observations must lie in [0, 1]")
        lam = self.bet()[..., None]
        dev = x[..., None] - self.m
        self._log_plus += np.log1p(np.minimum(lam, self._cap_plus) * dev)
        self._log_minus += np.log1p(-np.minimum(lam, self._cap_minus) * dev)
        self.t += 1
        self._sum = self._sum + x
        mean = (0.5 + self._sum) / (self.t + 1)  # μ̂_t, with x_t
        self._var = self._var + (x - mean) ** 2
        self._log_k = np.maximum(math.log(THETA) + self._log_plus,
                                 math.log(1.0 - THETA) + self._log_minus)
        self.rejected |= self._log_k >= self._threshold

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The running intersection's interval for the mean, ``(low, high)`` in [0, 1]: one
        grid step beyond the outermost grid points never rejected ([0, 1] before any data).
        Should the intersection be empty (an event of probability at most alpha), the
        interval of the latest ``C_t`` alone; should that be empty too, the grid point of
        least capital, one step either side."""
        kept = ~self.rejected
        now = self._log_k < self._threshold
        kept = np.where(kept.any(axis=-1, keepdims=True), kept, now)
        if not np.all(kept.any(axis=-1)):
            least = np.argmin(self._log_k, axis=-1)
            alone = np.zeros_like(kept)
            np.put_along_axis(alone, least[..., None], True, axis=-1)
            kept = np.where(kept.any(axis=-1, keepdims=True), kept, alone)
        n = self.m.size
        first = np.argmax(kept, axis=-1)
        last = n - 1 - np.argmax(kept[..., ::-1], axis=-1)
        low = np.where(first == 0, 0.0, self.m[first] - self.step)
        high = np.where(last == n - 1, 1.0, self.m[last] + self.step)
        return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)

    def difference_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`bounds` for values that are differences mapped by :func:`to_unit`:
        ``(2·low − 1, 2·high − 1)`` in [−1, 1]."""
        low, high = self.bounds()
        return 2.0 * low - 1.0, 2.0 * high - 1.0


def decide(low: float, high: float, margin: float | None = None) -> str:
    """The decision an anytime-valid interval ``[low, high]`` for B − A (oriented so that
    positive is better) proves: ``better`` (it excludes 0 above), ``worse`` (below),
    ``equivalent`` (a ``margin`` M > 0 given and the interval inside (−M, M)), else
    ``undecided``. A direction proven is reported first: an interval such as [0.01, 0.03]
    with M = 0.05 is ``better``."""
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    if margin is not None and margin > 0 and -margin < low and high < margin:
        return "equivalent"
    return "undecided"


def decide_many(low: np.ndarray, high: np.ndarray, margin: float | None = None) -> np.ndarray:
    """:func:`decide` over arrays: an index into :data:`DECISIONS` per element."""
    out = np.full(np.shape(low), 3)
    if margin is not None and margin > 0:
        out = np.where((-margin < low) & (high < margin), 2, out)
    out = np.where(high < 0, 1, out)
    return np.where(low > 0, 0, out)


@dataclass(frozen=True)
class Stop:
    """Where a sequence of paired differences is decided (:func:`first_decision`)."""

    decision: str
    cases: int
    """Observations used: the one that decided, or all of them when undecided."""
    low: float
    high: float


def first_decision(diffs: np.ndarray, alpha: float, margin: float | None = None,
                   points: int = GRID) -> Stop:
    """Feed the differences (in [−1, 1]) in order and stop at the first decision."""
    cs = ConfidenceSequence(alpha, points=points)
    low, high = -1.0, 1.0
    for d in np.asarray(diffs, dtype=float):
        cs.update(to_unit(d))
        lo, hi = cs.difference_bounds()
        low, high = float(lo), float(hi)
        verdict = decide(low, high, margin)
        if verdict != "undecided":
            return Stop(verdict, cs.t, low, high)
    return Stop("undecided", cs.t, low, high)


def simulate_stops(diffs: np.ndarray, alpha: float, margin: float | None = None,
                   points: int = 401) -> tuple[np.ndarray, np.ndarray]:
    """Many runs at once: ``diffs`` is (runs, cases); returns each run's decision (an index
    into :data:`DECISIONS`) and the cases it used (the length when undecided)."""
    diffs = np.asarray(diffs, dtype=float)
    runs, n = diffs.shape
    cs = ConfidenceSequence(alpha, shape=(runs,), points=points)
    decision = np.full(runs, 3)
    used = np.full(runs, n)
    open_ = np.ones(runs, dtype=bool)
    for t in range(n):
        cs.update(to_unit(diffs[:, t]))
        low, high = cs.difference_bounds()
        now = decide_many(low, high, margin)
        hit = open_ & (now != 3)
        decision[hit] = now[hit]
        used[hit] = t + 1
        open_ &= ~hit
        if not open_.any():
            break
    return decision, used
