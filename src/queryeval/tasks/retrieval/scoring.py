"""Seed 002 scoring of one question: which retrieved chunks are relevant, and its ranking
figures through the trec_eval-exact engine (:mod:`queryeval.metrics.ranking`).

A relevant chunk is identified by its content hash (the seed's rule: MD5 hex digest of the
content, letter case ignored unless ``hash_case=exact``) when it has one, by its chunk id
otherwise. A record's relevant chunks are ``expected_chunks`` (several, graded) or else its
one ``expected_chunk`` (the seed's layout, relevance 1).

Each relevant chunk is one judged document: the first retrieved chunk that matches it is
that document; a later retrieved chunk matching only already-found relevant chunks counts as
non-relevant (trec_eval credits a document once). The ranking's order is its list order (no
score ties to break), so the engine's sparse structure (``Hits``: the rank and gain of each
relevant chunk retrieved, every judgement) is built directly and its metric kernels run on
it: the same code as ``queryeval.metrics.ranking.evaluate``, without the per-call cost of
ranking by score (checked equal to pytrec_eval in tests/tasks/test_retrieval_multi.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from queryeval.metrics.ranking import reciprocal_rank

if TYPE_CHECKING:
    from queryeval.metrics.ranking import MetricSpec
    from queryeval.metrics.ranking._hits import Hits

# The engine (queryeval.metrics.ranking's two dozen modules) is imported by the functions that
# run it: a run whose questions each have one relevant chunk of relevance 1 loads only the
# per-query kernels (ranking/_recall.py, ranking/_mrr.py: the package loads names lazily).

RANK_METRICS = ("recall", "hit_rate", "mrr", "ndcg", "map", "precision")
"""The per-question figures at k, in the order a record's ``scores`` lists them."""


def relevant_chunks(record: dict) -> list[dict]:
    """The record's relevant chunks: ``expected_chunks``, or its one ``expected_chunk``."""
    several = record.get("expected_chunks")
    if several:
        return several
    exp = record.get("expected_chunk") or {}
    return [{"chunk_id": exp.get("chunk_id") or "", "content_hash": exp.get("content_hash") or "",
             "relevance": 1}]


def has_relevant(record: dict) -> bool:
    """Whether any of the record's :func:`relevant_chunks` has relevance > 0; a question
    judged only non-relevant (a BEIR or TREC query whose judgements are all 0) has none. The
    seed's one ``expected_chunk`` is relevance 1 (read without building the list)."""
    several = record.get("expected_chunks")
    return not several or any(int(c.get("relevance", 1)) > 0 for c in several)


def _identity(chunk_id: str, digest: str, exact: bool) -> tuple[str, str]:
    if digest:
        return ("hash", digest if exact else digest.lower())
    return ("id", chunk_id)


def is_identity(chunk: dict, identity: tuple[str, str], exact: bool) -> bool:
    """Whether the retrieved ``chunk`` is the relevant chunk ``identity`` (by hash, letter
    case per ``exact``; by id, a missing or empty id matching nothing)."""
    kind, key = identity
    if kind == "hash":
        digest = str(chunk.get("content_hash") or "")
        return (digest if exact else digest.lower()) == key
    chunk_id = chunk.get("chunk_id")
    return chunk_id not in (None, "") and str(chunk_id) == key


def record_identity(record: dict, exact: bool) -> tuple[str, str] | None:
    """:func:`single_identity` of the record's relevant chunks: its one ``expected_chunk``
    (relevance 1) read directly, without building :func:`relevant_chunks`' list."""
    several = record.get("expected_chunks")
    if several:
        return single_identity(several, exact)
    exp = record.get("expected_chunk") or {}
    digest = exp.get("content_hash")  # as _identity(str(chunk_id or ""), str(digest or ""))
    if digest:
        digest = str(digest)
        return ("hash", digest if exact else digest.lower())
    return ("id", str(exp.get("chunk_id") or ""))


