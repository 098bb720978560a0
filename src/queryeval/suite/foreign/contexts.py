"""Contexts (texts) matched to corpus chunks, by one documented rule (docs/formats.md).

Rule: a context and a chunk's content match when their *normalised* texts are equal:
Unicode NFKC, every run of whitespace (Unicode's) collapsed to one space, leading and
trailing whitespace stripped. Nothing else is folded (letter case and punctuation count).

* a context matching one chunk is that chunk (its ``chunk_id`` and its content's MD5);
* a context matching several chunks (their texts equal once normalised) is the first of them
  in corpus order; the others share its content hash only when their raw texts are equal;
* a reference context matching no chunk is an error naming the file, record and field (the
  question could never be answered); a *retrieved* context matching no chunk is kept with its
  own text, so it counts as a retrieved chunk that is not relevant unless its MD5 is;
* without a corpus, a context is identified by the MD5 of its text as given (the seed's
  content-hash rule): it matches a chunk whose content is byte-for-byte the same.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.retrieval import Chunk, content_hash


def normalise(text: str) -> str:
    """NFKC, whitespace runs collapsed to one space, stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


class ChunkIndex:
    """The corpus's chunks by normalised content (first in corpus order wins) and by id."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.by_text: dict[str, Chunk] = {}
        self.by_id: dict[str, Chunk] = {}
        for chunk in chunks:
            self.by_text.setdefault(normalise(chunk.content), chunk)
            self.by_id.setdefault(chunk.chunk_id, chunk)
        self._holding: dict[str, _Holding] = {}

    @classmethod
    def load(cls, corpus: str | Path | None) -> ChunkIndex | None:
        if not corpus:
            return None
        from queryeval.suite.retrieval import read_corpus

        return cls(read_corpus(corpus))

    def find(self, text: str) -> Chunk | None:
        return self.by_text.get(normalise(text))

    def holding(self, joined: str, text: str) -> Chunk | None:
        """The first chunk (corpus order) whose normalised content holds ``joined`` and lies
        within ``text`` (normalised): proof that a ``joined``-joined list in ``text`` may
        have an item holding the delimiter, so splitting it at ``joined`` may cut a
        chunk in two."""
        if joined not in self._holding:
            self._holding[joined] = _Holding(joined, self.by_text)
        return self._holding[joined].within(normalise(text))


class _Holding:
    """The chunks holding a delimiter, found within a text without testing each: a chunk
    ``q0|q1|...`` lying within ``t0|t1|...`` has its first delimiter on one of the text's,
    so ``q1`` is the text's next piece (a chunk of three pieces or more) or a prefix of it
    (two pieces): looked up by that piece, or by its first :data:`KEY` characters."""

    KEY = 8

    def __init__(self, joined: str, by_text: dict[str, Chunk]) -> None:
        self.joined = joined
        self.whole: dict[str, list[tuple[int, str, Chunk]]] = {}
        self.prefix: dict[str, list[tuple[int, str, Chunk]]] = {}
        for order, (norm, chunk) in enumerate(by_text.items()):
            pieces = norm.split(joined)
            if len(pieces) > 2:
                self.whole.setdefault(pieces[1], []).append((order, norm, chunk))
            elif len(pieces) == 2:
                self.prefix.setdefault(pieces[1][:self.KEY], []).append((order, norm, chunk))
        self.lengths = sorted({len(k) for k in self.prefix})

    def within(self, text: str) -> Chunk | None:
        if not self.whole and not self.prefix:
            return None
        best: tuple[int, Chunk] | None = None
        for piece in text.split(self.joined)[1:]:
            found = list(self.whole.get(piece, ()))
            for n in self.lengths:
                found += self.prefix.get(piece[:n], ())
            for order, norm, chunk in found:
                if (best is None or order < best[0]) and norm in text:
                    best = (order, chunk)
        return None if best is None else best[1]


def relevant_from_texts(texts: Sequence[str], index: ChunkIndex | None, *, path: Path,
                        where: dict, field: str) -> list[dict]:
    """``relevant`` entries for reference contexts: matched to the corpus by the rule above,
    or identified by their own MD5 without a corpus. Repeated contexts count once."""
    out: list[dict] = []
    seen: set[str] = set()
    for i, text in enumerate(texts):
        if index is None:
            entry = {"content_hash": content_hash(text)}
        else:
            chunk = index.find(text)
            if chunk is None:
                shown = " ".join(text.split())[:60]
                raise InputError(f"matches no chunk of the corpus ({shown!r}; compared after "
                                 "NFKC and whitespace collapsing, see docs/formats.md)",
                                 path=path, field=f"{field}[{i}]", **where)
            entry = {"chunk_id": chunk.chunk_id, "content_hash": chunk.content_hash}
        key = entry.get("chunk_id") or entry["content_hash"]
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def relevant_from_ids(graded: Sequence[tuple[str, int]], index: ChunkIndex | None, *,
                      path: Path, where: dict, field: str) -> list[dict]:
    """``relevant`` entries for chunk ids with graded relevance: with a corpus, each id must
    name a chunk (its content hash is filled in); without one, the id alone identifies it."""
    out = []
    for doc, rel in graded:
        entry: dict = {"chunk_id": doc, "relevance": rel}
        if index is not None:
            chunk = index.by_id.get(doc)
            if chunk is None:
                raise InputError(f"chunk {doc!r} is not in the corpus", path=path, field=field,
                                 **where)
            entry["content_hash"] = chunk.content_hash
        out.append(entry)
    return out


def retrieved_from_texts(texts: Sequence[str], index: ChunkIndex | None) -> list[dict]:
    """A recorded answer's retrieved contexts as retrieved chunks, best first: a context
    matching a corpus chunk becomes that chunk (its id and its exact content, so content
    hashes compare); one matching none keeps its own text and no id."""
    out = []
    for text in texts:
        chunk = index.find(text) if index is not None else None
        if chunk is None:
            out.append({"chunk_id": "", "content": text})
        else:
            out.append({"chunk_id": chunk.chunk_id, "content": chunk.content})
    return out
