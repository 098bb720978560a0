"""The cases a foreign record becomes, shared by the format readers.

* a retrieval question: ``target.retrieval`` with ``relevant`` (each ``{chunk_id?,
  content_hash?, relevance?}``) and ``answer`` (the reference answer, if any). With exactly one
  relevant chunk of relevance 1, the seed's single-chunk fields (``chunk_id``,
  ``content_hash``) are filled too, so a task reading only those scores it the same;
* an answer-only sample: ``target.reference`` (``answer`` and ``aliases``), the free-form
  task's target.

Case ids: the record's own id when it has one, else the seed's ``qa_pair_id`` of
(``""``, question, reference answer): an MD5 read as a UUID, the same for the suite and for
recorded outputs of the same question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.errors import InputError
from queryeval.suite.common import Suite, first_error, hash_files
from queryeval.suite.models import Case
from queryeval.suite.retrieval import qa_pair_id
from queryeval.suite.yamlsrc import format_loc


def case_id(own: Any, question: str, answer: str) -> str:
    if own is not None and str(own).strip():
        return str(own).strip()
    return qa_pair_id("", question, answer)


def retrieval_target(relevant: list[dict], answer: str = "", **extra: str) -> dict:
    target: dict[str, Any] = {"relevant": relevant, "answer": answer, **extra}
    if len(relevant) == 1 and relevant[0].get("relevance", 1) == 1:
        for key in ("chunk_id", "content_hash"):
            if relevant[0].get(key):
                target[key] = relevant[0][key]
    return {"retrieval": target}


def reference_target(answers: list[str]) -> dict:
    return {"reference": {"answer": answers[0], "aliases": list(answers[1:])}}


def make_case(cid: str, turns: list[dict], target: dict, *, path: Path, where: dict,
              metadata: dict | None = None, tags: list[str] | None = None) -> Case:
    """A case whose last user turn carries ``target``; a bad value is one InputError."""
    turns = [dict(t) for t in turns]
    last = max(i for i, t in enumerate(turns) if t["role"] == "user")
    turns[last]["target"] = target
    question = turns[last]["content"]
    try:
        return Case(id=cid, name=question[:80], tags=tags or [], metadata=metadata or {},
                    conversation=turns)
    except ValidationError as exc:
        msg, loc = first_error(exc)
        raise InputError(msg, path=path, field=format_loc(loc) or None, **where) from None


def suite_of(cases: list[tuple[Case, dict]], path: Path, sources: list[Path],
             root: Path | None = None) -> Suite:
    """An eager suite, refusing an empty one and a repeated id (naming both records)."""
    if not cases:
        raise InputError("suite has no cases", path=path)
    origin: dict[str, tuple[str, int]] = {}
    first: dict[str, dict] = {}
    for case, where in cases:
        if case.id in first:
            was = first[case.id]
            at = f"line {was['line']}" if "line" in was else f"record {was.get('record')}"
            raise InputError(f"duplicate case id {case.id!r} (first at {at}: the same question "
                             "and reference answer, or the same id)", path=path, field="id",
                             **where)
        first[case.id] = where
        origin[case.id] = (str(path), int(where.get("line", 0)))
    return Suite(cases=[c for c, _ in cases], sources=sources, hash=hash_files(sources, root),
                 origin=origin)
