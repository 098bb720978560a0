"""Ranks of the relevant retrieved documents, in trec_eval's order, without sorting the run.

trec_eval orders a query's documents by score descending, then docid descending (``strcmp``
on the UTF-8 bytes, which is Python's ``str`` order). Every metric here depends on the run
only through the ranks of its *relevant* documents, so instead of sorting all N scores we
count, for each relevant retrieved document h of query q,

    rank(h) = #{e in q : score_e > score_h} + #{e in q : score_e == score_h, docid_e > docid_h}

Two interchangeable strategies compute the first term:

* ``count``: gather each hit's query segment and compare (work = sum of segment lengths over
  hits; cheap when relevant documents are sparse, the usual case);
* ``sort``: one int64 sort of (query, dense score rank) keys and two binary searches per hit
  (work ~ N log N; used when hits are dense, e.g. hundreds of relevant documents per query).

The docid term is computed only for hits that share their score with another document
(``_ties.ties_above``: integer and Arrow string operations, no Python object is sorted).
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._arrays import RankingArrays
from queryeval.metrics.ranking._ties import segments_index, ties_above

#: Gathered elements per chunk of the counting strategy (bounds memory to ~100 MB).
_CHUNK = 1 << 22
#: Counting is chosen while its work is at most this many times the run size.
_COUNT_FACTOR = 8


def _chunks(lens: np.ndarray):
    """Split hit indices into runs whose segment lengths sum to about ``_CHUNK``."""
    csum = np.cumsum(lens)
    a = 0
    n = lens.size
    while a < n:
        base = csum[a - 1] if a else 0
        b = int(np.searchsorted(csum, base + _CHUNK, side="right"))
        b = max(b, a + 1)
        yield a, min(b, n)
        a = b


def _count_uniform(scores, rows, width, hit_scores) -> tuple[np.ndarray, np.ndarray]:
    """Counting when every hit's segment is a row of ``scores`` viewed as (-1, width)."""
    table = scores.reshape(-1, width)
    gt = np.empty(hit_scores.size, dtype=np.int64)
    eq = np.empty(hit_scores.size, dtype=np.int64)
    step = max(_CHUNK // width, 1)
    for a in range(0, hit_scores.size, step):
        block = table[rows[a : a + step]]
        thr = hit_scores[a : a + step, None]
        gt[a : a + step] = np.count_nonzero(block > thr, axis=1)
        eq[a : a + step] = np.count_nonzero(block == thr, axis=1)
    return gt, eq


def _count(scores, starts, lens, hit_scores) -> tuple[np.ndarray, np.ndarray]:
    if lens.size and scores.size:
        width = int(lens[0])
        if (
            width > 0
            and scores.size % width == 0
            and np.all(lens == width)
            and np.all(starts % width == 0)
        ):
            return _count_uniform(scores, starts // width, width, hit_scores)
    gt = np.zeros(hit_scores.size, dtype=np.int64)
    eq = np.zeros(hit_scores.size, dtype=np.int64)
    for a, b in _chunks(lens):
        idx, begin = segments_index(starts[a:b], lens[a:b])
        vals = scores[idx]
        thr = np.repeat(hit_scores[a:b], lens[a:b])
        gt[a:b] = np.add.reduceat(vals > thr, begin, dtype=np.int64)
        eq[a:b] = np.add.reduceat(vals == thr, begin, dtype=np.int64)
    return gt, eq


def _by_sort(arrays: RankingArrays, hit_q, hit_scores) -> tuple[np.ndarray, np.ndarray]:
    scores = arrays.scores
    order = np.argsort(-scores)
    desc = scores[order]
    new = np.empty(desc.size, dtype=bool)
    new[:1] = True
    np.not_equal(desc[1:], desc[:-1], out=new[1:])
    dense = np.empty(desc.size, dtype=np.int64)
    dense[order] = np.cumsum(new) - 1  # 0 = highest score; equal scores share a rank
    n_dense = int(dense.max()) + 1 if dense.size else 1
    seg_order = np.argsort(arrays.seg_start, kind="stable")
    entry_q = np.repeat(seg_order.astype(np.int64), arrays.seg_len[seg_order])
    keys = np.sort(entry_q * n_dense + dense)
    uniq_desc = desc[new]
    hit_dense = np.searchsorted(-uniq_desc, -hit_scores)
    hit_key = hit_q * n_dense + hit_dense
    lo = np.searchsorted(keys, hit_key, side="left")
    hi = np.searchsorted(keys, hit_key, side="right")
    base = np.searchsorted(keys, hit_q * n_dense, side="left")
    return lo - base, hi - lo


def hit_ranks(
    arrays: RankingArrays, strategy: str = "auto", select: np.ndarray | None = None,
    ties: str = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0-based trec_eval ranks of the retrieved judged documents under ``select``.

    ``select`` is a mask over the judgement rows (None: every row). Only the selected rows
    are ranked, so the cost is proportional to what the requested measures need.
    Returns ``(query_index, rank, relevance)`` sorted by (query, rank). ``strategy`` is
    ``"auto"``, ``"count"`` or ``"sort"``; ``ties`` is the tie-breaking method (``"auto"``,
    ``"pairs"``, ``"rank"``; see ``_ties``); all give identical ranks (tests hold them to it).
    """
    keep = ~np.isnan(arrays.judged_score)
    if select is not None:
        keep &= select
    retrieved = np.flatnonzero(keep)
    hq = arrays.judged_q[retrieved]
    hs = arrays.judged_score[retrieved]
    gain = arrays.judged_gain[retrieved]
    starts = arrays.seg_start[hq]
    lens = arrays.seg_len[hq]
    if strategy == "auto":
        work = int(lens.sum())
        strategy = "count" if work <= _COUNT_FACTOR * max(arrays.scores.size, 1) else "sort"
    if strategy == "count":
        gt, eq = _count(arrays.scores, starts, lens, hs)
    elif strategy == "sort":
        gt, eq = _by_sort(arrays, hq, hs)
    else:
        raise ValueError(f"strategy must be auto, count or sort, got {strategy!r}")
    rank = gt
    tied = np.flatnonzero(eq > 1)
    if tied.size:
        rank[tied] += ties_above(arrays, starts[tied], lens[tied], hs[tied], retrieved[tied],
                                 ties)
    order = np.lexsort((rank, hq))
    return hq[order], rank[order], gain[order]
