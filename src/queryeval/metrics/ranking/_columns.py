"""Builder of :class:`RankingArrays` from columns (what TREC file readers produce).

The columns are dictionary-encoded: integer codes into lists of distinct names. Nothing here
loops over rows in Python, so a 10-million-line run costs a few vectorised passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from queryeval.metrics.ranking._arrays import (
    RankingArrays,
    check_missing_query,
    check_scores,
)


def names_at(names, codes: np.ndarray) -> np.ndarray:
    """Names of dictionary codes, from a numpy object array or a pyarrow string array."""
    codes = np.asarray(codes, dtype=np.int64)
    if isinstance(names, np.ndarray):
        return names[codes]
    if hasattr(names, "take"):  # pyarrow
        return np.asarray(names.take(codes).to_pylist(), dtype=object)
    return np.asarray([names[c] for c in codes.tolist()], dtype=object)


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
    names_q: Sequence[str]
    doc: np.ndarray
    names_doc: object  # numpy object array or pyarrow string array
    value: np.ndarray


def first_duplicate(q: np.ndarray, doc: np.ndarray, n_docs: int) -> tuple[int, int] | None:
    """Row numbers of the first duplicated (q, doc) pair, or None. One int64 sort."""
    if q.size < 2:
        return None
    key = q.astype(np.int64) * max(n_docs, 1) + doc
    srt = np.sort(key)
    same = np.flatnonzero(srt[1:] == srt[:-1])
    if same.size == 0:
        return None
    rows = np.flatnonzero(key == srt[same[0]])
    return int(rows[0]), int(rows[1])


def _run_index(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted run keys and, aligned, the flat row each came from: one int64 sort.

    When it fits in 63 bits the row is packed below the key so a value sort (fast, SIMD)
    replaces an argsort.
    """
    n = key.size
    top = int(key.max()) + 1 if n else 1
    if n and top < (1 << 62) // n:
        packed = key * n + np.arange(n, dtype=np.int64)
        packed.sort()
        return packed // n, packed % n
    order = np.argsort(key, kind="stable")
    return key[order], order


def arrays_from_columns(
    qrels: Columns,
    run: Columns,
    qrels_doc_to_run_doc: np.ndarray,
    missing_query: str = "zero",
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

    Raises:
        DuplicateEntryError: a (query, document) pair repeats in the run or in the qrels.
        ValueError: a NaN score.
    """
    check_missing_query(missing_query)
    judged_names = set(qrels.names_q)
    run_names = set(run.names_q)
    if missing_query == "zero":
        qids = sorted(judged_names)
    else:
        qids = sorted(judged_names & run_names)
    index = {q: i for i, q in enumerate(qids)}
    nq = len(qids)
    n_missing = len(judged_names - run_names)

    dup = first_duplicate(qrels.q, qrels.doc, len(qrels.names_doc))
    if dup is not None:
        r = dup[0]
        raise DuplicateEntryError(
            "qrels", qrels.names_q[qrels.q[r]], names_at(qrels.names_doc, qrels.doc[[r]])[0], dup
        )

    # Run rows -> evaluated query index, dropping queries nobody judged.
    run_map = np.array([index.get(n, -1) for n in run.names_q], dtype=np.int64)
    rq = run_map[run.q] if run_map.size else np.zeros(0, dtype=np.int64)
    rows: np.ndarray | None = None  # original row of each kept entry (None: identity)
    if not (rq >= 0).all():
        rows = np.flatnonzero(rq >= 0)
    # One contiguous segment per query; reorder (stable) only if the file interleaves queries.
    kept_q = rq if rows is None else rq[rows]
    change = np.flatnonzero(kept_q[1:] != kept_q[:-1]) + 1
    n_present = int(np.count_nonzero(np.bincount(kept_q, minlength=nq))) if kept_q.size else 0
    if change.size + (1 if kept_q.size else 0) != n_present:
        order = np.argsort(kept_q, kind="stable")
        rows = order if rows is None else rows[order]
        kept_q = kept_q[order]
        change = np.flatnonzero(kept_q[1:] != kept_q[:-1]) + 1
    rq = kept_q
    scores = np.ascontiguousarray(run.value if rows is None else run.value[rows], np.float64)
    doc = np.asarray(run.doc if rows is None else run.doc[rows], dtype=np.int64)

    def _row(i: int) -> int:
        return int(i if rows is None else rows[i])

    def _where(i: int) -> str:
        return f"query {qids[rq[i]]!r}, document {names_at(run.names_doc, doc[[i]])[0]!r}"

    check_scores(scores, _where)
    seg_start = np.zeros(nq, dtype=np.int64)
    seg_len = np.zeros(nq, dtype=np.int64)
    if rq.size:
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [rq.size]))
        seg_start[rq[starts]] = starts
        seg_len[rq[starts]] = ends - starts

    # Every (query, document) of the run, sorted once: duplicates and judgement look-ups.
    n_docs = max(len(run.names_doc), 1)
    keys, flat = _run_index(rq * n_docs + doc)
    same = np.flatnonzero(keys[1:] == keys[:-1])
    if same.size:
        a, b = sorted((_row(int(flat[same[0]])), _row(int(flat[same[0] + 1]))))
        i = int(flat[same[0]])
        raise DuplicateEntryError(
            "run", qids[rq[i]], names_at(run.names_doc, doc[[i]])[0], (a, b)
        )

    # Positive judgements of evaluated queries, and the run's score for each.
    qrels_map = np.array([index.get(n, -1) for n in qrels.names_q], dtype=np.int64)
    jq = qrels_map[qrels.q] if qrels_map.size else np.zeros(0, dtype=np.int64)
    rel = np.asarray(qrels.value, dtype=np.int64)
    sel = (jq >= 0) & (rel > 0)
    jq, jdoc, jgain = jq[sel], np.asarray(qrels.doc)[sel], rel[sel].astype(np.float64)
    jscore = np.full(jq.size, np.nan)
    to_run = np.asarray(qrels_doc_to_run_doc, dtype=np.int64)
    if keys.size and jq.size:
        jrun = to_run[jdoc]
        cand = np.flatnonzero(jrun >= 0)
        jkey = jq[cand] * n_docs + jrun[cand]
        at = np.minimum(np.searchsorted(keys, jkey), keys.size - 1)
        found = keys[at] == jkey
        jscore[cand[found]] = scores[flat[at[found]]]
    names_doc = run.names_doc

    def docids_at(idx: np.ndarray) -> np.ndarray:
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
        judged_docid=names_at(qrels.names_doc, jdoc),
        n_missing=n_missing,
    )
