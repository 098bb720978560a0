"""Score ties broken the trec_eval way, without sorting Python objects.

trec_eval ranks documents of equal score by docid descending (``strcmp`` on UTF-8 bytes, which
is code-point order: Python's ``str`` order). For a relevant document h tied with others, its
rank gains ``#{e in q : score_e == score_h, docid_e > docid_h}``. Here:

1. **Groups.** The tied hits' distinct (query, score) pairs are the groups; the documents of
   each group (its *members*) are found with float and integer operations only: each group's
   query segment compared with its score, or, when that work exceeds a few times the run
   (many groups in long queries), one pass over the involved queries matching (query, score)
   by integer keys. The groups of a query are disjoint, so members <= N.
2. **Docids.** Only the members' and the hits' docids are read: as pyarrow strings (Arrow
   compares strings bytewise on UTF-8: code-point order), taken straight from the file reader's
   Arrow dictionary by integer code, or converted once from the dicts' Python strings.
3. **Counting**, one of two ways, both linear in what they touch:

   * ``pairs``: each hit against every member of its group, one vectorised ``greater`` over
     Arrow strings (work = sum of group sizes over hits: cheap while groups are small, the
     usual case: scores rounded to 1-2 decimals, fully tied short rankings);
   * ``rank``: the distinct docids involved are ranked once by Arrow's string sort into
     integers; each hit then counts the larger keys of its group with two binary searches
     (work ~ M log M; used when many hits share large groups, e.g. 40,000 tied documents,
     all relevant, in one query, where ``pairs`` would be quadratic).

Docids that are not strings or hold lone surrogates (no UTF-8 form; pytrec_eval refuses them)
take a slow exact path: integer keys from Python's own sort of the distinct values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from queryeval.metrics.ranking._arrays import DocCodes, RankingArrays

if TYPE_CHECKING:  # pyarrow (~35 MiB resident) is imported only where ties are broken
    import pyarrow as pa

#: ``pairs`` is chosen while its pairs number at most this many times the members (+ slack).
_PAIRS_FACTOR = 4
_PAIRS_SLACK = 1 << 20
#: Pairs compared, or documents gathered, per chunk (bounds memory).
_PAIRS_CHUNK = 1 << 22
#: Groups' documents are gathered segment by segment while that is at most this many times N.
_GATHER_FACTOR = 4


def segments_index(starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the concatenated segments, and each segment's offset in them."""
    begin = np.cumsum(lens) - lens
    total = int(lens.sum())
    idx = np.repeat(starts - begin, lens) + np.arange(total, dtype=np.int64)
    return idx, begin


