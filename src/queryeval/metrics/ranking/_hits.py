"""The sparse structure every metric reads: judged retrieved documents and their ranks.

trec_eval's vocabulary (``form_res_rels.c``), with relevance level ``L`` (``-l``, default 1):
a judgement with relevance >= 0 is *judged*; one with relevance < 0 is *in the pool but
unjudged*; a retrieved document without any judgement is *not in the pool*. A judged document
is *relevant* when its relevance >= ``L``, else *non-relevant*. ``num_rel`` counts the relevant
judgements of a query (retrieved or not). Judged-only evaluation (``-J``) drops every document
that is not judged (relevance >= 0) from the ranking before any measure is computed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from queryeval.metrics.ranking._arrays import RankingArrays
from queryeval.metrics.ranking._ranks import hit_ranks


@dataclass
class Hits:
    """Per-query facts plus per-document rows sorted by (query, rank).

    Attributes:
        n_queries: number of evaluated queries.
        level: the relevance level ``L``.
        num_rel: int64 ``[n_queries]``, judgements with relevance >= L (trec_eval ``num_rel``).
        num_ret: int64 ``[n_queries]``, documents retrieved (trec_eval ``num_ret``; judged
            documents only under ``judged_only``).
        num_nonrel: int64 ``[n_queries]``, judgements with 0 <= relevance < L (computed on
            first use, as is ``max_rel``).
        max_rel: int64 ``[n_queries]``, the highest relevance >= 0 judged (-1: none).
        q, rank, gain: per *relevant* retrieved document: query index, 0-based rank, level.
        nth: per relevant hit: 0-based position among its query's relevant hits.
        gq, grank, ggain: per retrieved document with relevance > 0 (the nDCG gain), whatever
            L is (trec_eval's gains do not depend on ``-l``).
        jq, jrank, jrel: every retrieved document that has a judgement (any level), or None
            when no requested measure needs them (bpref, infAP, unj, judged-only).
        judged_q, judged_rel: every judgement's query index and relevance (the engine's
            ``RankingArrays.judged_q``/``judged_gain``).
        level_counts: int64 ``[n_queries, top + 2]`` or None: column ``j <= top`` counts the
            query's judgements with relevance ``top - j``, the last column those below 0
            (``top``: the greatest relevance). When given, ``num_nonrel``, ``max_rel`` and
            the ideal order are read from it instead of from the judgement rows.
        ideal_q, ideal_pos, ideal_gain: every positive judgement in ideal order (gain
            descending within a query) with its 0-based ideal position, for nDCG's IDCG; or
            None with ``level_counts`` given (see :meth:`ideal_rows`).
    """

    n_queries: int
    level: int
    num_rel: np.ndarray
    num_ret: np.ndarray
    q: np.ndarray
    rank: np.ndarray
    gain: np.ndarray
    nth: np.ndarray
    gq: np.ndarray
    grank: np.ndarray
    ggain: np.ndarray
    jq: np.ndarray | None
    jrank: np.ndarray | None
    jrel: np.ndarray | None
    judged_q: np.ndarray = field(repr=False)
    judged_rel: np.ndarray = field(repr=False)
    ideal_q: np.ndarray | None = None
    ideal_pos: np.ndarray | None = None
    ideal_gain: np.ndarray | None = None
    level_counts: np.ndarray | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def num_nonrel(self) -> np.ndarray:
        if "num_nonrel" not in self._cache:
            counts = self.level_counts
            if counts is not None:  # levels min(L - 1, top) .. 0
                top = counts.shape[1] - 2
                out = counts[:, max(top - self.level + 1, 0) : top + 1].sum(axis=1)
            else:
                rel = self.judged_rel
                mask = (rel >= 0) & (rel < self.level)
                out = np.bincount(self.judged_q[mask], minlength=self.n_queries)
            self._cache["num_nonrel"] = out
        return self._cache["num_nonrel"]

    @property
    def max_rel(self) -> np.ndarray:
        if "max_rel" not in self._cache:
            counts = self.level_counts
            if counts is not None:  # the first non-empty column among levels top .. 0
                top = counts.shape[1] - 2
                present = counts[:, : top + 1] > 0
                out = np.where(present.any(axis=1), top - np.argmax(present, axis=1), -1)
                out = out.astype(np.int64)
            else:
                out = np.full(self.n_queries, -1, dtype=np.int64)
                rel = self.judged_rel
                mask = rel >= 0
                np.maximum.at(out, self.judged_q[mask], rel[mask].astype(np.int64))
            self._cache["max_rel"] = out
        return self._cache["max_rel"]

    def ideal_rows(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, 0-based ideal position, gain) of the positive judgements in ideal order
        (query, then gain descending), only those at positions < ``k`` (all: None). The same
        rows in the same order as filtering the full ideal order by position, so sums over
        them are bit-identical."""
        if self.level_counts is None:
            if self.ideal_q is None or self.ideal_pos is None or self.ideal_gain is None:
                raise ValueError("internal: Hits without an ideal order or level counts")
            if k is None:
                return self.ideal_q, self.ideal_pos, self.ideal_gain
            keep = self.ideal_pos < k
            return self.ideal_q[keep], self.ideal_pos[keep], self.ideal_gain[keep]
        key = ("ideal", k)
        if key not in self._cache:
            self._cache[key] = _ideal_from_counts(self.level_counts, k)
        return self._cache[key]

    def within(self, k: int | None) -> np.ndarray:
        """Mask of relevant hits ranked in the top ``k`` (all hits when ``k`` is None)."""
        if k is None:
            return np.ones(self.rank.size, dtype=bool)
        return self.rank < k

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per-query number of relevant hits under ``mask``."""
        return np.bincount(self.q[mask], minlength=self.n_queries)

    def per_query_sum(self, mask: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Per-query sum of ``weights`` over relevant hits under ``mask``."""
        return np.bincount(self.q[mask], weights=weights[mask], minlength=self.n_queries)

    @property
    def num_rel_ret(self) -> np.ndarray:
        return np.bincount(self.q, minlength=self.n_queries)


