"""Interpolated precision at a recall level (trec_eval 10.0 ``iprec_at_recall``) and its mean
over the 11 levels 0.0, 0.1, ..., 1.0 (``11pt_avg``).

For level x, let c = lround(x * num_rel) (round half away from zero: trec_eval 10.0; 9.x cast
``x * num_rel + 0.9`` instead). Then, with p_n = n / rank_n the precision at the n-th relevant
retrieved document (1-based):

* c > num_rel_ret: 0;
* 1 <= c <= num_rel_ret: max over n >= c of p_n;
* c = 0: max over all n of p_n, or num_rel_ret / num_ret = 0 when nothing relevant was
  retrieved (0 also when nothing at all was retrieved; trec_eval divides 0 by 0 there).
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def _lround(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5).astype(np.int64)  # x >= 0: half away from zero


def _suffix_max(q: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row (sorted by query): max of ``values`` over this and later rows of its query."""
    if values.size == 0:
        return values
    order_vals, inverse = np.unique(values, return_inverse=True)
    key = inverse.astype(np.int64) - q.astype(np.int64) * (order_vals.size + 1)
    rev = np.maximum.accumulate(key[::-1])[::-1]
    return order_vals[rev + q.astype(np.int64) * (order_vals.size + 1)]


def compute(hits: Hits, spec, v9: bool = False) -> np.ndarray:
    level = float(spec.param)
    nq = hits.n_queries
    prec = (hits.nth + 1.0) / (hits.rank + 1.0)
    best = _suffix_max(hits.q, prec)
    nrr = hits.num_rel_ret
    first = np.cumsum(nrr) - nrr
    scaled = level * hits.num_rel.astype(np.float64)
    # trec_eval 9.x (pytrec_eval, so ir_measures' IPrec): (long)(x * num_rel + 0.9)
    cut = np.floor(scaled + 0.9).astype(np.int64) if v9 else _lround(scaled)
    out = np.zeros(nq)
    n = np.maximum(cut, 1)
    ok = (cut <= nrr) & (nrr > 0)
    out[ok] = best[first[ok] + n[ok] - 1]
    return out


def compute_v9(hits: Hits, spec) -> np.ndarray:
    """ir_measures' ``IPrec@x``: pytrec_eval's trec_eval 9.x rounding of the level."""
    return compute(hits, spec, v9=True)


#: trec_eval's default levels (``double_cutoff_array`` in m_11pt_avg.c).
ELEVEN_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def eleven_point(hits: Hits, spec) -> np.ndarray:
    """trec_eval ``11pt_avg``: the mean of ``iprec_at_recall`` at the 11 levels, or at the
    levels given (``11pt_avg.0.2,0.5,0.8``, increasing)."""
    levels = spec.coeffs or ELEVEN_LEVELS
    total = np.zeros(hits.n_queries)
    for level in levels:
        total += compute(hits, _Level(level))
    return total / len(levels)


class _Level:
    def __init__(self, param: float) -> None:
        self.param = param
