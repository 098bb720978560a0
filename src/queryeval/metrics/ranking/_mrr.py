"""mrr@k: per query, 1 / rank of the first relevant document if it is in the top k, else 0.

Without a cutoff this is trec_eval's ``recip_rank``; with one it is ``recip_rank`` computed
on the run truncated to its top k (trec_eval order). A query with no relevant document
retrieved (or none judged) scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def compute(hits: Hits, k: int | None) -> np.ndarray:
    first = (hits.nth == 0) & hits.within(k)
    out = np.zeros(hits.n_queries)
    out[hits.q[first]] = 1.0 / (hits.rank[first] + 1.0)
    return out
