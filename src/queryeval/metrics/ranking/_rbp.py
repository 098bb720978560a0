"""Rank-biased precision (trec_eval 10.0 ``rbp``) and expected reciprocal rank (``err``).

* ``rbp`` (persistence p, default 0.9; ``rbp.p=0.8``): (1 - p) * sum over retrieved documents
  at 0-based rank i of g * p^i, with g the relevance level as gain (trec_eval's default
  gains; levels below L still count, as in trec_eval, whose gains ignore ``-l``), divided by the
  query's highest judged level when that is above 1 (trec_eval normalises gains to [0, 1]).
  Binary judgements: the textbook RBP of Moffat and Zobel (2008). With gains
  (``rbp.p=0.8,1=3,2=9``; see ``_gains``): when the query's gain table (levels 0 .. its top
  judged level, plus the named ones) has a gain below 0 or above 1, every judged document's
  gain g becomes (g - lo) / (hi - lo), lo and hi the table's least and greatest gain taken
  together with 0 (so a judged level 0 can gain > 0); unjudged documents keep 0.
* ``err_qmax@k`` (formerly ``err@k``; not in trec_eval; Chapelle et al., 2009): sum over
  ranks r = 1..k of (1/r) * R_r * prod_{i<r} (1 - R_i), with R = (2^g - 1) / 2^gmax, g the
  relevance level (0 for non-positive and unjudged documents) and gmax the query's highest
  judged level. Without k: every rank. A query with no positive judgement scores 0.
* ir_measures' ``ERR@k`` (gdeval): the same sum with gmax = 4, gdeval's maximum grade, for
  every query (grades above 4 are refused, as gdeval refuses them).
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._gains import gain_of, table_range
from queryeval.metrics.ranking._hits import Hits, position_in_group


def rbp(hits: Hits, spec) -> np.ndarray:
    p = 0.9 if spec.param is None else float(spec.param)
    if spec.gains is not None:
        return _rbp_with_gains(hits, p, spec.gains)
    top = np.maximum(hits.max_rel, 1).astype(np.float64)
    g = hits.ggain / top[hits.gq]
    total = np.bincount(hits.gq, weights=g * np.power(p, hits.grank), minlength=hits.n_queries)
    return (1.0 - p) * total


def _rbp_with_gains(hits: Hits, p: float, gains) -> np.ndarray:
    if hits.jq is None:
        raise ValueError("internal: judged ranks were not built for rbp with gains")
    judged = hits.jrel >= 0
    q, rank = hits.jq[judged], hits.jrank[judged]
    g = gain_of(hits.jrel[judged], gains)
    lo, hi = table_range(hits, gains)
    scale = (lo < 0) | (hi > 1)
    s = scale[q]
    g[s] = (g[s] - lo[q][s]) / (hi[q][s] - lo[q][s])
    total = np.bincount(q, weights=g * np.power(p, rank), minlength=hits.n_queries)
    return (1.0 - p) * total


GDEVAL_MAX_GRADE = 4
"""gdeval.pl's ``$MAX_JUDGMENT``: the grade its ERR divides by (2^4), and the largest it reads."""


def gdeval_err(hits: Hits, spec) -> np.ndarray:
    if hits.ggain.size and hits.ggain.max() > GDEVAL_MAX_GRADE:
        raise ValueError(f"{spec.name}: ir_measures' ERR (gdeval) reads grades up to "
                         f"{GDEVAL_MAX_GRADE}; a retrieved document is judged "
                         f"{int(hits.ggain.max())} (queryeval's err_qmax@k takes any grade)")
    return err(hits, spec, GDEVAL_MAX_GRADE)


def err(hits: Hits, spec, top: int | None = None) -> np.ndarray:
    k = spec.k
    mask = hits.grank < k if k is not None else np.ones(hits.grank.size, dtype=bool)
    q, rank, g = hits.gq[mask], hits.grank[mask], hits.ggain[mask]
    if top is None:
        gmax = np.maximum(hits.max_rel, 0).astype(np.float64)[q]
    else:
        gmax = np.full(q.size, float(top))
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
