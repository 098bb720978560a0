"""Rank-biased precision (trec_eval 10.0 ``rbp``) and expected reciprocal rank (``err``).

* ``rbp`` (persistence p, default 0.9; ``rbp.p=0.8``): (1 - p) * sum over retrieved documents
  at 0-based rank i of g * p^i, with g the relevance level as gain (trec_eval's default
  gains; levels below L still count, as in trec_eval, whose gains ignore ``-l``), divided by the
  query's highest judged level when that is above 1 (trec_eval normalises gains to [0, 1]).
  Binary judgements: the textbook RBP of Moffat and Zobel (2008).
* ``err@k`` (not in trec_eval; Chapelle et al., 2009): sum over ranks r = 1..k of
  (1/r) * R_r * prod_{i<r} (1 - R_i), with R = (2^g - 1) / 2^gmax, g the relevance level
  (0 for non-positive and unjudged documents) and gmax the query's highest judged level.
  Without k: every rank. A query with no positive judgement scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits, position_in_group


def rbp(hits: Hits, spec) -> np.ndarray:
    p = 0.9 if spec.param is None else float(spec.param)
    top = np.maximum(hits.max_rel, 1).astype(np.float64)
    g = hits.ggain / top[hits.gq]
    total = np.bincount(hits.gq, weights=g * np.power(p, hits.grank), minlength=hits.n_queries)
    return (1.0 - p) * total


def err(hits: Hits, spec) -> np.ndarray:
    k = spec.k
    mask = hits.grank < k if k is not None else np.ones(hits.grank.size, dtype=bool)
    q, rank, g = hits.gq[mask], hits.grank[mask], hits.ggain[mask]
    gmax = np.maximum(hits.max_rel, 0).astype(np.float64)[q]
    r = np.exp2(g - gmax) - np.exp2(-gmax)  # (2^g - 1) / 2^gmax without overflow (g <= gmax)
    # stay[i] = prod of (1 - r) over the earlier hits of the same query, exactly (no logs: r
    # may be 1.0): one vectorised step per position within a query.
    nth = position_in_group(q, hits.n_queries)
    stay = np.ones(r.size)
    if r.size:
        order = np.argsort(nth, kind="stable")
        bounds = np.cumsum(np.bincount(nth))
        for n in range(1, bounds.size):
            idx = order[bounds[n - 1] : bounds[n]]
            stay[idx] = stay[idx - 1] * (1.0 - r[idx - 1])
    return np.bincount(q, weights=r * stay / (rank + 1.0), minlength=hits.n_queries)
