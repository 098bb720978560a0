"""Builder of :class:`RankingArrays` from columns (what TREC file readers produce).

The columns are dictionary-encoded: integer codes into lists of distinct names. Nothing here
loops over rows in Python, so a 10-million-line run costs a few vectorised passes:

* segments: a run file is nearly always grouped by query, which one comparison of adjacent
  query codes confirms; then the rows are used in place (no copy, no sort). Otherwise one
  stable sort by query groups them.
* the judgement side is one compiled pass when ``queryeval._dictflat`` is built
  (``judge``: judgements visited query by query, each query's run segment stamped into a
  table by document code, so a judgement's score is one look-up; duplicated pairs flagged);
  otherwise, and to name a duplicated pair, the run's (query, document) pairs are indexed
  once (``_pairs.RunPairs``: per-query rows sorted independently, or one global sort) to find
  duplicated pairs and, by binary search, the run entry of every judgement.
* query ids are matched by pyarrow kernels (hash look-ups, one string sort) when the reader
  gives pyarrow dictionaries; docids are never turned into Python strings: tie-breaking
  compares them by code through the run's name dictionary (``DocCodes``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from queryeval.metrics.ranking._arrays import (
    DocCodes,
    RankingArrays,
    check_missing_query,
    check_scores,
)
from queryeval.metrics.ranking._pairs import RunPairs, sorted_pairs


def names_at(names, codes: np.ndarray) -> np.ndarray:
    """Names of dictionary codes, from a numpy object array or a pyarrow string array."""
    codes = np.asarray(codes, dtype=np.int64)
    if isinstance(names, np.ndarray):
        return names[codes]
    if hasattr(names, "take"):  # pyarrow
        return np.asarray(names.take(codes).to_pylist(), dtype=object)
    return np.asarray([names[c] for c in codes.tolist()], dtype=object)


class LazyNames:
    """``names[codes[i]]`` on demand: indexing with an integer array returns an object array.

    Stands in for an object array of docids (``RankingArrays.judged_docid``) so that only the
    few docids needed to break score ties are ever converted to Python strings.
    """

    def __init__(self, names, codes: np.ndarray) -> None:
        self.names = names
        self.codes = codes

    def __len__(self) -> int:
        return int(self.codes.size)

    def __getitem__(self, idx) -> np.ndarray:
        return names_at(self.names, self.codes[idx])


class DuplicateEntryError(ValueError):
    """The same (query, document) pair occurs twice; ``rows`` are the two 0-based row numbers.

    ``what`` is ``"qrels"`` or ``"run"``.
    """

    def __init__(self, what: str, qid: str, docid: str, rows: tuple[int, int]) -> None:
        self.what = what
        self.qid = qid
        self.docid = docid
        self.rows = rows
        super().__init__(f"duplicate {what} entry for query {qid!r}, document {docid!r}")


@dataclass
class Columns:
    """One dictionary-encoded table: ``names_q[q[i]]``, ``names_doc[doc[i]]``, ``value[i]``."""

    q: np.ndarray
    names_q: object  # list of str or pyarrow string array
    doc: np.ndarray
    names_doc: object  # numpy object array, list of str or pyarrow string array
    value: np.ndarray


def first_duplicate(q: np.ndarray, doc: np.ndarray, n_docs: int) -> tuple[int, int] | None:
    """Row numbers (ascending) of the first duplicated (q, doc) pair, or None."""
    if q.size < 2:
        return None
    keys, rows = sorted_pairs(q, int(q.max()) + 1, doc, n_docs)
    same = np.flatnonzero(keys[1:] == keys[:-1])
    if same.size == 0:
        return None
    a, b = sorted((int(rows[same[0]]), int(rows[same[0] + 1])))
    return a, b


def _group_by_query(
    codes: np.ndarray, code_to_query: np.ndarray, nq: int
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Rows of evaluated queries, grouped in one contiguous segment per query.

    Returns ``(rows, seg_start, seg_len)``: ``rows`` maps positions to original rows (None:
    identity: the file was already grouped and every row is kept); the segments tile the
    positions in increasing ``seg_start`` order.
    """
    seg_start = np.zeros(nq, dtype=np.int64)
    seg_len = np.zeros(nq, dtype=np.int64)
    n = int(codes.size)
    if n == 0:
        return None, seg_start, seg_len
    bounds = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    starts = np.concatenate(([0], bounds))
    lens = np.diff(np.concatenate((starts, [n])))
    seg_code = codes[starts]
    if np.bincount(seg_code).max() == 1:  # grouped: no query in two runs of lines
        seg_q = code_to_query[seg_code]
        keep = seg_q >= 0
        if keep.all():
            rows = None
            seg_start[seg_q] = starts
        else:
            rows = np.flatnonzero(np.repeat(keep, lens))
            kept = lens[keep]
            seg_start[seg_q[keep]] = np.cumsum(kept) - kept
        seg_len[seg_q[keep]] = lens[keep]
        return rows, seg_start, seg_len
    row_query = code_to_query[codes]
    rows = np.flatnonzero(row_query >= 0)
    rows = rows[np.argsort(row_query[rows], kind="stable")]
    counts = np.bincount(row_query[rows], minlength=nq)
    seg_len[:] = counts
    seg_start[:] = np.cumsum(counts) - counts
    return rows, seg_start, seg_len


