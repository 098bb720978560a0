"""Recall: relevant items found within a cutoff / relevant items, the package's one recall
over a ranking.

* :func:`compute` (trec_eval ``recall.k``): per query of the engine's sparse structure,
  relevant documents in the top k / relevant documents judged; without a cutoff every
  retrieved document counts (``num_rel_ret / num_rel``). Zero division: a query with no
  relevant judgement scores **0** (as trec_eval).
* :func:`recall_from_ranks`: one query from the 1-based ranks of its distinct relevant items
  (:data:`NOT_FOUND` for one absent from the ranking), as the fields task and the tuner read
  it. Zero division: no relevant item scores ``zero_division`` (**1.0** by default: nothing
  to find, seed 004's rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from queryeval.metrics.protocol import ratio

if TYPE_CHECKING:
    from queryeval.metrics.ranking._hits import Hits

#: Rank given to a relevant item that does not occur in the ranking (larger than any cutoff).
NOT_FOUND: int = int(np.iinfo(np.int64).max)


def recall_from_ranks(ranks: np.ndarray, n: int, *, zero_division: float = 1.0) -> float:
    """recall@n from the 1-based ranks of a query's distinct relevant items: the share ranked
    within the first ``n``; ``zero_division`` when there is no relevant item."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if len(ranks) == 0:
        return zero_division
    return ratio(int(np.count_nonzero(ranks <= n)), len(ranks), zero_division=zero_division)


def compute(hits: Hits, k: int | None) -> np.ndarray:
    found = hits.count(hits.within(k)).astype(np.float64)
    out = np.zeros(hits.n_queries)
    np.divide(found, hits.num_rel, out=out, where=hits.num_rel > 0)
    return out
