"""queryeval's own records in other containers: a JSON array of cases (or ``{"data":
[...]}``), and retrieval question rows (the questions CSV's columns) in xlsx, Parquet, JSON
or a saved HF dataset.

Question rows: ``question`` plus ``chunk_id`` and/or ``content_hash``, and optionally
``answer``, ``document_name``, ``dataset``, ``id``, ``relevance``. Rows sharing dataset,
question and answer are one question with several relevant chunks, in row order (the case
id is the seed's ``qa_pair_id`` unless ``id`` is given).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from queryeval.errors import InputError
from queryeval.suite.common import first_error, resolve_sources
from queryeval.suite.foreign import build
from queryeval.suite.foreign.records import Record, text
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import format_loc

_MD5 = re.compile(r"^[0-9a-fA-F]{32}$")


def own_cases(records: list[Record], path: Path) -> list[tuple[Case, dict]]:
    out = []
    for rec in records:
        try:
            case = Case.model_validate(rec.data)
        except ValidationError as exc:
            msg, loc = first_error(exc)
            raise InputError(msg, path=path, field=format_loc(loc) or None, **rec.where) from None
        resolve_sources(case, path.parent if path.is_file() else path)
        out.append((case, rec.where))
    return out


def _relevance(rec: Record, path: Path) -> int:
    """An integer gain >= 0 (default 1): an int, or text of ASCII digits (a table's cell); not
    true, 2.0 or another script's digits, as the questions CSV and the case model refuse them."""
    value = rec.data.get("relevance")
    if value is None or value == "":
        return 1
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        grade = value
    elif text is not None and re.fullmatch(r"[0-9]+", text):
        grade = int(text)
    else:
        grade = -1
    if not 0 <= grade <= 2**31 - 1:
        raise InputError(f"must be a non-negative integer, got {value!r}", path=path,
                         field="relevance", **rec.where)
    return grade


def question_cases(records: list[Record], path: Path) -> list[tuple[Case, dict]]:
    groups: dict[tuple[str, str, str, str], list[tuple[Record, dict]]] = {}
    for rec in records:
        question = text(rec, "question", path)
        if not question.strip():
            raise InputError("empty question", path=path, field="question", **rec.where)
        answer = text(rec, "answer", path, required=False)
        dataset = text(rec, "dataset", path, required=False)
        digest = text(rec, "content_hash", path, required=False)
        chunk_id = text(rec, "chunk_id", path, required=False)
        if digest and not _MD5.match(digest):
            raise InputError(f"not an MD5 hex digest: {digest!r}", path=path,
                             field="content_hash", **rec.where)
        if not digest and not chunk_id:
            raise InputError("a relevant chunk needs a chunk_id or a content_hash", path=path,
                             field="chunk_id", **rec.where)
        entry = {k: v for k, v in (("chunk_id", chunk_id), ("content_hash", digest)) if v}
        entry["relevance"] = _relevance(rec, path)
        key = (text(rec, "id", path, required=False), dataset, question, answer)
        groups.setdefault(key, []).append((rec, entry))
    out = []
    for (own, dataset, question, answer), rows in groups.items():
        first = rows[0][0]
        target = build.retrieval_target(
            [e for _, e in rows], answer, dataset=dataset,
            document_name=text(first, "document_name", path, required=False))
        cid = own or build.qa_pair_id(dataset, question, answer)
        out.append((build.make_case(cid, [{"role": "user", "content": question}], target,
                                    path=path, where=first.where,
                                    metadata={"dataset": dataset},
                                    tags=[dataset] if dataset else []), first.where))
    return out
