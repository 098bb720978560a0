"""map@k: average precision over the top k (trec_eval ``map_cut.k``; ``map`` without cutoff).

AP@k = (sum over relevant documents at rank r <= k of precision@r) / num_rel, where num_rel
counts *all* relevant judgements of the query, not min(k, num_rel) (trec_eval's convention;
some libraries divide by min(k, num_rel)). Zero division: num_rel = 0 scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def compute(hits: Hits, k: int | None) -> np.ndarray:
    precision_at_hit = (hits.nth + 1.0) / (hits.rank + 1.0)
    total = hits.per_query_sum(hits.within(k), precision_at_hit)
    out = np.zeros(hits.n_queries)
    np.divide(total, hits.num_rel, out=out, where=hits.num_rel > 0)
    return out


#: trec_eval's floor for the geometric mean (``MIN_GEO_MEAN``).
MIN_GEO_MEAN = 0.00001


def gm_map(hits: Hits, spec) -> np.ndarray:
    """Per query log(max(AP, 0.00001)); the summary is exp of their mean (trec_eval
    ``gm_map``)."""
    return np.log(np.maximum(compute(hits, None), MIN_GEO_MEAN))
