"""The sparse structure every metric reads: relevant retrieved documents and their ranks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from queryeval.metrics.ranking._arrays import RankingArrays
from queryeval.metrics.ranking._ranks import hit_ranks


@dataclass
class Hits:
    """Per-query facts plus one row per relevant retrieved document, sorted by (query, rank).

    Attributes:
        n_queries: number of evaluated queries.
        num_rel: int64 ``[n_queries]``, judgements with relevance > 0 (trec_eval ``num_rel``).
        num_ret: int64 ``[n_queries]``, documents retrieved (trec_eval ``num_ret``).
        q, rank, gain: per hit: query index, 0-based rank, relevance level.
        nth: per hit: 0-based position among its query's hits (the hit count above it).
        ideal_q, ideal_pos, ideal_gain: every positive judgement in ideal order (gain
            descending within a query) with its 0-based ideal position; for nDCG's IDCG.
    """

    n_queries: int
    num_rel: np.ndarray
    num_ret: np.ndarray
    q: np.ndarray
    rank: np.ndarray
    gain: np.ndarray
    nth: np.ndarray
    ideal_q: np.ndarray
    ideal_pos: np.ndarray
    ideal_gain: np.ndarray

    def within(self, k: int | None) -> np.ndarray:
        """Mask of hits ranked in the top ``k`` (all hits when ``k`` is None)."""
        if k is None:
            return np.ones(self.rank.size, dtype=bool)
        return self.rank < k

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per-query number of hits under ``mask``."""
        return np.bincount(self.q[mask], minlength=self.n_queries)

    def per_query_sum(self, mask: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Per-query sum of ``weights`` over hits under ``mask``."""
        return np.bincount(self.q[mask], weights=weights[mask], minlength=self.n_queries)


def _position_in_group(group: np.ndarray, n_groups: int) -> np.ndarray:
    """0-based position of each row within its run of equal ``group`` values (pre-sorted)."""
    counts = np.bincount(group, minlength=n_groups)
    first = np.cumsum(counts) - counts
    return np.arange(group.size, dtype=np.int64) - first[group]


def build_hits(arrays: RankingArrays, strategy: str = "auto") -> Hits:
    nq = arrays.n_queries
    q, rank, gain = hit_ranks(arrays, strategy)
    iorder = np.lexsort((-arrays.judged_gain, arrays.judged_q))
    ideal_q = arrays.judged_q[iorder]
    return Hits(
        n_queries=nq,
        num_rel=np.bincount(arrays.judged_q, minlength=nq),
        num_ret=arrays.seg_len.copy(),
        q=q,
        rank=rank,
        gain=gain,
        nth=_position_in_group(q, nq),
        ideal_q=ideal_q,
        ideal_pos=_position_in_group(ideal_q, nq),
        ideal_gain=arrays.judged_gain[iorder],
    )