def position_in_group(group: np.ndarray, n_groups: int) -> np.ndarray:
    """0-based position of each row within its run of equal ``group`` values (pre-sorted)."""
    counts = np.bincount(group, minlength=n_groups)
    first = np.cumsum(counts) - counts
    return np.arange(group.size, dtype=np.int64) - first[group]


def _ideal(q: np.ndarray, gain: np.ndarray, nq: int) -> tuple[np.ndarray, np.ndarray]:
    """(query, gain) of the positive-gain judgements ordered by (query, gain descending): one
    int64 sort of a combined key ``query << bits | (max gain - gain)``, decoded back, when the
    (integer) gains span little enough (which row holds an equal key does not matter: only the
    values are kept), else ``np.lexsort``."""
    if gain.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    hi, lo = float(gain.max()), float(gain.min())
    span = hi - lo + 1
    shift = max(int(span) - 1, 0).bit_length()  # levels hi - gain fit in ``shift`` bits
    if max(nq, 1) < 2 ** (62 - shift):
        key = np.left_shift(np.asarray(q, dtype=np.int64), shift)
        key |= (hi - gain).astype(np.int64)
        key.sort()
        return key >> shift, hi - (key & ((1 << shift) - 1)).astype(np.float64)
    order = np.lexsort((-gain, q))
    return q[order], gain[order]


#: Judgements are counted per (query, relevance level) when the greatest level is at most this
#: and the count table has at most ``_COUNTS_FACTOR`` cells per judgement (plus a little).
_MAX_COUNTED_LEVEL = 64
_COUNTS_FACTOR = 4


def level_counts(q: np.ndarray, rel: np.ndarray, nq: int) -> np.ndarray | None:
    """Judgements per (query, level): ``out[i, j]`` (``j <= top``) counts query ``i``'s
    judgements with relevance ``top - j``, ``out[i, top + 1]`` those below 0; ``top`` is the
    greatest relevance. One ``bincount`` of ``q * (top + 2) + column``. None (the caller
    works on the rows instead) when there is no judgement, ``top`` is negative or above
    ``_MAX_COUNTED_LEVEL``, or the table would be large next to the rows."""
    if rel.size == 0:
        return None
    top = float(rel.max())
    if not 0 <= top <= _MAX_COUNTED_LEVEL:
        return None
    width = int(top) + 2
    if nq * width > _COUNTS_FACTOR * rel.size + 4096:
        return None
    native = _native_count_levels(q, rel, nq, int(top))
    if native is not None:
        return native.reshape(nq, width)
    col = np.maximum(rel, -1.0)  # relevance levels are integers; every negative one -> -1
    np.subtract(top, col, out=col)  # the column: top - level, top + 1 for negatives
    key = np.multiply(q, width, dtype=np.int64)
    np.add(key, col, out=key, casting="unsafe")  # exact: integers far below 2**53
    return np.bincount(key, minlength=nq * width).reshape(nq, width)


