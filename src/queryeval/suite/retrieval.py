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
_MD5 = re.compile(r"^[0-9a-fA-F]{32}$")


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
    case; a run reads the rows again as it goes (:class:`~queryeval.suite.loader.Suite`).
    The rows of one question (one per relevant chunk) are adjacent: a pass holds one question
    at a time; the question again further down is a duplicate naming both lines."""
    return lazy_suite(
        Path(path), _iter_question_cases, empty="no questions", duplicate_field="question",
        duplicate=lambda cid, first: (
            f"duplicate qa_pair_id {cid} (the rows of one question, one per relevant chunk, "
            f"must be adjacent; the same dataset, question and answer as line {first})"),
        kinds={"retrieval"})


@dataclass
class _Question:
    line: int
    values: dict[str, str]
    key: tuple[str, ...]
    cid: str
    relevant: list[dict] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # relevant chunk identity -> its line


_VALUE_KEYS = (*QUESTION_COLUMNS, "id", "relevance")
_RELEVANCE = re.compile(r"[0-9]+")  # ASCII digits only (not ١ or ²)


def _row_values(row: dict, header: list[str], path: Path, line: int) -> dict[str, str]:
    if None in row:
        raise InputError("more fields than the header", path=path, line=line)
    # a short row has None for each header column it lacks (csv.DictReader's restval)
    if None in row.values():
        raise InputError("fewer fields than the header", path=path, line=line)
    get = row.get
    values = {k: (get(k) or "") for k in _VALUE_KEYS}
    if not values["question"].strip():
        raise InputError("empty question", path=path, line=line, field="question")
    digest, chunk_id = values["content_hash"], values["chunk_id"]
    if digest and not _MD5.match(digest):
        raise InputError(f"not an MD5 hex digest: {digest!r}", path=path, line=line,
                         field="content_hash")
    if not digest and not chunk_id:
        raise InputError("no chunk_id and no content_hash: a row needs one to name its relevant "
                         "chunk", path=path, line=line, field="chunk_id")
    relevance = values["relevance"]
    if relevance:
        relevance = relevance.strip()
        if relevance and not _RELEVANCE.fullmatch(relevance):
            raise InputError(f"must be an integer >= 0, got {relevance!r}", path=path, line=line,
                             field="relevance")
    return values


def _read_questions(path: Path) -> Iterator[_Question]:
    """Every question of the file as its rows are read: adjacent rows of one question are
    grouped (a pass holds one question at a time, so a large file streams)."""
    from queryeval.io.files import encoding_error
    from queryeval.suite.common import _near, missing_columns_error

    with _open_csv(path, "suite-lines") as fh:
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames or []
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
        q: _Question | None = None
        header = list(header)
        try:
            for row in reader:
                line = reader.line_num
                values = _row_values(row, header, path, line)
                explicit = values["id"].strip()
                same = (values["dataset"], values["question"], values["answer"])
                # an explicit id names the question; else dataset, question and answer do
                key = ("id", explicit) if explicit else ("qa", *same)
                digest = values["content_hash"]
                identity = f"hash:{digest.lower()}" if digest else f"id:{values['chunk_id']}"
                rel = values["relevance"]
                relevant = {"chunk_id": values["chunk_id"], "content_hash": digest,
                            "relevance": int(rel.strip() or 1) if rel else 1}
                if q is None or key != q.key:
                    # a new question (the common case: one row each): nothing to compare
                    if q is not None:
                        yield q
                    q = _Question(line=line, values=values, key=key,
                                  cid=explicit or qa_pair_id(*same), relevant=[relevant],
                                  names=[values["document_name"]], seen={identity: line})
                    continue
                if same != (q.values["dataset"], q.values["question"], q.values["answer"]):
                    raise InputError(f"duplicate qa_pair_id {explicit} (the id of the question at "
                                     f"line {q.line})", path=path, line=line, field="id")
                if identity in q.seen:
                    raise InputError(
                        f"the same relevant chunk as line {q.seen[identity]} for the same question "
                        "(same dataset, question and answer)", path=path, line=line,
                        field="content_hash" if digest else "chunk_id")
                q.seen[identity] = line
                q.relevant.append(relevant)
                if values["document_name"] not in q.names:
                    q.names.append(values["document_name"])
        except csv.Error as exc:
            raise InputError(f"invalid CSV: {exc}", path=path, line=reader.line_num) from None
        except UnicodeDecodeError as exc:
            raise encoding_error(path, encoding=exc.encoding) from None
        if q is not None:
            yield q


def _iter_question_cases(path: Path) -> Iterator[tuple[int, Case]]:
    """``(line, case)`` for every question of a questions CSV (its first row's line); a bad
    row is one InputError. A question of one row with relevance 1 keeps the seed's target
    (``content_hash``, ``chunk_id``); several rows (or a graded one) list ``relevant``."""
    for q in _read_questions(path):
        values = q.values
        target: dict[str, Any] = {"document_name": " | ".join(q.names), "dataset": values["dataset"],
                                  "answer": values["answer"]}
        if len(q.relevant) == 1 and q.relevant[0]["relevance"] == 1:
            target.update(content_hash=values["content_hash"], chunk_id=values["chunk_id"])
        else:
            target["relevant"] = q.relevant
        yield q.line, Case(
            id=q.cid, name=values["question"][:80], tags=[values["dataset"]] if values["dataset"] else [],
            metadata={"dataset": values["dataset"]},
            conversation=[{"role": "user", "content": values["question"], "target": {
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
