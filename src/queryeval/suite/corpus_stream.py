"""A corpus of chunks read in one streaming pass, for corpora too large to hold as objects.

:func:`open_corpus` reads a JSONL, CSV or Parquet corpus (the columns of
:func:`~queryeval.suite.retrieval.read_corpus`, validated the same way, duplicate ids refused)
once, keeping only what a search needs: the chunk ids in order, each chunk's content MD5,
and where the chunk lies (the byte span of its JSONL line, its Parquet row). The texts are
streamed again in batches when an index is built (:meth:`StreamedCorpus.text_batches`) and a
chunk is read back on demand (:meth:`StreamedCorpus.chunk`) for the few that are retrieved.
A CSV corpus keeps its texts in memory (a CSV record has no fixed span once quoted
newlines are allowed); convert a very large one to JSONL or Parquet.

:attr:`StreamedCorpus.content_fingerprint` (sha256 over the chunks' content MD5s, in order)
keys everything derived from the texts, e.g. the embedding matrix cache: any change of a
text, of the order or of the number of chunks gives another fingerprint.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.suite.retrieval import Chunk, _chunk

__all__ = ["StreamedCorpus", "open_corpus"]


class StreamedCorpus:
    """Chunk ids, content hashes and locations of a corpus file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.suffix = path.suffix.lower()
        self.ids: list[str] = []
        self._hashes = _Digests()  # 16 bytes per chunk, not a bytes object each
        self._spans = _Spans()  # JSONL: (offset, size) of each chunk's line, 16 bytes per chunk
        self._texts: list[str] = []  # CSV only
        self._position: dict[str, int] | None = None
        self._first_by_hash: dict[bytes, int] | None = None
        self._fd: int | None = None
        self._table: Any = None

    # -- building ------------------------------------------------------------------------
    def _add(self, chunk: Chunk, where: dict, seen: dict[str, str]) -> None:
        if chunk.chunk_id in seen:
            raise InputError(f"duplicate chunk_id {chunk.chunk_id!r} (first at {seen[chunk.chunk_id]})",
                             path=self.path, field="chunk_id", **where)
        seen[chunk.chunk_id] = f"line {where['line']}" if "line" in where else f"row {where['record']}"
        self.ids.append(chunk.chunk_id)
        self._hashes.append(bytes.fromhex(chunk.content_hash))

    def _scan(self) -> None:
        seen: dict[str, str] = {}
        for where, chunk, span in self._iter_chunks(with_spans=True):
            self._add(chunk, where, seen)
            if span is not None:
                self._spans.append(span)
            if self.suffix == ".csv":
                self._texts.append(chunk.content)
        if not self.ids:
            raise InputError("corpus has no chunks", path=self.path)

    def _iter_chunks(self, *, with_spans: bool = False) -> Iterator[tuple[dict, Chunk, tuple[int, int] | None]]:
        path = self.path
        if self.suffix == ".jsonl":
            from queryeval.io.jsonl import iter_jsonl_spans

            for line, offset, size, rec in iter_jsonl_spans(path, kind="corpus"):
                where = {"line": line}
                yield where, _chunk(rec, path, where), (offset, size)
        elif self.suffix == ".csv":
            from queryeval.io.files import encoding_error
            from queryeval.suite.retrieval import _open_csv

            with _open_csv(path, "corpus") as fh:
                reader = csv.DictReader(fh)
                try:
                    for rec in reader:
                        where = {"line": reader.line_num}
                        yield where, _chunk(rec, path, where), None
                except csv.Error as exc:
                    raise InputError(f"invalid CSV: {exc}", path=path, line=reader.line_num) from None
                except UnicodeDecodeError as exc:
                    raise encoding_error(path, encoding=exc.encoding) from None
        elif self.suffix == ".parquet":
            pf = _parquet_file(path)
            row = 0
            try:
                for batch in pf.iter_batches(batch_size=8192):
                    for rec in batch.to_pylist():
                        where = {"record": str(row)}
                        yield where, _chunk(rec, path, where), None
                        row += 1
            except InputError:
                raise
            except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for bad files
                raise InputError(f"invalid Parquet: {' '.join(str(exc).split())[:300]}", path=path) from None
        else:
            raise InputError(f"unknown corpus format {self.suffix!r}; expected .jsonl, .csv or .parquet",
                             path=path)

    # -- reading -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def content_fingerprint(self) -> str:
        """sha256 hex over the chunks' content MD5s in order (ids do not change vectors)."""
        digest = hashlib.sha256(len(self._hashes).to_bytes(8, "little"))
        digest.update(self._hashes.raw)  # = updating with each chunk's 16-byte MD5 in order
        return digest.hexdigest()

    def text_batches(self, batch_size: int = 8192) -> Iterator[list[str]]:
        """The chunk texts in corpus order, ``batch_size`` at a time (the file is re-read)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if self.suffix == ".csv":
            for start in range(0, len(self._texts), batch_size):
                yield self._texts[start : start + batch_size]
            return
        batch: list[str] = []
        if self.suffix == ".jsonl":
            yield from self._jsonl_text_batches(batch_size)
            return
        for _where, chunk, _span in self._iter_chunks():
            batch.append(chunk.content)
            if len(batch) == batch_size:
                yield batch
                batch = []
        if batch:
            yield batch

    def _jsonl_text_batches(self, batch_size: int) -> Iterator[list[str]]:
        """The JSONL texts again, read at the spans the validating scan recorded (the lines
        are known to be valid, so the stdlib parser reads them: several times faster)."""
        batch: list[str] = []
        with self.path.open("rb") as fh:
            for i, (offset, size) in enumerate(self._spans):
                fh.seek(offset)
                content = json.loads(fh.read(size))["content"]
                text = content if isinstance(content, str) else str(content)
                if hashlib.md5(text.encode("utf-8")).digest() != self._hashes[i]:  # noqa: S324
                    raise InputError("the corpus file changed while the run was using it",
                                     path=self.path, record=str(i))
                batch.append(text)
                if len(batch) == batch_size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def position(self, chunk_id: str) -> int | None:
        """Index of the chunk with this id, or ``None``."""
        if self._position is None:
            self._position = {cid: i for i, cid in enumerate(self.ids)}
        return self._position.get(chunk_id)

    def chunk(self, i: int) -> Chunk:
        """The ``i``-th chunk, read back from the file (JSONL, Parquet) or memory (CSV)."""
        i = int(i)
        if not 0 <= i < len(self.ids):
            raise IndexError(f"chunk {i} of a corpus of {len(self.ids)}")
        where = {"line": i}
        if self.suffix == ".jsonl":
            from queryeval.io.jsonl import read_json_span

            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
            rec = read_json_span(self._fd, *self._spans[i])
        elif self.suffix == ".parquet":
            if self._table is None:
                import pyarrow.parquet as pq

                self._table = pq.read_table(self.path, memory_map=True)
            rec = self._table.slice(i, 1).to_pylist()[0]
            where = {"record": str(i)}
        else:
            rec = {"chunk_id": self.ids[i], "content": self._texts[i]}
        chunk = _chunk(rec, self.path, where)
        if bytes.fromhex(chunk.content_hash) != self._hashes[i]:
            raise InputError("the corpus file changed while the run was using it", path=self.path)
        return chunk

    # -- the read-only sequence a task uses (``read_corpus``'s list, without the list) --------
    def __getitem__(self, i: int) -> Chunk:
        return self.chunk(i)

    def __iter__(self) -> Iterator[Chunk]:
        """Every chunk in corpus order, streamed from the file."""
        if self.suffix == ".csv":
            for i in range(len(self.ids)):
                yield self.chunk(i)
            return
        for _where, chunk, _span in self._iter_chunks():
            yield chunk

    def __reversed__(self) -> Iterator[Chunk]:
        for i in range(len(self.ids) - 1, -1, -1):
            yield self.chunk(i)

    def get(self, chunk_id: str, default: Chunk | None = None) -> Chunk | None:
        """The chunk with this id (read back from the file), or ``default``."""
        i = self.position(chunk_id)
        return default if i is None else self.chunk(i)

    def find_hash(self, md5_hex: str) -> Chunk | None:
        """The first chunk whose content MD5 is ``md5_hex`` (any letter case), or ``None``."""
        try:
            want = bytes.fromhex(md5_hex)
        except ValueError:
            return None
        if self._first_by_hash is None:
            first: dict[bytes, int] = {}
            for i, h in enumerate(self._hashes):
                first.setdefault(h, i)
            self._first_by_hash = first
        i = self._first_by_hash.get(want)
        return None if i is None else self.chunk(i)

    def hash_lookup(self) -> _HashLookup:
        """A ``.get(md5_hex)`` view for callers written for a ``{hash: chunk}`` dict."""
        return _HashLookup(self)

    def close(self) -> None:
        """Release the open file (reopened on the next :meth:`chunk`)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._table = None