def _groups(starts: np.ndarray, lens: np.ndarray, hit_scores: np.ndarray):
    """Distinct (segment start, score) pairs of the tied hits, sorted, and each hit's group."""
    order = np.lexsort((hit_scores, starts))
    s, v = starts[order], hit_scores[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (v[1:] != v[:-1])
    group = np.empty(order.size, dtype=np.int64)
    group[order] = np.cumsum(new) - 1
    return s[new], lens[order][new], v[new], group


def _members(scores: np.ndarray, g_start, g_len, g_score) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of every document of each group, sorted by group; and the group sizes.

    Each group's segment is compared with its score (work = the groups' segment lengths,
    in chunks), unless that exceeds ``_GATHER_FACTOR`` times the run: then one pass over the
    involved segments matches each document's (segment, score) to a group by integer keys."""
    if int(g_len.sum()) > _GATHER_FACTOR * max(scores.size, 1):
        return _members_by_key(scores, g_start, g_len, g_score)
    width = int(g_len[0]) if g_len.size else 0
    if (width > 0 and scores.size % width == 0 and np.all(g_len == width)
            and np.all(g_start % width == 0)):  # every query as long: rows of a table
        table = scores.reshape(-1, width)
        rows = g_start // width
        step = max(_PAIRS_CHUNK // width, 1)
        parts, sizes = [], np.empty(g_start.size, dtype=np.int64)
        for a in range(0, rows.size, step):
            same = table[rows[a : a + step]] == g_score[a : a + step, None]
            sizes[a : a + step] = np.count_nonzero(same, axis=1)
            r, c = np.nonzero(same)  # row-major: grouped by group
            parts.append(g_start[a + r] + c)
        return np.concatenate(parts), sizes
    parts, sizes = [], np.empty(g_start.size, dtype=np.int64)
    csum = np.cumsum(g_len)
    a = 0
    while a < g_start.size:
        base = int(csum[a - 1]) if a else 0
        b = max(int(np.searchsorted(csum, base + _PAIRS_CHUNK, side="right")), a + 1)
        idx, begin = segments_index(g_start[a:b], g_len[a:b])
        same = scores[idx] == np.repeat(g_score[a:b], g_len[a:b])
        sizes[a:b] = np.add.reduceat(same, begin, dtype=np.int64)
        parts.append(idx[same])
        a = b
    return np.concatenate(parts) if parts else np.zeros(0, np.int64), sizes


def _members_by_key(scores: np.ndarray, g_start, g_len, g_score) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_members` in one pass over the involved segments (bounded by the run size)."""
    segs, seg_of_group = np.unique(g_start, return_inverse=True)
    seg_of_group = seg_of_group.ravel()
    first = np.searchsorted(g_start, segs, side="left")  # g_start is sorted
    idx, _ = segments_index(segs, g_len[first])
    owner = np.repeat(np.arange(segs.size, dtype=np.int64), g_len[first])
    vals = scores[idx]
    uniq = np.unique(g_score)
    n_u = np.int64(uniq.size)
    pos = np.minimum(np.searchsorted(uniq, vals), uniq.size - 1)
    ok = np.flatnonzero(uniq[pos] == vals)
    doc_key = owner[ok] * n_u + pos[ok]
    group_key = seg_of_group * n_u + np.searchsorted(uniq, g_score)  # increasing
    gi = np.minimum(np.searchsorted(group_key, doc_key), group_key.size - 1)
    match = group_key[gi] == doc_key
    member, member_group = idx[ok[match]], gi[match]
    order = np.argsort(member_group, kind="stable")
    sizes = np.bincount(member_group, minlength=g_start.size)
    return member[order], sizes


def _arrow_strings(values) -> pa.Array | None:
    """Docids as an Arrow string array, or None when some cannot be (not str, surrogates)."""
    import pyarrow as pa
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowException, UnicodeEncodeError, TypeError, ValueError):
        return None


def _python_keys(values: np.ndarray) -> np.ndarray:
    """Exact integer keys in Python's order (the slow path for unusual docids)."""
    distinct = sorted(set(values.tolist()))
    index = {v: i for i, v in enumerate(distinct)}
    return np.fromiter(map(index.__getitem__, values.tolist()), dtype=np.int64,
                       count=values.size)


def _docids(arrays: RankingArrays, member: np.ndarray, member_q: np.ndarray,
            hit_rows: np.ndarray, ranked: bool) -> tuple[object, object]:
    """(member docids, hit docids): Arrow string arrays, or int64 keys (in docid order) when
    ``ranked`` or on the slow path."""
    codes: DocCodes | None = arrays.doc_codes
    if codes is not None:
        m_code, h_code = codes.run[member], codes.judged[hit_rows]
        if not ranked:
            m, h = _take_names(codes.names, m_code), _take_names(codes.names, h_code)
            if m is not None and h is not None:
                return m, h
        # Rank each distinct docid once (integer unique first: codes name distinct docids).
        uniq, inv = np.unique(np.concatenate((m_code, h_code)), return_inverse=True)
        strings = _take_names(codes.names, uniq)
        if strings is not None:
            k = _rank(strings)[inv.ravel()]
        else:
            k = _python_keys(np.asarray(_names_list(codes.names, uniq), dtype=object))
            k = k[inv.ravel()]
        return k[: m_code.size], k[m_code.size :]
    m_docs = np.asarray(arrays.docids_at(member, member_q), dtype=object)
    h_docs = np.asarray(arrays.judged_docid[hit_rows], dtype=object)
    a, b = _arrow_strings(m_docs), _arrow_strings(h_docs)
    if a is None or b is None:
        k = _python_keys(np.concatenate((m_docs, h_docs)))
        return k[: m_docs.size], k[m_docs.size :]
    if ranked:
        return _as_keys(a, b)
    return a, b


def _names_list(names, codes: np.ndarray) -> list:
    import pyarrow as pa
    if isinstance(names, pa.ChunkedArray | pa.Array):
        return names.take(pa.array(codes)).to_pylist()
    return np.asarray(names, dtype=object)[codes].tolist()


def _take_names(names, codes: np.ndarray) -> pa.Array | None:
    """``names[codes]`` as an Arrow string array (None: not representable, see above)."""
    import pyarrow as pa
    if isinstance(names, pa.ChunkedArray | pa.Array):
        out = names.take(pa.array(codes))
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
    return _arrow_strings(np.asarray(names, dtype=object)[codes])


def _rank(strings: pa.Array) -> np.ndarray:
    """Dense 0-based ranks of Arrow strings in byte order (= code-point order)."""
    import pyarrow.compute as pc
    return pc.rank(strings, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(
        np.int64) - 1


def _as_keys(a, b) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(a, np.ndarray):
        return a, b
    import pyarrow as pa
    k = _rank(pa.concat_arrays([a, b]))
    return k[: len(a)], k[len(a) :]


def _count_pairs(m_doc, h_doc, m_begin, sizes_h) -> np.ndarray:
    """Per hit: members of its group whose docid is greater (each pair compared once), in
    chunks of about ``_PAIRS_CHUNK`` pairs."""
    out = np.empty(sizes_h.size, dtype=np.int64)
    csum = np.cumsum(sizes_h)
    a = 0
    while a < sizes_h.size:
        base = int(csum[a - 1]) if a else 0
        b = max(int(np.searchsorted(csum, base + _PAIRS_CHUNK, side="right")), a + 1)
        pos, begin = segments_index(m_begin[a:b], sizes_h[a:b])
        hit = np.repeat(np.arange(a, b, dtype=np.int64), sizes_h[a:b])
        if isinstance(m_doc, np.ndarray):
            greater = m_doc[pos] > h_doc[hit]
        else:
            import pyarrow as pa
            import pyarrow.compute as pc
            greater = pc.greater(m_doc.take(pa.array(pos)), h_doc.take(pa.array(hit)))
            greater = greater.to_numpy(zero_copy_only=False)
        out[a:b] = np.add.reduceat(greater, begin, dtype=np.int64)
        a = b
    return out


def _count_ranked(m_key, h_key, sizes, hit_group) -> np.ndarray:
    """Per hit: members of its group with a greater key, by binary search in sorted keys."""
    n_keys = np.int64(max(int(m_key.max(initial=0)), int(h_key.max(initial=0))) + 1)
    member_group = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    keys = np.sort(member_group * n_keys + m_key)
    return (np.searchsorted(keys, (hit_group + 1) * n_keys, side="left")
            - np.searchsorted(keys, hit_group * n_keys + h_key, side="right")).astype(np.int64)


def ties_above(arrays: RankingArrays, starts, lens, hit_scores, hit_rows, method: str = "auto") -> np.ndarray:
    """For tied hits: how many same-score documents of their query sort before them.

    ``starts``/``lens``: each hit's query segment; ``hit_scores``: its score; ``hit_rows``: its
    judgement row (for its docid). ``method``: ``"auto"``, ``"pairs"`` or ``"rank"`` (same
    result; tests hold them to it)."""
    g_start, g_len, g_score, hit_group = _groups(starts, lens, hit_scores)
    member, sizes = _members(arrays.scores, g_start, g_len, g_score)
    sizes_h = sizes[hit_group]
    if method == "auto":
        pairs = int(sizes_h.sum())
        method = "pairs" if pairs <= _PAIRS_FACTOR * member.size + _PAIRS_SLACK else "rank"
    if method not in ("pairs", "rank"):
        raise ValueError(f"method must be auto, pairs or rank, got {method!r}")
    g_query = np.empty(g_start.size, dtype=np.int64)
    g_query[hit_group] = arrays.judged_q[hit_rows]
    member_q = np.repeat(g_query, sizes)
    m_doc, h_doc = _docids(arrays, member, member_q, hit_rows, ranked=method == "rank")
    if method == "pairs":
        m_begin = (np.cumsum(sizes) - sizes)[hit_group]
        return _count_pairs(m_doc, h_doc, m_begin, sizes_h)
    return _count_ranked(m_doc, h_doc, sizes, hit_group)
