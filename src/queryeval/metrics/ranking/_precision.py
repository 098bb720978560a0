"""precision@k = relevant documents in the top k / k (trec_eval ``P.k``).

The denominator is always k, even when the query retrieved fewer than k documents (trec_eval's
convention). k >= 1 is enforced by the name grammar, so there is no zero division.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def compute(hits: Hits, k: int | None) -> np.ndarray:
    if k is None:
        raise ValueError("precision needs a cutoff")
    return hits.count(hits.within(k)) / float(k)