class _Digests:
    """A list of 16-byte MD5 digests packed in one bytearray."""

    def __init__(self) -> None:
        self.raw = bytearray()

    def append(self, digest: bytes) -> None:
        if len(digest) != 16:
            raise ValueError("an MD5 digest has 16 bytes")
        self.raw += digest

    def __len__(self) -> int:
        return len(self.raw) // 16

    def __getitem__(self, i: int) -> bytes:
        if not 0 <= i < len(self):
            raise IndexError(i)
        return bytes(self.raw[16 * i : 16 * i + 16])

    def __iter__(self) -> Iterator[bytes]:
        for i in range(len(self)):
            yield bytes(self.raw[16 * i : 16 * i + 16])


class _Spans:
    """``(offset, size)`` pairs in two int64 arrays."""

    def __init__(self) -> None:
        self._offsets = array("q")
        self._sizes = array("q")

    def append(self, span: tuple[int, int]) -> None:
        self._offsets.append(span[0])
        self._sizes.append(span[1])

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, i: int) -> tuple[int, int]:
        return self._offsets[i], self._sizes[i]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._offsets, self._sizes, strict=True)


class _HashLookup:
    def __init__(self, corpus: StreamedCorpus) -> None:
        self._corpus = corpus

    def get(self, md5_hex: str, default: Chunk | None = None) -> Chunk | None:
        found = self._corpus.find_hash(str(md5_hex))
        return default if found is None else found


def _parquet_file(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install pyarrow", path=path) from None
    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise InputError(f"invalid Parquet: {' '.join(str(exc).split())[:300]}", path=path) from None


def open_corpus(path: str | os.PathLike[str]) -> StreamedCorpus:
    """Scan a corpus file once (validating every record) into a :class:`StreamedCorpus`."""
    from queryeval.io.files import check_input

    path = Path(path)
    check_input(path, "corpus")
    corpus = StreamedCorpus(path)
    corpus._scan()
    return corpus
