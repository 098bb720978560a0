"""Ranks of the relevant retrieved documents, in trec_eval's order, without sorting the run.

trec_eval orders a query's documents by score descending, then docid descending (``strcmp``
on the UTF-8 bytes, which is Python's ``str`` order). Every metric here depends on the run
only through the ranks of its *relevant* documents, so instead of sorting all N scores we
count, for each relevant retrieved document h of query q,

    rank(h) = #{e in q : score_e > score_h} + #{e in q : score_e == score_h, docid_e > docid_h}

Three interchangeable strategies compute the first term (and the number of ties):

* ``count``: gather each hit's query segment and compare (work = sum of segment lengths over
  hits; cheap when relevant documents are sparse, the usual case);
* ``rows``: sort each query's scores in a row of a 2-D table (a view of the scores when every
  query retrieved the same number; else padded with -inf), then two branchless binary searches
  per hit in its row (work ~ N log(depth) + hits x log(depth); used when hits are dense and the
  padding small, e.g. 1,000 judged documents a query);
* ``sort``: one int64 sort of (query, dense score rank) keys and two binary searches per hit
  (work ~ N log N; dense hits with very uneven depths).

The docid term is computed only for hits that share their score with another document
(``_ties.ties_above``: integer and Arrow string operations, no Python object is sorted).
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._arrays import RankingArrays
from queryeval.metrics.ranking._ties import segments_index, ties_above

#: Gathered elements per chunk of the counting strategy (bounds memory to ~100 MB).
_CHUNK = 1 << 22
#: Counting is chosen while its work is at most the run size, or (when the row table would
#: be mostly padding) at most this many times the run size.
_COUNT_FACTOR = 8
#: The row table is used while rows x depth <= this many times the number of entries.
_PAD_FACTOR = 2


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


def _row_table(
    arrays: RankingArrays, pad_factor: float | None = _PAD_FACTOR
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(each query's scores sorted ascending in a row, each query's row, its padding) or None
    when the table would exceed ``pad_factor`` times the entries (None: any size) or the run
    is empty. Padding is -inf, placed first by the sort."""
    seg_start, seg_len, scores = arrays.seg_start, arrays.seg_len, arrays.scores
    nq = seg_len.size
    width = int(seg_len.max()) if nq else 0
    if width == 0:
        return None
    if scores.size == nq * width and np.all(seg_len == width) and np.all(seg_start % width == 0):
        return np.sort(scores.reshape(nq, width), axis=1), seg_start // width, np.zeros(nq, np.int64)
    if pad_factor is not None and nq * width > pad_factor * scores.size:
        return None
    table = np.full((nq, width), -np.inf)
    n = int(seg_len.sum())
    row = np.repeat(np.arange(nq, dtype=np.int64), seg_len)
    col = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(seg_len) - seg_len, seg_len)
    table[row, col] = scores[np.repeat(seg_start, seg_len) + col]
    table.sort(axis=1)
    return table, np.arange(nq, dtype=np.int64), width - seg_len


def _bound(flat: np.ndarray, base: np.ndarray, width: int, x: np.ndarray, upper: bool) -> np.ndarray:
    """Per lane, how many of the ``width`` sorted values from ``flat[base]`` are < ``x`` (<=
    with ``upper``): a branchless binary search, every lane in step."""
    at = base.copy()
    n = width
    while n > 1:
        half = n >> 1
        v = flat[at + half]
        at += (v <= x if upper else v < x) * half
        n -= half
    v = flat[at]
    at += v <= x if upper else v < x
    return at - base


def _by_rows(rows, hq, hs) -> tuple[np.ndarray, np.ndarray]:
    table, row_of_q, pads = rows
    width = table.shape[1]
    flat = table.ravel()
    base = row_of_q[hq] * width
    below = _bound(flat, base, width, hs, upper=False)
    upto = _bound(flat, base, width, hs, upper=True)
    eq = upto - below
    eq -= np.where(hs == -np.inf, pads[hq], 0)  # padding equals a -inf score: not a document
    return width - upto, eq


def hit_ranks(
    arrays: RankingArrays, strategy: str = "auto", select: np.ndarray | None = None,
    ties: str = "auto", ascending_ties: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0-based trec_eval ranks of the retrieved judged documents under ``select``.

    ``select`` is a mask over the judgement rows (None: every row). Only the selected rows
    are ranked, so the cost is proportional to what the requested measures need.
    Returns ``(query_index, rank, relevance)`` sorted by (query, rank). ``strategy`` is
    ``"auto"``, ``"count"``, ``"rows"`` or ``"sort"``; ``ties`` is the tie-breaking method (``"auto"``,
    ``"pairs"``, ``"rank"``; see ``_ties``); all give identical ranks (tests hold them to it).
    ``ascending_ties``: documents of equal score ranked by docid ascending instead (what
    ir_measures' ``judged`` and ``msmarco`` providers sort by: ``(-score, docid)``).
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
    rows = None
    if strategy == "auto":
        work = int(lens.sum())
        n = max(arrays.scores.size, 1)
        strategy = "count" if work <= n else "rows"
        if strategy == "rows":
            rows = _row_table(arrays)
            if rows is None:
                strategy = "count" if work <= _COUNT_FACTOR * n else "sort"
    elif strategy == "rows":
        rows = _row_table(arrays, None)
        if rows is None:  # nothing retrieved: no hit either
            strategy = "count"
    if strategy == "count":
        gt, eq = _count(arrays.scores, starts, lens, hs)
    elif strategy == "rows":
        gt, eq = _by_rows(rows, hq, hs)
    elif strategy == "sort":
        gt, eq = _by_sort(arrays, hq, hs)
    else:
        raise ValueError(f"strategy must be auto, count, rows or sort, got {strategy!r}")
    rank = gt
    tied = np.flatnonzero(eq > 1)
    if tied.size:
        above = ties_above(arrays, starts[tied], lens[tied], hs[tied], retrieved[tied], ties)
        # docids are unique in a query: the tied documents below in docid order are above
        rank[tied] += (eq[tied] - 1 - above) if ascending_ties else above
    order = np.lexsort((rank, hq))
    return hq[order], rank[order], gain[order]