class Matcher:
    """Which relevant chunk (by index) a retrieved chunk is, for one question."""

    def __init__(self, relevant: list[dict], exact: bool) -> None:
        self.relevant = relevant
        self.exact = exact
        self._positive: list[bool] | None = None  # relevance > 0, per relevant chunk (on first use)
        self._one: tuple[str, str] | None = None
        self.by_identity: dict[tuple[str, str], list[int]] = {}
        if len(relevant) == 1:  # the seed's shape: one identity, compared directly
            rel = relevant[0]
            self._one = _identity(str(rel.get("chunk_id") or ""), str(rel.get("content_hash") or ""), exact)
            self.by_identity[self._one] = [0]
            self.any_hash = self._one[0] == "hash"
            self.any_id = not self.any_hash
            return
        for i, rel in enumerate(relevant):
            key = _identity(str(rel.get("chunk_id") or ""), str(rel.get("content_hash") or ""), exact)
            self.by_identity.setdefault(key, []).append(i)
        self.any_hash = any(kind == "hash" for kind, _ in self.by_identity)
        self.any_id = any(kind == "id" for kind, _ in self.by_identity)

    def candidates(self, chunk: dict) -> list[int]:
        """Every relevant chunk the retrieved ``chunk`` matches (by hash, then by id)."""
        out: list[int] = []
        if self.any_hash:
            digest = str(chunk.get("content_hash") or "")
            out += self.by_identity.get(("hash", digest if self.exact else digest.lower()), ())
        if self.any_id:
            chunk_id = chunk.get("chunk_id")
            if chunk_id not in (None, ""):
                out += self.by_identity.get(("id", str(chunk_id)), ())
        return out

    def is_relevant(self, chunk: dict) -> bool:
        """Whether ``chunk`` is one of the question's relevant chunks (relevance > 0)."""
        if self._one is not None:  # one relevant chunk: compare its identity directly
            return (is_identity(chunk, self._one, self.exact)
                    and int(self.relevant[0].get("relevance", 1)) > 0)
        found = self.candidates(chunk)
        if not found:
            return False
        if self._positive is None:
            self._positive = [int(rel.get("relevance", 1)) > 0 for rel in self.relevant]
        return any(self._positive[i] for i in found)

    def assign(self, chunks: list[dict]) -> list[int | None]:
        """For each retrieved chunk, the relevant chunk it is credited as (each at most once)."""
        used: set[int] = set()
        out: list[int | None] = []
        for c in chunks:
            pick = None
            for i in self.candidates(c):
                if i not in used:
                    pick = i
                    used.add(i)
                    break
            out.append(pick)
        return out


@dataclass(frozen=True)
class Cut:
    """One question's ranking at k: the chunks kept, the rank of the first relevant one (or
    None), how many relevant chunks were found, and the figures (``RANK_METRICS`` at k)."""

    chunks: list[dict]
    rank: int | None
    found: int
    scores: dict[str, float]


def _hits(assigned: list[list[int | None]], relevant: list[list[dict]], num_ret: list[int]) -> Hits:
    """The engine's sparse structure (:class:`~queryeval.metrics.ranking._hits.Hits`) for
    rankings whose order is their list order (no score ties to break), built directly: the
    0-based rank of each retrieved chunk credited as a relevant chunk, with its relevance as
    gain, and every relevant chunk's judgement (num_rel, the ideal ordering)."""
    hq, hrank, hgain, hnth, jq, jrel, iq, ipos, igain = [], [], [], [], [], [], [], [], []
    for qi, (assign, rel) in enumerate(zip(assigned, relevant, strict=True)):
        levels = [int(r.get("relevance", 1)) for r in rel]
        nth = 0
        for pos, a in enumerate(assign):
            if a is not None and levels[a] > 0:
                hq.append(qi)
                hrank.append(pos)
                hgain.append(levels[a])
                hnth.append(nth)  # the engine's position_in_group: hits come in rank order
                nth += 1
        jq += [qi] * len(levels)
        jrel += levels
        positive = sorted((g for g in levels if g > 0), reverse=True)
        iq += [qi] * len(positive)
        ipos += range(len(positive))
        igain += positive
    from queryeval.metrics.ranking._hits import Hits

    n = len(assigned)
    q = np.asarray(hq, dtype=np.int64)
    judged_q = np.asarray(jq, dtype=np.int64)
    judged_rel = np.asarray(jrel, dtype=np.float64)
    ideal_q = np.asarray(iq, dtype=np.int64)
    rank = np.asarray(hrank, dtype=np.int64)
    gain = np.asarray(hgain, dtype=np.float64)
    return Hits(
        n_queries=n, level=1,
        num_rel=np.bincount(judged_q[judged_rel >= 1], minlength=n),
        num_ret=np.asarray(num_ret, dtype=np.int64),
        q=q, rank=rank, gain=gain, nth=np.asarray(hnth, dtype=np.int64),
        gq=q, grank=rank, ggain=gain, jq=None, jrank=None, jrel=None,
        ideal_q=ideal_q, ideal_pos=np.asarray(ipos, dtype=np.int64),
        ideal_gain=np.asarray(igain, dtype=np.float64),
        judged_q=judged_q, judged_rel=judged_rel)