def _query_index(
    judged: object, in_run: object, missing_query: str
) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """Evaluated queries (sorted) and, for each judged / run query name, its index or -1.

    Returns ``(qids, judged_map, run_map, n_missing)``. With pyarrow arrays (what the file
    reader produces) every step is a C++ kernel: UTF-8 byte order is code-point order, so
    pyarrow's string sort equals Python's ``sorted``.
    """
    if _is_arrow(judged) and _is_arrow(in_run):
        import pyarrow.compute as pc

        # Sort the judged names once; each run name finds its sorted position by hash.
        order = pc.sort_indices(judged).to_numpy(zero_copy_only=False)
        ordered = judged.take(order)
        judged_map = np.empty(order.size, dtype=np.int64)
        judged_map[order] = np.arange(order.size)
        run_map = pc.index_in(in_run, value_set=ordered).fill_null(-1)
        run_map = run_map.to_numpy(zero_copy_only=False).astype(np.int64)
        in_both = np.zeros(order.size, dtype=bool)
        in_both[run_map[run_map >= 0]] = True
        n_missing = int(order.size - np.count_nonzero(in_both))
        if missing_query == "zero":
            return ordered.to_pylist(), judged_map, run_map, n_missing
        renum = np.where(in_both, np.cumsum(in_both) - 1, -1)  # sorted position -> kept index
        qids = ordered.filter(in_both).to_pylist()
        run_map = np.where(run_map >= 0, renum[np.maximum(run_map, 0)], -1)
        return qids, renum[judged_map], run_map, n_missing
    judged_names = list(_as_list(judged))
    run_names = list(_as_list(in_run))
    run_set = set(run_names)
    if missing_query == "zero":
        qids = sorted(set(judged_names))
    else:
        qids = sorted(set(judged_names) & run_set)
    index = {q: i for i, q in enumerate(qids)}

    def to_index_py(names: list[str]) -> np.ndarray:
        return np.fromiter(map(index.get, names, [-1] * len(names)), dtype=np.int64,
                           count=len(names))

    n_missing = len(set(judged_names) - run_set)
    return qids, to_index_py(judged_names), to_index_py(run_names), n_missing


def _is_arrow(names: object) -> bool:
    return hasattr(names, "to_pylist") and hasattr(names, "take")


def _as_list(names: object) -> Sequence[str]:
    return names.to_pylist() if _is_arrow(names) else names  # type: ignore[union-attr]


def names_list(names: object) -> list[str]:
    """All names of a dictionary (list, numpy object array or pyarrow array) as a list."""
    return list(_as_list(names))


def name_at(names: object, code: int) -> str:
    """One name of a dictionary (list, numpy object array or pyarrow array)."""
    return str(names_at(names, np.array([code]))[0])


def _entry_query(seg_start: np.ndarray, seg_len: np.ndarray, i: int) -> int:
    """Query index of flat entry ``i`` (segments tile the entries)."""
    return int(np.flatnonzero((seg_start <= i) & (i < seg_start + seg_len))[0])


def _int32(codes, n_names: int) -> np.ndarray | None:
    """Dictionary codes as int32 (they are < ``n_names``), or None when they may not fit."""
    if n_names >= 2**31:
        return None
    return np.ascontiguousarray(codes, dtype=np.int32)


def _native_judge(qrels: Columns, run: Columns, qrels_map, doc_map, seg_start, seg_len, doc,
                  scores) -> tuple | None:
    """``queryeval._dictflat.judge`` on the columns: ``(qrels_dup, run_dup, covered, n_sel,
    jq, jrun, jgain, jscore)`` (see ``_dictflat.c``), or None: not built, ``QUERYEVAL_NO_EXT=1``,
    or codes that may not fit int32 (the numpy path then does the same work)."""
    if os.environ.get("QUERYEVAL_NO_EXT", "") not in ("", "0"):
        return None
    try:
        from queryeval import _dictflat
    except ImportError:
        return None
    n_q, n_doc = len(qrels.names_q), len(qrels.names_doc)
    q, jdoc, rdoc = _int32(qrels.q, n_q), _int32(qrels.doc, n_doc), _int32(doc, len(run.names_doc))
    if q is None or jdoc is None or rdoc is None:
        return None
    i64 = np.int64
    out = _dictflat.judge(
        q, jdoc, np.ascontiguousarray(qrels.value, i64), np.ascontiguousarray(qrels_map, i64),
        np.ascontiguousarray(doc_map, i64), np.ascontiguousarray(seg_start, i64),
        np.ascontiguousarray(seg_len, i64), rdoc, np.ascontiguousarray(scores, np.float64),
        len(run.names_doc))
    *flags, jq, jrun, jgain, jscore = out
    return (*flags, np.frombuffer(jq, i64), np.frombuffer(jrun, i64),
            np.frombuffer(jgain, np.float64), np.frombuffer(jscore, np.float64))


