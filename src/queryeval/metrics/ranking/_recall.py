"""recall@k = relevant documents in the top k / relevant documents judged (trec_eval ``recall.k``).

Zero division: a query with no relevant judgement scores 0 (as trec_eval). Without a cutoff,
every retrieved document counts (``num_rel_ret / num_rel``).
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def compute(hits: Hits, k: int | None) -> np.ndarray:
    found = hits.count(hits.within(k)).astype(np.float64)
    out = np.zeros(hits.n_queries)
    np.divide(found, hits.num_rel, out=out, where=hits.num_rel > 0)
    return out