def _native_count_levels(q: np.ndarray, rel: np.ndarray, nq: int, top: int) -> np.ndarray | None:
    """The same table from ``queryeval._dictflat.count_levels`` (one pass, no temporaries), or
    None: not built, or ``QUERYEVAL_NO_EXT=1``."""
    if os.environ.get("QUERYEVAL_NO_EXT", "") not in ("", "0"):
        return None
    try:
        from queryeval import _dictflat
    except ImportError:
        return None
    out = _dictflat.count_levels(np.ascontiguousarray(q, dtype=np.int64),
                                 np.ascontiguousarray(rel, dtype=np.float64), nq, top)
    return np.frombuffer(out, dtype=np.int64)


def _ideal_from_counts(
    counts: np.ndarray, k: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`Hits.ideal_rows` from level counts: each query's positive levels, highest first,
    each repeated as often as it was judged (capped so that positions stay below ``k``)."""
    nq, width = counts.shape
    top = width - 2
    per_level = counts[:, :top]  # levels top .. 1
    if k is not None:
        before = np.cumsum(per_level, axis=1) - per_level  # first position of each block
        per_level = np.clip(k - before, 0, per_level)
    n_pos = per_level.sum(axis=1)
    levels = np.arange(top, 0, -1, dtype=np.float64)
    gain = np.repeat(np.tile(levels, nq), per_level.ravel())
    q = np.repeat(np.arange(nq, dtype=np.int64), n_pos)
    pos = np.arange(q.size, dtype=np.int64) - np.repeat(np.cumsum(n_pos) - n_pos, n_pos)
    return q, pos, gain


def build_hits(
    arrays: RankingArrays,
    strategy: str = "auto",
    *,
    level: int = 1,
    judged_only: bool = False,
    need_judged: bool = False,
    max_docs: int | None = None,
    ascending_ties: bool = False,
) -> Hits:
    """Rank what the measures need: relevant and positive-gain documents; every judged
    document only when ``need_judged`` or ``judged_only`` asks for them. ``max_docs`` keeps
    only each query's top documents (trec_eval ``-M``), before ``judged_only`` applies."""
    if level < 0:
        raise ValueError(f"the relevance level must be >= 0, got {level}")
    nq = arrays.n_queries
    rel_all = arrays.judged_gain
    need_all = need_judged or judged_only
    select = None if need_all else rel_all >= min(level, 1)
    q, rank, rel = hit_ranks(arrays, strategy, select, ascending_ties=ascending_ties)
    num_ret = arrays.seg_len.copy()
    if max_docs is not None:  # trec_eval -M: the top max_docs of each ranking, before -J
        if max_docs < 1:
            raise ValueError(f"max_docs must be >= 1, got {max_docs}")
        kept = rank < max_docs
        q, rank, rel = q[kept], rank[kept], rel[kept]
        num_ret = np.minimum(num_ret, max_docs)
    if judged_only:
        judged = rel >= 0
        q, rel = q[judged], rel[judged]
        rank = position_in_group(q, nq)  # rank among the judged documents only
        num_ret = np.bincount(q, minlength=nq)
    relevant = rel >= level
    positive = rel > 0
    rq = arrays.judged_q
    counts = level_counts(rq, rel_all, nq)
    if counts is None:
        pos_rows = np.flatnonzero(rel_all > 0)
        ideal_q, ideal_gain = _ideal(rq[pos_rows], rel_all[pos_rows], nq)
        ideal_pos = position_in_group(ideal_q, nq)
        num_rel = np.bincount(rq[rel_all >= level], minlength=nq)
    else:  # levels top .. L
        ideal_q = ideal_pos = ideal_gain = None
        num_rel = counts[:, : max(counts.shape[1] - 1 - level, 0)].sum(axis=1)
    hq = q[relevant]
    return Hits(
        n_queries=nq,
        level=level,
        num_rel=num_rel,
        num_ret=num_ret,
        q=hq,
        rank=rank[relevant],
        gain=rel[relevant],
        nth=position_in_group(hq, nq),
        gq=q[positive],
        grank=rank[positive],
        ggain=rel[positive],
        jq=q if need_all else None,
        jrank=rank if need_all else None,
        jrel=rel if need_all else None,
        judged_q=rq,
        judged_rel=rel_all,
        ideal_q=ideal_q,
        ideal_pos=ideal_pos,
        ideal_gain=ideal_gain,
        level_counts=counts,
    )