def arrays_from_columns(
    qrels: Columns,
    run: Columns,
    qrels_doc_to_run_doc: np.ndarray,
    missing_query: str = "zero",
    *,
    pair_layout: str = "auto",
) -> RankingArrays:
    """Build the engine's arrays from dictionary-encoded qrels and run columns.

    Every name in ``names_q``/``names_doc`` must be used by at least one row (what a
    dictionary encoder produces).

    Args:
        qrels: codes of (query, document) and integer relevance per judgement.
        run: codes of (query, document) and float score per retrieved document.
        qrels_doc_to_run_doc: for each distinct qrels docid (``qrels.names_doc``), its code in
            ``run.names_doc``, or -1 when the run never retrieves it.
        missing_query: ``"zero"`` or ``"skip"`` (see :func:`evaluate`).
        pair_layout: how run pairs are indexed (``"auto"``, ``"table"``, ``"sorted"``; see
            ``_pairs.RunPairs``); every layout gives the same arrays.

    Raises:
        DuplicateEntryError: a (query, document) pair repeats in the run or in the qrels.
        ValueError: a NaN score.
    """
    check_missing_query(missing_query)
    qids, qrels_map, run_map, n_missing = _query_index(qrels.names_q, run.names_q, missing_query)
    nq = len(qids)

    # Run rows -> evaluated query index (queries nobody judged are dropped), grouped.
    rows, seg_start, seg_len = _group_by_query(np.asarray(run.q), run_map, nq)
    scores = np.ascontiguousarray(run.value if rows is None else run.value[rows], np.float64)
    doc = np.asarray(run.doc if rows is None else run.doc[rows])
    # The judgement side in one compiled pass (None: not built, or QUERYEVAL_NO_EXT): its
    # duplicate flags only say whether to look; the exact pair is found below either way.
    native = None if pair_layout != "auto" else _native_judge(
        qrels, run, qrels_map, qrels_doc_to_run_doc, seg_start, seg_len, doc, scores)

    if native is None or native[0]:
        dup = first_duplicate(qrels.q, qrels.doc, len(qrels.names_doc))
        if dup is not None:
            r = dup[0]
            raise DuplicateEntryError(
                "qrels", name_at(qrels.names_q, qrels.q[r]), name_at(qrels.names_doc, qrels.doc[r]),
                dup,
            )

    def _where(i: int) -> str:
        q = qids[_entry_query(seg_start, seg_len, i)]
        return f"query {q!r}, document {names_at(run.names_doc, doc[[i]])[0]!r}"

    check_scores(scores, _where)

    pairs = None
    if native is None or native[1] or native[2] != doc.size:
        # Every (query, document) of the run, indexed once: duplicates and judgement look-ups.
        pairs = RunPairs(doc, seg_start, seg_len, len(run.names_doc), layout=pair_layout)
        if pairs.duplicate is not None:
            i, j = pairs.duplicate
            a, b = sorted((int(i if rows is None else rows[i]),
                           int(j if rows is None else rows[j])))
            raise DuplicateEntryError(
                "run", qids[_entry_query(seg_start, seg_len, i)],
                names_at(run.names_doc, doc[[i]])[0], (a, b),
            )

    if native is not None:
        jq, jrun, jgain, jscore = native[4:]
        jdoc = np.asarray(qrels.doc)
        if native[3] < jq.size:  # judgements of queries that are not evaluated
            sel = np.flatnonzero(jq >= 0)
            jq, jrun, jgain, jscore, jdoc = jq[sel], jrun[sel], jgain[sel], jscore[sel], jdoc[sel]
    else:
        # Judgements of evaluated queries (every level), and the run's score for each.
        jq = qrels_map[qrels.q] if qrels_map.size else np.zeros(0, dtype=np.int64)
        rel = np.asarray(qrels.value, dtype=np.int64)
        sel = np.flatnonzero(jq >= 0)
        jq, jdoc, jgain = jq[sel], np.asarray(qrels.doc)[sel], rel[sel].astype(np.float64)
        jscore = np.full(jq.size, np.nan)
        jrun = np.asarray(qrels_doc_to_run_doc, dtype=np.int64)[jdoc]
        cand = np.flatnonzero(jrun >= 0)
        if cand.size and pairs is not None:
            at = pairs.lookup(jq[cand], jrun[cand])
            found = at >= 0
            jscore[cand[found]] = scores[at[found]]
    names_doc = run.names_doc

    def docids_at(idx: np.ndarray, query: np.ndarray | None = None) -> np.ndarray:
        return names_at(names_doc, doc[np.asarray(idx, dtype=np.int64)])

    return RankingArrays(
        qids=qids,
        seg_start=seg_start,
        seg_len=seg_len,
        scores=scores,
        docids_at=docids_at,
        judged_q=jq,
        judged_gain=jgain,
        judged_score=jscore,
        judged_docid=LazyNames(qrels.names_doc, jdoc),
        n_missing=n_missing,
        doc_codes=DocCodes(names=names_doc, run=doc, judged=jrun),
    )