@lru_cache(maxsize=64)
def _names(k: int) -> tuple[str, ...]:
    return tuple(f"{name}@{k}" for name in RANK_METRICS)


@lru_cache(maxsize=64)
def _specs(k: int) -> tuple[tuple[str, MetricSpec], ...]:
    from queryeval.metrics.ranking import parse_metric

    return tuple((name, parse_metric(f"{name}@{k}")) for name in RANK_METRICS)


#: ``1 / log2(r + 1)`` for 1-based ranks r, computed as the engine's nDCG kernel computes it
#: (``1.0 / np.log2(rank0 + 2.0)`` on an array); grown on demand.
_discounts = 1.0 / np.log2(np.arange(64, dtype=np.int64) + 2.0)


def _discount(rank: int) -> float:
    global _discounts
    if rank > _discounts.size:
        _discounts = 1.0 / np.log2(np.arange(2 * rank, dtype=np.int64) + 2.0)
    return float(_discounts[rank - 1])


def single_identity(relevant: list[dict], exact: bool) -> tuple[str, str] | None:
    """The identity of a question's only relevant chunk when it has exactly one, of
    relevance 1 (the seed's shape: :func:`_single_cut` scores it); otherwise None."""
    if len(relevant) != 1:
        return None
    rel = relevant[0]
    if int(rel.get("relevance", 1)) != 1:
        return None
    return _identity(str(rel.get("chunk_id") or ""), str(rel.get("content_hash") or ""), exact)


_single_identity = single_identity  # the name tests/tasks/test_retrieval_fastpath.py imports


def single_rank(chunks: list[dict], identity: tuple[str, str], exact: bool) -> int | None:
    """The 1-based rank of the first chunk of ``chunks`` that is the relevant chunk
    ``identity`` (by hash, letter case per ``exact``; by id, "" matching nothing, as in
    :meth:`Matcher.candidates`), or None."""
    kind, key = identity
    rank = None
    if kind == "hash":
        for pos, c in enumerate(chunks):
            digest = str(c.get("content_hash") or "")
            if (digest if exact else digest.lower()) == key:
                rank = pos + 1
                break
    elif key:  # a chunk id ("" matches nothing, as in Matcher.candidates)
        for pos, c in enumerate(chunks):
            chunk_id = c.get("chunk_id")
            if chunk_id not in (None, "") and str(chunk_id) == key:
                rank = pos + 1
                break
    return rank


def single_figures(rank: int | None, k: int) -> tuple[float, ...]:
    """A single-relevant question's figures at k (``RANK_METRICS`` order) from the rank of
    its relevant chunk in the uncut ranking: see :func:`_single_cut`. Recall is the
    engine's :func:`~queryeval.metrics.ranking.recall_from_ranks` of one item found at rank
    r <= k (1/1), MRR and MAP its :func:`~queryeval.metrics.ranking.reciprocal_rank`."""
    if rank is not None and rank <= k:
        inv = reciprocal_rank(rank)
        return (1.0, 1.0, inv, _discount(rank), inv, 1.0 / k)
    return _ZEROS


