"""The engine's array form of a (qrels, run) pair, and its builder from pytrec_eval/ranx dicts.

Only what the metrics need is kept:

* the run, flat: every evaluated query's retrieved scores, one contiguous segment per query
  (``seg_start``/``seg_len``; segments tile ``scores`` but may appear in any query order);
* every judgement, one row each: query index, gain, the score the run
  gave that document (NaN when the run did not retrieve it) and its docid (read only to break
  score ties the trec_eval way).

Unjudged and non-relevant retrieved documents matter only through their scores (they push
relevant ones down), so the engine never needs to know *which* of them a query retrieved,
except when a score ties with a relevant document's score; ``docids_at`` fetches those few
docids lazily.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import attrgetter
from typing import Protocol

import numpy as np

from queryeval.metrics.deadline import gc_paused

MISSING_QUERY_MODES = ("zero", "skip")
_GET = attrgetter("get")


class NamesByIndex(Protocol):
    """Anything that integer-array indexing turns into an object array of names."""

    def __getitem__(self, idx: np.ndarray) -> np.ndarray: ...


@dataclass
class DocCodes:
    """Integer docid codes into one dictionary of names (what the file reader gives).

    ``run``: the code of every run entry (aligned with ``RankingArrays.scores``); ``judged``:
    the code of every judgement's docid in the same dictionary (-1: not in the run); ``names``:
    the dictionary (a pyarrow string array, a numpy object array or a list of ``str``). Lets
    tie-breaking compare docids by code, never building Python strings.
    """

    names: object
    run: np.ndarray
    judged: np.ndarray


@dataclass
class RankingArrays:
    """A (qrels, run) pair ready for :func:`queryeval.metrics.ranking.evaluate_arrays`.

    Attributes:
        qids: evaluated query ids, sorted; position ``i`` is query index ``i``.
        seg_start, seg_len: int64 ``[n_queries]``; query ``i``'s retrieved scores are
            ``scores[seg_start[i] : seg_start[i] + seg_len[i]]`` (length 0: not in the run).
        scores: float64 ``[N]``, no NaN.
        docids_at: maps flat indices into ``scores`` (and optionally their query indices,
            which spares a search) to their docids (an object array).
        judged_q: int64 ``[R]``, query index of each judgement (every level, also 0 and
            negative ones: trec_eval's non-relevant and pooled-but-unjudged documents).
        judged_gain: float64 ``[R]``, its relevance level (an integer; the nDCG gain when > 0).
        judged_score: float64 ``[R]``, the run's score for that document, NaN if not retrieved.
        judged_docid: its docid: an object array ``[R]``, or any object that integer-array
            indexing turns into one (the file builder's ``LazyNames``; only tied hits are read).
        n_missing: judged queries the run does not contain (scored 0 under
            ``missing_query="zero"``, left out under ``"skip"``).
        doc_codes: optional integer docid codes (:class:`DocCodes`); when given,
            tie-breaking reads docids through them instead of ``docids_at``/``judged_docid``.
    """

    qids: list[str]
    seg_start: np.ndarray
    seg_len: np.ndarray
    scores: np.ndarray
    docids_at: Callable[..., np.ndarray]
    judged_q: np.ndarray
    judged_gain: np.ndarray
    judged_score: np.ndarray
    judged_docid: NamesByIndex
    n_missing: int = 0
    doc_codes: DocCodes | None = None

    @property
    def n_queries(self) -> int:
        return len(self.qids)


def check_missing_query(mode: str) -> None:
    if mode not in MISSING_QUERY_MODES:
        raise ValueError(
            f"missing_query must be one of {', '.join(MISSING_QUERY_MODES)}, got {mode!r}"
        )


def check_scores(scores: np.ndarray, where: Callable[[int], str]) -> None:
    """Reject NaN scores: trec_eval's order is undefined for them."""
    bad = np.flatnonzero(np.isnan(scores))
    if bad.size:
        raise ValueError(f"run score is NaN for {where(int(bad[0]))}; scores must be numbers")


def _float_array(values, count: int, what: str) -> np.ndarray:
    try:
        return np.fromiter(values, dtype=np.float64, count=count)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numbers: {exc}") from None


def relevance_as_int(rels: np.ndarray, where: Callable[[int], str]) -> np.ndarray:
    """Relevance levels must be integers (pytrec_eval refuses anything else) within int64 (a
    larger one has no int64 value: the cast would give an arbitrary gain)."""
    bad = np.flatnonzero(~np.isfinite(rels) | (rels != np.floor(rels))
                         | (rels < -(2.0**63)) | (rels >= 2.0**63))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"relevance must be an integer, got {rels[i]!r} for {where(i)}")
    return rels.astype(np.int64)


def _is_mapping(x: object) -> bool:
    return type(x) is dict or isinstance(x, Mapping)


def _values(x: Mapping):
    return x.values()


def _values_of(items: list):
    """``x.values()`` for each item; the C-level ``dict.values`` when all are plain dicts."""
    if {dict}.issuperset(map(type, items)):
        return map(dict.values, items)
    return map(_values, items)


def _check_mappings(qids: list[str], values: list, what: str, value: str) -> None:
    """Every per-query value must be a mapping (type check fast-pathed for plain dicts)."""
    if {dict}.issuperset(map(type, values)):
        return
    for q, v in zip(qids, values, strict=False):
        if not isinstance(v, Mapping):
            raise ValueError(f"{what}[{q!r}] must be a mapping {{docid: {value}}}")


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, without a sort when already in order."""
    if np.all(values[1:] >= values[:-1]):
        first = np.concatenate(([0], np.flatnonzero(values[1:] != values[:-1]) + 1))
        return values[first], np.repeat(np.arange(first.size), np.diff(np.append(first, values.size)))
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.ravel()


class _JudgedDocids:
    """The docids of judgement rows, read from the qrels dicts only when indexed (only tied
    hits and error messages need them): ``self[idx]`` is an object array."""

    def __init__(self, judgements: list, j_len: np.ndarray) -> None:
        self.judgements = judgements
        self.ends = np.cumsum(j_len)

    def __len__(self) -> int:
        return int(self.ends[-1]) if self.ends.size else 0

    def __getitem__(self, idx) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            return np.empty(0, dtype=object)
        qi = np.searchsorted(self.ends, idx, side="right")
        qs, at = distinct(qi)
        lens = self.ends[qs] - np.where(qs > 0, self.ends[qs - 1], 0)
        flat = np.fromiter(chain.from_iterable(map(self.judgements.__getitem__, qs.tolist())),
                           dtype=object, count=int(lens.sum()))
        offset = np.cumsum(lens) - lens
        first = self.ends[qs] - lens  # each involved query's first row
        return flat[idx - first[at] + offset[at]]


def arrays_from_dicts(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    missing_query: str = "zero",
) -> RankingArrays:
    """Flatten pytrec_eval/ranx-shaped dicts into :class:`RankingArrays` in one pass each.

    Evaluated queries: every query in ``qrels`` (``missing_query="zero"``) or those also in
    ``run`` (``"skip"``). Run queries absent from ``qrels`` are never evaluated.
    """
    check_missing_query(missing_query)
    with gc_paused():
        return _arrays_from_dicts(qrels, run, missing_query)


def _arrays_from_dicts(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    missing_query: str,
) -> RankingArrays:
    flat = _native_flatten(qrels, run, missing_query)
    if flat is not None:
        return _build(*flat)
    if not isinstance(qrels, Mapping) or not isinstance(run, Mapping):
        raise ValueError("qrels and run must be mappings {qid: {docid: value}}")
    if not {str}.issuperset(map(type, chain(qrels, run))):  # C-level scan; exact check below
        for q in chain(qrels, run):
            if not isinstance(q, str):
                raise ValueError(f"query ids must be strings, got {q!r}")
    # A query with an empty judgement dict is not judged (pytrec_eval drops it too).
    plain_qrels = {dict}.issuperset(map(type, qrels.values()))
    if plain_qrels:
        judged = list(compress(qrels, map(len, qrels.values())))
    else:
        judged = [q for q, j in qrels.items() if not _is_mapping(j) or len(j) > 0]
    in_run = list(map(run.__contains__, judged))
    n_missing = len(judged) - sum(in_run)
    if missing_query == "zero":
        qids = sorted(judged)
    else:
        qids = sorted(compress(judged, in_run))
    empty: dict[str, float] = {}
    segs = list(map(run.get, qids, repeat(empty, len(qids))))
    plain_segs = {dict}.issuperset(map(type, segs))
    if not plain_segs:
        segs = [empty if s is None else s for s in segs]
        _check_mappings(qids, segs, "run", "score")
    nq = len(qids)
    seg_len = np.fromiter(map(len, segs), dtype=np.int64, count=nq)
    seg_start = np.cumsum(seg_len) - seg_len
    n = int(seg_len.sum())
    values = map(dict.values, segs) if plain_segs else _values_of(segs)
    scores = _float_array(chain.from_iterable(values), n, "run scores")

    def _where_run(i: int) -> str:
        qi = int(np.searchsorted(seg_start + seg_len, i, side="right"))
        return f"query {qids[qi]!r}, document {list(segs[qi])[i - seg_start[qi]]!r}"

    check_scores(scores, _where_run)

    judgements = list(map(qrels.__getitem__, qids))
    if not plain_qrels:
        _check_mappings(qids, judgements, "qrels", "relevance")
    j_len = np.fromiter(map(len, judgements), dtype=np.int64, count=nq)
    r_all = int(j_len.sum())
    values = map(dict.values, judgements) if plain_qrels else _values_of(judgements)
    rels = _float_array(chain.from_iterable(values), r_all, "relevance")
    j_docs = _JudgedDocids(judgements, j_len)

    def _where_qrels(i: int) -> str:
        qi = int(np.searchsorted(np.cumsum(j_len), i, side="right"))
        return f"query {qids[qi]!r}, document {j_docs[np.array([i])][0]!r}"

    rels_int = relevance_as_int(rels, _where_qrels)
    # The run's score of every judged document: one C-level dict lookup per judgement (one
    # flat ``map`` over all judgements when every run value is a plain dict).
    if plain_segs:
        seg_per_row = chain.from_iterable(map(repeat, segs, j_len.tolist()))
        found = map(dict.get, seg_per_row, chain.from_iterable(judgements), repeat(np.nan))
    else:
        found = chain.from_iterable(map(map, map(_GET, segs), judgements, repeat(repeat(np.nan))))
    j_score = np.fromiter(found, dtype=np.float64, count=r_all)
    return _build(qids, segs, judgements, seg_len, scores, j_len,
                  rels_int.astype(np.float64), j_score, n_missing)


def _native_flatten(qrels, run, missing_query: str) -> tuple | None:
    """:func:`_build`'s arguments from the compiled flattener (``queryeval/_dictflat.c``), or
    None: not built, ``QUERYEVAL_NO_EXT=1``, or input it leaves to the Python builder
    (anything not plain: it then accepts or refuses it with its own messages)."""
    if type(qrels) is not dict or type(run) is not dict:
        return None
    if os.environ.get("QUERYEVAL_NO_EXT", "") not in ("", "0"):
        return None
    try:
        from queryeval import _dictflat
    except ImportError:
        return None
    out = _dictflat.flatten(qrels, run, missing_query == "skip")
    if out is None:
        return None
    qids, n_missing, segs, judgements, *bufs = out
    seg_len, scores, j_len, gains, j_score = (
        np.frombuffer(b, dtype=t) for b, t in zip(
            bufs, (np.int64, np.float64, np.int64, np.float64, np.float64), strict=True))
    return qids, segs, judgements, seg_len, scores, j_len, gains, j_score, n_missing


def _build(qids: list[str], segs: list, judgements: list, seg_len: np.ndarray,
           scores: np.ndarray, j_len: np.ndarray, gains: np.ndarray, j_score: np.ndarray,
           n_missing: int) -> RankingArrays:
    """:class:`RankingArrays` from the flat columns (either builder's) and the per-query
    dicts, read back lazily for tied docids."""
    nq = len(qids)
    seg_start = np.cumsum(seg_len) - seg_len
    j_q = np.repeat(np.arange(nq, dtype=np.int64), j_len)
    j_docs = _JudgedDocids(judgements, j_len)

    def docids_at(idx: np.ndarray, query: np.ndarray | None = None) -> np.ndarray:
        """Docids of flat run indices (``query``: their query indices, if known): the keys
        of the queries involved, flattened once."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            return np.empty(0, dtype=object)
        qi = np.searchsorted(seg_start + seg_len, idx, side="right") if query is None else query
        qs, at = distinct(qi)
        lens = seg_len[qs]
        flat = np.fromiter(chain.from_iterable(map(segs.__getitem__, qs.tolist())),
                           dtype=object, count=int(lens.sum()))
        offset = np.cumsum(lens) - lens  # where each involved query starts in ``flat``
        return flat[idx - seg_start[qs][at] + offset[at]]

    return RankingArrays(
        qids=qids,
        seg_start=seg_start,
        seg_len=seg_len,
        scores=scores,
        docids_at=docids_at,
        judged_q=j_q,
        judged_gain=gains,
        judged_score=j_score,
        judged_docid=j_docs,
        n_missing=n_missing,
    )
