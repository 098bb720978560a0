"""Seed 002 inputs: the questions CSV and the corpus of chunks (JSONL, CSV or Parquet).

Questions CSV columns: ``question, answer, document_name, dataset, chunk_id`` and
``content_hash`` (either may be empty on a row, not both; the ``content_hash`` column may be
left out), an optional ``id`` and an optional ``relevance`` (an integer >= 0, default 1: the
chunk's graded gain). Adjacent rows that share question, answer and dataset (or, when
given, ``id``) are one question with several relevant chunks, one per row. The case id is the reference's ``qa_pair_id``: the 16
raw bytes of MD5 over ``{dataset}||{question}||{answer}`` read as a UUID, unless ``id`` is
non-empty.
"""

from __future__ import annotations

import csv
import hashlib
import operator
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.io.jsonl import iter_jsonl
from queryeval.suite.common import Suite, lazy_suite
from queryeval.suite.models import Case

QUESTION_COLUMNS = ("question", "answer", "document_name", "dataset", "chunk_id", "content_hash")
REQUIRED_COLUMNS = ("question", "answer", "document_name", "dataset", "chunk_id")
"""The columns a questions CSV must have (``content_hash`` may be left out: chunk ids)."""
_MD5 = re.compile(r"[0-9a-fA-F]{32}")  # fullmatch: "…\n" is no digest


def qa_pair_id(dataset: str, question: str, answer: str) -> str:
    """The reference's deterministic id: MD5 bytes of ``dataset||question||answer`` as a UUID."""
    digest = hashlib.md5(f"{dataset}||{question}||{answer}".encode()).digest()  # noqa: S324
    return str(uuid.UUID(bytes=digest))


def content_hash(text: str) -> str:
    """MD5 hex digest of a chunk's content (UTF-8), as the reference compares chunks."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()  # noqa: S324


def _open_csv(path: Path, kind: str):
    from queryeval.io.files import open_text

    return open_text(path, kind)


def read_questions_csv(path: str | Path) -> Suite:
    """Read a seed 002 questions CSV into single-turn cases with ``target.retrieval``.

    The suite is lazy: this pass checks every row (and that ids are unique) and keeps no
    case; a run reads the rows again as it goes (:class:`~queryeval.suite.common.Suite`).
    The rows of one question (one per relevant chunk) are adjacent: a pass holds one question
    at a time; the question again further down is a duplicate naming both lines. The
    checking pass reads the questions' ids without building their cases: a row the reader
    accepts always makes a valid case (tests/suite/test_retrieval_reader.py)."""
    return lazy_suite(
        Path(path), _iter_question_cases, empty="no questions", duplicate_field="question",
        duplicate=lambda cid, first: (
            f"duplicate qa_pair_id {cid} (the rows of one question, one per relevant chunk, "
            f"must be adjacent; the same dataset, question and answer as line {first})"),
        kinds={"retrieval"}, ids=_question_ids)


class _Question:
    """One question as its rows are read: its first row's values (``question, answer,
    document_name, dataset, chunk_id, content_hash``), and, once a second row names another
    of its relevant chunks, every relevant chunk and which line named each."""

    __slots__ = ("cid", "key", "line", "names", "relevance", "relevant", "seen", "values")

    def __init__(self, line: int, values: tuple[str, ...], key: tuple[str, ...], cid: str,
                 relevance: int) -> None:
        self.line = line
        self.values = values
        self.key = key
        self.cid = cid
        self.relevance = relevance  # the first row's
        self.relevant: list[dict] | None = None  # from the second row on
        self.names: list[str] | None = None
        self.seen: dict[str, int] | None = None  # relevant chunk identity -> its line

    def add(self, values: tuple[str, ...], relevance: int, line: int, path: Path) -> None:
        """Another row of this question: one more relevant chunk (the same one twice is an
        InputError naming the row)."""
        if self.seen is None:  # the question's second row: its first chunk, kept apart so far
            first = self.values
            self.seen = {_identity(first[4], first[5]): self.line}
            self.relevant = [{"chunk_id": first[4], "content_hash": first[5],
                              "relevance": self.relevance}]
            self.names = [first[2]]
        chunk_id, digest = values[4], values[5]
        identity = _identity(chunk_id, digest)
        if identity in self.seen:
            raise InputError(
                f"the same relevant chunk as line {self.seen[identity]} for the same question "
                "(same dataset, question and answer)", path=path, line=line,
                field="content_hash" if digest else "chunk_id")
        self.seen[identity] = line
        self.relevant.append({"chunk_id": chunk_id, "content_hash": digest,  # type: ignore[union-attr]
                              "relevance": relevance})
        if values[2] not in self.names:  # type: ignore[operator]
            self.names.append(values[2])  # type: ignore[union-attr]


def _identity(chunk_id: str, digest: str) -> str:
    return f"hash:{digest.lower()}" if digest else f"id:{chunk_id}"


_VALUE_KEYS = (*QUESTION_COLUMNS, "id", "relevance")
"""The cells a row is read for, in this order (a column the header lacks reads as "")."""
_RELEVANCE = re.compile(r"[0-9]+")  # ASCII digits only (not ١ or ²)
_MAX_RELEVANCE = 2**31 - 1  # trec_eval's range, as RelevantChunk.relevance


def _row_error(values: tuple[str, ...], path: Path, line: int) -> int:
    """The relevance of a row the reader's quick test did not pass (a relevance given, or
    something wrong), or the InputError naming the row's first bad field."""
    question, _answer, _name, _dataset, chunk_id, digest, _id, relevance = values
    if not question.strip():
        raise InputError("empty question", path=path, line=line, field="question")
    if digest and not _MD5.fullmatch(digest):
        raise InputError(f"not an MD5 hex digest: {digest!r}", path=path, line=line,
                         field="content_hash")
    if not digest and not chunk_id:
        raise InputError("no chunk_id and no content_hash: a row needs one to name its relevant "
                         "chunk", path=path, line=line, field="chunk_id")
    relevance = relevance.strip()
    if not relevance:
        return 1
    if not _RELEVANCE.fullmatch(relevance):
        raise InputError(f"must be an integer >= 0, got {relevance!r}", path=path, line=line,
                         field="relevance")
    digits = relevance.lstrip("0") or "0"
    if len(digits) > len(str(_MAX_RELEVANCE)) or int(digits) > _MAX_RELEVANCE:
        raise InputError(f"must be an integer from 0 to {_MAX_RELEVANCE} (trec_eval's range), "
                         f"got {relevance[:20]!r}", path=path, line=line, field="relevance")
    return int(digits)