_ZEROS = (0.0,) * len(RANK_METRICS)


def _single_cut(chunks: list[dict], identity: tuple[str, str], k: int, exact: bool) -> Cut:
    """:func:`score_cut` for one binary relevant chunk, computed directly. With one relevant
    judgement of gain 1 (num_rel = 1, IDCG = 1) the engine's kernels reduce, for the 1-based
    rank r of the first retrieved chunk that matches it (later matches count as non-relevant,
    as in :meth:`Matcher.assign`), to: recall = hit_rate = 1, mrr = map = 1/r, precision =
    1/k, ndcg = 1/log2(r + 1) when r <= k, all 0 otherwise. Equal to the engine's figures bit
    for bit (tests/tasks/test_retrieval_fastpath.py, a property test on random rankings)."""
    rank = single_rank(chunks, identity, exact)
    return Cut(chunks=chunks, rank=rank, found=0 if rank is None else 1, scores=single_scores(rank, k))


def single_scores(rank: int | None, k: int) -> dict[str, float]:
    """:func:`single_figures` as a record's ``scores`` (``recall@k``, ... in ``RANK_METRICS``
    order): a fresh copy of the one dict each (rank, k) gives."""
    return _single_scores(rank, k).copy()


@lru_cache(maxsize=4096)
def _single_scores(rank: int | None, k: int) -> dict[str, float]:
    return dict(zip(_names(k), single_figures(rank, k), strict=True))


single_cut = _single_cut


def score_cuts(items: list[tuple[list[dict], list[dict]]], k: int, exact: bool) -> list[Cut]:
    """:func:`score_cut` for many questions at once: questions with one relevant chunk of
    relevance 1 directly (:func:`_single_cut`), the others in one pass of the engine's
    kernels."""
    out: list[Cut | None] = [None] * len(items)
    rest: list[int] = []
    for i, (chunks, relevant) in enumerate(items):
        identity = single_identity(relevant, exact)
        if identity is None:
            rest.append(i)
        else:
            out[i] = _single_cut(chunks, identity, k, exact)
    if rest:
        for i, cut in zip(rest, _engine_cuts([items[i] for i in rest], k, exact), strict=True):
            out[i] = cut
    return out  # type: ignore[return-value]


def _engine_cuts(items: list[tuple[list[dict], list[dict]]], k: int, exact: bool) -> list[Cut]:
    """The figures of many questions through the engine's kernels (one pass)."""
    from queryeval.metrics.ranking._evaluate import _KERNELS as KERNELS

    matchers = [Matcher(relevant, exact) for _, relevant in items]
    assigned = [m.assign(chunks) for m, (chunks, _) in zip(matchers, items, strict=True)]
    hits = _hits(assigned, [rel for _, rel in items], [len(chunks) for chunks, _ in items])
    values = {f"{name}@{k}": KERNELS[spec.measure](hits, spec) for name, spec in _specs(k)}
    found = np.bincount(hits.q, minlength=hits.n_queries)
    first = np.full(hits.n_queries, -1, dtype=np.int64)
    lead = hits.nth == 0
    first[hits.q[lead]] = hits.rank[lead]
    return [Cut(chunks=chunks, rank=int(first[i]) + 1 if first[i] >= 0 else None, found=int(found[i]),
                scores={name: float(v[i]) for name, v in values.items()})
            for i, (chunks, _) in enumerate(items)]


def score_cut(chunks: list[dict], relevant: list[dict], k: int, exact: bool) -> Cut:
    """The figures of the ranking ``chunks`` (already cut to k) against ``relevant``: the
    engine's kernels (``queryeval.metrics.ranking``: recall, hit_rate, mrr, ndcg, map,
    precision at k, trec_eval's definitions) on the question's judged ranking."""
    return score_cuts([(chunks, relevant)], k, exact)[0]
