"""trec_eval's experimental gain measures ``G`` and ``binG`` (``m_G.c``, ``m_binG.c``).

* ``G`` (gains as ``_gains``; ``G.L=G,...``): each retrieved document at 0-based rank i with a
  non-zero gain g adds g / log2(2 + C_i - S_i), where S_i is the sum of the gains retrieved
  at ranks <= i and C_i the sum over positions j <= i of max(ideal gain at j, 1) (1 past the
  ideal ranking's end). The total is divided by the sum of the positive ideal gains; 0 when
  there is none.
* ``binG``: each relevant (relevance >= L) retrieved document adds 1 / log2(2 + the number of
  non-relevant documents, judged or not, ranked above it); the total is divided by num_rel.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._gains import ideal, ranked, segmented_cumsum
from queryeval.metrics.ranking._hits import Hits

#: trec_eval's ``min_cost``: a position of the ideal ranking costs at least 1.
_MIN_COST = 1.0


def g_measure(hits: Hits, spec) -> np.ndarray:
    nq = hits.n_queries
    q, rank, g = ranked(hits, spec.gains)
    sums = segmented_cumsum(q, g, nq)  # S_i
    iq, _, ig = ideal(hits, spec.gains)
    costs = segmented_cumsum(iq, np.maximum(ig, _MIN_COST), nq)  # C over the ideal positions
    n_pos = np.bincount(iq, minlength=nq)
    ifirst = np.cumsum(n_pos) - n_pos
    ideal_total = np.bincount(iq, weights=ig, minlength=nq)
    ok = n_pos[q] > 0  # without a positive ideal gain the query scores 0 anyway
    q, rank, g, sums = q[ok], rank[ok], g[ok], sums[ok]
    last = n_pos[q] - 1
    inside = np.minimum(rank, last)
    cost = costs[ifirst[q] + inside] + (rank - inside) * _MIN_COST
    total = np.bincount(q, weights=g / np.log2(2.0 + cost - sums), minlength=nq)
    out = np.zeros(nq)
    np.divide(total, ideal_total, out=out, where=ideal_total > 0)
    return out


def bin_g(hits: Hits, spec) -> np.ndarray:
    nonrel_above = hits.rank - hits.nth  # documents above a hit that are not relevant
    total = hits.per_query_sum(hits.within(None), 1.0 / np.log2(2.0 + nonrel_above))
    out = np.zeros(hits.n_queries)
    np.divide(total, hits.num_rel, out=out, where=hits.num_rel > 0)
    return out
