"""inspect_ai samples (``json_dataset`` / ``csv_dataset``: ``{input, target, id?, metadata?}``)
and OpenAI evals samples (``{input, ideal}``), as answer-only cases (``target.reference``).

``input`` is the question as text, or a chat (a list of ``{role, content}`` messages, a
content given as text or as a list of ``{"type": "text", "text": ...}`` parts): the messages
become the conversation and the last user message carries the target. ``target`` / ``ideal``
is the reference answer, or a list of accepted answers (the first is the answer, the others
its aliases). inspect's ``metadata`` becomes the case's metadata.
"""

from __future__ import annotations

from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.foreign import build
from queryeval.suite.foreign.records import Record, text_list
from queryeval.suite.models import Case

ROLES = ("system", "user", "assistant")


def _content(value: object, path: Path, rec: Record, field: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for j, part in enumerate(value):
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise InputError("only text content is read (a {\"type\": \"text\", \"text\": ...} "
                                 "part)", path=path, field=f"{field}[{j}]", **rec.where)
        return "\n".join(parts)
    raise InputError(f"must be text, got {type(value).__name__}", path=path, field=field,
                     **rec.where)


def _turns(rec: Record, path: Path) -> list[dict]:
    value = rec.data.get("input")
    if isinstance(value, str):
        if not value.strip():
            raise InputError("empty question", path=path, field="input", **rec.where)
        return [{"role": "user", "content": value}]
    if isinstance(value, list) and value:
        turns = []
        for i, msg in enumerate(value):
            where = f"input[{i}]"
            if not isinstance(msg, dict) or msg.get("role") not in ROLES:
                raise InputError(f"a message needs a role ({', '.join(ROLES)}) and a content",
                                 path=path, field=where, **rec.where)
            turns.append({"role": msg["role"],
                          "content": _content(msg.get("content"), path, rec, f"{where}.content")})
        if not any(t["role"] == "user" for t in turns):
            raise InputError("the chat has no user message", path=path, field="input",
                             **rec.where)
        return turns
    raise InputError("must be text or a list of chat messages", path=path, field="input",
                     **rec.where)


def to_case(rec: Record, path: Path, answer_field: str) -> Case:
    turns = _turns(rec, path)
    answers = text_list(rec, answer_field, path)
    if not answers or not any(a.strip() for a in answers):
        raise InputError("field required (the reference answer)", path=path,
                         field=answer_field, **rec.where)
    metadata = rec.data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError("must be an object", path=path, field="metadata", **rec.where)
    question = next(t["content"] for t in reversed(turns) if t["role"] == "user")
    cid = build.case_id(rec.data.get("id"), question, answers[0])
    return build.make_case(cid, turns, build.reference_target(answers), path=path,
                           where=rec.where, metadata=dict(metadata or {}))


def cases(records: list[Record], path: Path, answer_field: str) -> list[tuple[Case, dict]]:
    return [(to_case(r, path, answer_field), r.where) for r in records]
