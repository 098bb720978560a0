"""hit_rate@k = 1 if any relevant document is in the top k, else 0 (trec_eval ``success.k``)."""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def compute(hits: Hits, k: int | None) -> np.ndarray:
    if k is None:
        raise ValueError("hit_rate needs a cutoff")
    return (hits.count(hits.within(k)) > 0).astype(np.float64)