def _read_questions(path: Path) -> Iterator[_Question]:
    """Every question of the file as its rows are read: adjacent rows of one question are
    grouped (a pass holds one question at a time, so a large file streams).

    Rows are read as csv.DictReader reads them (a blank line skipped; with a repeated column
    name the last cell counts; a row longer or shorter than the header is an error), through
    ``csv.reader`` and one ``itemgetter`` per row instead of a dict per row."""
    from queryeval.io.files import encoding_error
    from queryeval.suite.common import _near, missing_columns_error

    with _open_csv(path, "suite-lines") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader, None) or []
        except csv.Error as exc:
            raise InputError(f"invalid CSV header: {exc}", path=path, line=1) from None
        except UnicodeDecodeError as exc:
            raise encoding_error(path, encoding=exc.encoding) from None
        if any(c not in header for c in REQUIRED_COLUMNS):
            raise missing_columns_error(path, list(header), "a retrieval questions CSV",
                                        REQUIRED_COLUMNS, "(content_hash optional)")
        others = [h for h in header if h not in QUESTION_COLUMNS]
        if "content_hash" not in header and _near("content_hash", others) is not None:
            # an optional column misspelt would silently switch to matching by chunk id
            raise missing_columns_error(path, list(header), "a retrieval questions CSV",
                                        QUESTION_COLUMNS)
        width = len(header)
        column = {name: i for i, name in enumerate(header)}  # a repeated name: its last cell
        # a column the header lacks reads the "" appended to each row (at index width)
        pick = operator.itemgetter(*(column.get(k, width) for k in _VALUE_KEYS))
        md5 = _MD5.fullmatch
        q: _Question | None = None
        line = reader.line_num  # the last row read whole (a csv.Error names it, as DictReader)
        try:
            for row in reader:
                if len(row) != width:
                    if not row:  # a blank line
                        continue
                    raise InputError("more fields than the header" if len(row) > width
                                     else "fewer fields than the header",
                                     path=path, line=reader.line_num)
                line = reader.line_num
                row.append("")
                values = pick(row)
                question, answer, _name, dataset, chunk_id, digest, explicit, relevance = values
                if relevance or not question.strip() or not (md5(digest) if digest else chunk_id):
                    relevance = _row_error(values, path, line)  # or the row's relevance
                else:
                    relevance = 1
                if explicit:
                    explicit = explicit.strip()
                # an explicit id names the question; else dataset, question and answer do
                key = ("id", explicit) if explicit else ("qa", dataset, question, answer)
                if q is None or key != q.key:
                    # a new question (the common case: one row each): nothing to compare
                    if q is not None:
                        yield q
                    q = _Question(line, values, key,
                                  explicit or qa_pair_id(dataset, question, answer), relevance)
                    continue
                first = q.values
                if (dataset, question, answer) != (first[3], first[0], first[1]):
                    raise InputError(f"duplicate qa_pair_id {explicit} (the id of the question at "
                                     f"line {q.line})", path=path, line=line, field="id")
                q.add(values, relevance, line, path)
        except csv.Error as exc:
            raise InputError(f"invalid CSV: {exc}", path=path, line=line) from None
        except UnicodeDecodeError as exc:
            raise encoding_error(path, encoding=exc.encoding) from None
        if q is not None:
            yield q


