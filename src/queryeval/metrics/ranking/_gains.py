"""trec_eval's gain tables (``gain_init.c``) for ``ndcg``, ``Rndcg``, ``rbp``, ``ndcg_rel``, ``G``.

By default a judged document's gain is its relevance level (0 for level 0; unjudged, pooled-
unjudged and negative judgements: 0). A mapping ``L=G,...`` (``ndcg.1=3,2=9``) gives level L the
gain G; levels not named keep gain = level; level 0 may get a gain; gains may be negative.
The gains never depend on the relevance level ``-l``.

The *ideal* ranking takes every judgement (relevance >= 0, retrieved or not) by gain,
descending, while the gain is > 0. (trec_eval sorts the gains with a comparison that truncates
their difference to an integer, so it can misorder two gains less than 1 apart; we sort
exactly.)
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits, position_in_group

Gains = tuple[tuple[int, float], ...] | None


def gain_of(levels: np.ndarray, gains: Gains) -> np.ndarray:
    """The gain of each relevance level (levels < 0: 0)."""
    out = np.where(levels > 0, levels, 0).astype(np.float64)
    for level, gain in gains or ():
        out[levels == level] = gain
    return out


def ranked(hits: Hits, gains: Gains) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, 0-based rank, gain) of every retrieved document whose gain is not 0, sorted by
    (query, rank)."""
    if gains is None:
        return hits.gq, hits.grank, hits.ggain.astype(np.float64)
    if hits.jq is None:
        raise ValueError("internal: judged ranks were not built for a measure with gains")
    g = gain_of(hits.jrel, gains)
    keep = g != 0
    return hits.jq[keep], hits.jrank[keep], g[keep]


def ideal(hits: Hits, gains: Gains) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, 0-based ideal position, gain) of every judgement with a positive gain, by query
    then gain descending."""
    if gains is None:
        iq, ipos, ig = hits.ideal_rows()
        return iq, ipos, ig.astype(np.float64)
    rel, q = hits.judged_rel, hits.judged_q
    rows = np.flatnonzero(rel >= 0)
    g = gain_of(rel[rows], gains)
    keep = g > 0
    rows, g = rows[keep], g[keep]
    order = np.lexsort((-g, q[rows]))
    iq, g = q[rows][order], g[order]
    return iq, position_in_group(iq, hits.n_queries), g


def segmented_cumsum(q: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Running sum of ``values`` within each run of equal ``q`` (rows sorted by q), added in
    row order as trec_eval's loops do (no whole-array prefix sum and its cancellation): one
    vectorised step per position within a group."""
    out = values.astype(np.float64).copy()
    if out.size == 0:
        return out
    nth = position_in_group(q, n_groups)
    order = np.argsort(nth, kind="stable")
    bounds = np.cumsum(np.bincount(nth))
    for n in range(1, bounds.size):
        idx = order[bounds[n - 1] : bounds[n]]
        out[idx] += out[idx - 1]
    return out


def table_range(hits: Hits, gains: Gains) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the least and greatest gain of trec_eval's gain table (levels 0 .. the
    query's top judged level, plus every level named in ``gains``), each taken together with 0
    (``m_rbp.c`` leaves its min and max uninitialised; the trec_eval 10.0 build compared in
    tests/metrics/test_trec_measures_more.py behaves as if both start at 0, which is also what the
    default gains give, where level 0 has gain 0)."""
    top = hits.max_rel  # -1: no judgement >= 0, an empty default table
    named = dict(gains or ())
    lo = np.full(hits.n_queries, min(0.0, *named.values()))
    if not named:
        return lo, np.maximum(top, 0).astype(np.float64)
    # the top default gain: the highest level in 1 .. top that is not named
    hi = np.zeros(hits.n_queries)
    for q_top in np.unique(top[top > 0]):
        free = next((lv for lv in range(int(q_top), 0, -1) if lv not in named), 0)
        hi[top == q_top] = free
    return lo, np.maximum(hi, max(0.0, *named.values()))
