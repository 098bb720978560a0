"""Seed 002 scoring of one question: which retrieved chunks are relevant, and its ranking
figures through the trec_eval-exact engine (:mod:`queryeval.metrics.ranking`).

A relevant chunk is identified by its content hash (the seed's rule: MD5 hex digest of the
content, letter case ignored unless ``hash_case=exact``) when it has one, by its chunk id
otherwise. A record's relevant chunks are ``expected_chunks`` (several, graded) or else its
one ``expected_chunk`` (the seed's layout, relevance 1).

Each relevant chunk is one judged document: the first retrieved chunk that matches it is
that document; a later retrieved chunk matching only already-found relevant chunks counts as
non-relevant (trec_eval credits a document once). The cut ranking is handed to the engine
with strictly decreasing scores, so its order is exactly the retrieved order.
"""

from __future__ import annotations

from dataclasses import dataclass

from queryeval.metrics.ranking import evaluate

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


def _identity(chunk_id: str, digest: str, exact: bool) -> tuple[str, str]:
    if digest:
        return ("hash", digest if exact else digest.lower())
    return ("id", chunk_id)


class Matcher:
    """Which relevant chunk (by index) a retrieved chunk is, for one question."""

    def __init__(self, relevant: list[dict], exact: bool) -> None:
        self.relevant = relevant
        self.exact = exact
        self.by_identity: dict[tuple[str, str], list[int]] = {}
        for i, rel in enumerate(relevant):
            key = _identity(str(rel.get("chunk_id") or ""), str(rel.get("content_hash") or ""), exact)
            self.by_identity.setdefault(key, []).append(i)

    def candidates(self, chunk: dict) -> list[int]:
        """Every relevant chunk the retrieved ``chunk`` matches (by hash, then by id)."""
        digest = str(chunk.get("content_hash") or "")
        out = list(self.by_identity.get(("hash", digest if self.exact else digest.lower()), ()))
        chunk_id = chunk.get("chunk_id")
        if chunk_id not in (None, ""):
            out += self.by_identity.get(("id", str(chunk_id)), ())
        return out

    def is_relevant(self, chunk: dict) -> bool:
        """Whether ``chunk`` is one of the question's relevant chunks (relevance > 0)."""
        return any(int(self.relevant[i].get("relevance", 1)) > 0 for i in self.candidates(chunk))

    def assign(self, chunks: list[dict]) -> list[int | None]:
        """For each retrieved chunk, the relevant chunk it is credited as (each at most once)."""
        used: set[int] = set()
        out: list[int | None] = []
        for c in chunks:
            pick = next((i for i in self.candidates(c) if i not in used), None)
            if pick is not None:
                used.add(pick)
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


def score_cut(chunks: list[dict], relevant: list[dict], k: int, exact: bool) -> Cut:
    """The figures of the ranking ``chunks`` (already cut to k) against ``relevant``."""
    matcher = Matcher(relevant, exact)
    assigned = matcher.assign(chunks)
    qrels = {"q": {f"rel{i}": int(r.get("relevance", 1)) for i, r in enumerate(relevant)}}
    n = len(chunks)
    docs = {(f"rel{a}" if a is not None else f"ret{pos}"): float(n - pos)
            for pos, a in enumerate(assigned)}
    names = [f"{m}@{k}" for m in RANK_METRICS]
    result = evaluate(qrels, {"q": docs} if docs else {}, names)
    gains = [None if a is None else int(relevant[a].get("relevance", 1)) for a in assigned]
    hits = [pos for pos, g in enumerate(gains, start=1) if g is not None and g > 0]
    return Cut(chunks=chunks, rank=hits[0] if hits else None, found=len(hits),
               scores={name: float(result[name]) for name in names})