def _question_ids(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, case id)`` of every question, as :func:`_iter_question_cases` yields their
    cases (every row checked, no case built)."""
    for q in _read_questions(path):
        yield q.line, q.cid


def _iter_question_cases(path: Path) -> Iterator[tuple[int, Case]]:
    """``(line, case)`` for every question of a questions CSV (its first row's line); a bad
    row is one InputError. A question of one row with relevance 1 keeps the seed's target
    (``content_hash``, ``chunk_id``); several rows (or a graded one) list ``relevant``."""
    for q in _read_questions(path):
        question, answer, name, dataset, chunk_id, digest = q.values[:6]
        target: dict[str, Any]
        if q.relevant is None:  # one row
            target = {"document_name": name, "dataset": dataset, "answer": answer}
            if q.relevance == 1:
                target.update(content_hash=digest, chunk_id=chunk_id)
            else:
                target["relevant"] = [{"chunk_id": chunk_id, "content_hash": digest,
                                       "relevance": q.relevance}]
        else:
            target = {"document_name": " | ".join(q.names),  # type: ignore[arg-type]
                      "dataset": dataset, "answer": answer, "relevant": q.relevant}
        yield q.line, Case(
            id=q.cid, name=question[:80], tags=[dataset] if dataset else [],
            cluster=str(target["document_name"]),  # questions on one document
            metadata={"dataset": dataset},
            conversation=[{"role": "user", "content": question, "target": {
                "retrieval": target}}],
        )


@dataclass
class Chunk:
    chunk_id: str
    content: str
    document_name: str = ""
    dataset: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""

    def __post_init__(self) -> None:
        if not self.content_hash:
            self.content_hash = content_hash(self.content)


def _chunk(rec: dict, path: Path, where: dict) -> Chunk:
    if "chunk_id" not in rec and "content" not in rec and "_id" in rec:  # a BEIR corpus.jsonl
        rec = {"chunk_id": rec["_id"], "content": rec.get("text"),
               "document_name": rec.get("title") or "",
               **{k: v for k, v in rec.items() if k not in ("_id", "text", "title")}}
    for key in ("chunk_id", "content"):
        value = rec.get(key)
        if value is None or (isinstance(value, str) and not value and key == "chunk_id"):
            raise InputError("field required", path=path, field=key, **where)
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise InputError(f"must be text, got {type(value).__name__}", path=path, field=key, **where)
    meta = {k: v for k, v in rec.items() if k not in ("chunk_id", "content", "document_name", "dataset")}
    return Chunk(chunk_id=str(rec["chunk_id"]), content=str(rec["content"]),
                 document_name=str(rec.get("document_name") or ""), dataset=str(rec.get("dataset") or ""),
                 metadata=meta)


def read_corpus(path: str | Path) -> list[Chunk]:
    """Chunks from JSONL, CSV or Parquet (columns chunk_id, content, document_name, dataset,
    and any metadata). Duplicate chunk ids are an error."""
    from queryeval.io.files import check_input, encoding_error

    path = Path(path)
    check_input(path, "corpus")
    suffix = path.suffix.lower()
    chunks: list[Chunk] = []
    seen: dict[str, str] = {}

    def add(rec: dict, where: dict) -> None:
        chunk = _chunk(rec, path, where)
        if chunk.chunk_id in seen:
            raise InputError(f"duplicate chunk_id {chunk.chunk_id!r} (first at {seen[chunk.chunk_id]})",
                             path=path, field="chunk_id", **where)
        seen[chunk.chunk_id] = f"line {where['line']}" if "line" in where else f"row {where['record']}"
        chunks.append(chunk)

    if suffix == ".jsonl":
        for line, rec in iter_jsonl(path, kind="corpus"):
            add(rec, {"line": line})
    elif suffix == ".csv":
        with _open_csv(path, "corpus") as fh:
            reader = csv.DictReader(fh)
            try:
                for rec in reader:
                    add(rec, {"line": reader.line_num})
            except csv.Error as exc:
                raise InputError(f"invalid CSV: {exc}", path=path, line=reader.line_num) from None
            except UnicodeDecodeError as exc:
                raise encoding_error(path, encoding=exc.encoding) from None
    elif suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError("reading Parquet needs pyarrow: pip install pyarrow", path=path) from None
        try:
            # to_pylist decodes the strings: invalid UTF-8 in a column fails there
            records = pq.read_table(path).to_pylist()
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for bad files
            raise InputError(f"invalid Parquet: {' '.join(str(exc).split())[:300]}", path=path) from None
        for i, rec in enumerate(records):
            add(rec, {"record": str(i)})
    else:
        raise InputError(f"unknown corpus format {suffix!r}; expected .jsonl, .csv or .parquet", path=path)
    if not chunks:
        raise InputError("corpus has no chunks", path=path)
    return chunks
