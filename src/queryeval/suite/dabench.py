"""Readers for DABench's native JSONL files (InfiAgent-DABench, seed 001).

Three files, one JSON object per line (blank lines are skipped):

* questions: ``{"id", "question", "concepts", "constraints", "format", "file_name", "level"?}``
* labels:    ``{"id", "common_answers": [[name, value], ...]}``
* responses: ``{"id", "response"}``

Ids are integers in DABench's data. We key everything by ``str(id)`` so that ids read from
JSONL, YAML and CSV compare alike: ``0`` and ``"0"`` are the same id (and therefore a
duplicate if both appear in one file). Booleans, floats and other types are rejected.

Every problem raises :class:`~queryeval.errors.InputError` naming the file, the 1-based line
and the field. Unknown keys are ignored (DABench variants carry extra keys, e.g. a response's
model name). :func:`join_cases` turns questions + labels into :class:`DABenchQuestion` cases,
applying DABench's rule for repeated answer names: the last value wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictStr,
    ValidationError,
    field_validator,
)

from queryeval.errors import InputError
from queryeval.io.jsonl import parse_json_line
from queryeval.suite.yamlsrc import format_loc, printable

_NAME = re.compile(r"\w+")

_LENIENT = ConfigDict(extra="ignore", str_strip_whitespace=False)


def _id_to_str(v: Any) -> str:
    """DABench ids: ints in the data, strings accepted; both keyed as ``str``."""
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ValueError(f"id must be an integer or a string, got {type(v).__name__}")
    s = str(v)
    if not s:
        raise ValueError("id must not be empty")
    return s


DABenchId = Annotated[str, BeforeValidator(_id_to_str)]


class _Record(BaseModel):
    """A record read from a JSONL file; remembers its 1-based line."""

    model_config = _LENIENT
    _line: int = PrivateAttr(default=0)

    @property
    def line(self) -> int:
        """1-based line of the record in its file (0 when built in code)."""
        return self._line


class DABenchQuestionRecord(_Record):
    """One line of the questions file."""

    id: DABenchId = Field(description="Question id (an int in DABench), kept as str.")
    question: StrictStr
    concepts: list[StrictStr] = Field(description="Concepts the question involves.")
    constraints: StrictStr
    format: StrictStr = Field(description="Format requirement, e.g. '@mean_fare[value] ...'.")
    file_name: StrictStr = Field(description="CSV file the question is about.")
    level: StrictStr | None = Field(default=None, description="easy / medium / hard (current data).")


class DABenchLabelRecord(_Record):
    """One line of the labels file. ``common_answers`` keeps the file's pairs, duplicates too."""

    id: DABenchId
    common_answers: list[tuple[StrictStr, StrictStr]] = Field(min_length=1)

    @field_validator("common_answers")
    @classmethod
    def _names_are_words(cls, v: list[tuple[str, str]]) -> list[tuple[str, str]]:
        for i, (name, _value) in enumerate(v):
            if not _NAME.fullmatch(name):
                raise ValueError(
                    f"answer name {name!r} (pair {i}) is not made of word characters, so no "
                    "@name[value] in a response could ever match it"
                )
        return v

    def answers(self) -> list[tuple[str, str]]:
        """Distinct names in first-seen order, each with its *last* value (DABench's rule)."""
        return list(dict(self.common_answers).items())


class DABenchResponseRecord(_Record):
    """One line of a responses file. ``response`` may be ``null`` or empty (a missing answer)."""

    id: DABenchId
    response: StrictStr | None


class DABenchQuestion(BaseModel):
    """A scoreable case: a question joined with its labels.

    ``answers`` holds the distinct sub-question names in first-seen order, each with its last
    value in the labels file (``dict(common_answers)``, exactly as the reference evaluator).
    ``label_pairs`` is the number of pairs in the file before that rule.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    question: str
    concepts: list[str]
    constraints: str
    format: str
    file_name: str
    level: str | None = None
    answers: list[tuple[str, str]] = Field(min_length=1)
    label_pairs: int


R = TypeVar("R", bound=_Record)


def _open_lines(path: Path) -> Iterator[tuple[int, str]]:
    from queryeval.io.files import decode_text, read_input_bytes

    text = decode_text(read_input_bytes(path, "labels"), path)
    for n, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            yield n, raw


def _validation_error(exc: ValidationError, path: Path, line: int) -> InputError:
    errors = exc.errors(include_url=False)
    first = errors[0]
    msg = printable(str(first["msg"]))
    msg = msg[:1].lower() + msg[1:]
    if msg.startswith("value error, "):
        msg = msg[len("value error, "):]
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    return InputError(msg, path=path, line=line, field=format_loc(tuple(first["loc"])) or None)


def read_jsonl_records(
    path: str | Path, model: type[R], *, strict: bool = False, allow_duplicates: bool = False
) -> list[R]:
    """Read one ``model`` per non-blank line; reject bad JSON, bad fields and duplicate ids
    (unless ``allow_duplicates``: every line is kept, in file order; ``strict``, for the
    suite's questions and labels: duplicate keys and NaN/Infinity too)."""
    path = Path(path)
    out: list[R] = []
    seen: dict[str, int] = {}
    for n, raw in _open_lines(path):
        data = parse_json_line(raw, path=path, line=n, strict=strict)
        try:
            rec = model.model_validate(data)
        except ValidationError as e:
            raise _validation_error(e, path, n) from None
        rec._line = n
        rid = rec.id  # type: ignore[attr-defined]
        if rid in seen and not allow_duplicates:
            raise InputError(
                f"duplicate id {rid!r} (first on line {seen[rid]})", path=path, line=n, field="id"
            )
        seen.setdefault(rid, n)
        out.append(rec)
    return out


def read_questions(path: str | Path) -> list[DABenchQuestionRecord]:
    """Read a DABench questions file (e.g. ``da-dev-questions.jsonl``)."""
    return read_jsonl_records(path, DABenchQuestionRecord, strict=True)


def read_labels(path: str | Path) -> list[DABenchLabelRecord]:
    """Read a DABench labels file (e.g. ``da-dev-labels.jsonl``)."""
    return read_jsonl_records(path, DABenchLabelRecord, strict=True)


def read_responses(
    path: str | Path, *, allow_duplicates: bool = False
) -> list[DABenchResponseRecord]:
    """Read a responses file (``{"id", "response"}`` per line). A repeated id is refused
    unless ``allow_duplicates`` (InfiAgent's evaluator accepts them; see
    :func:`responses_by_id`'s ``first_non_empty``)."""
    return read_jsonl_records(path, DABenchResponseRecord, allow_duplicates=allow_duplicates)


def join_cases(
    questions: Iterable[DABenchQuestionRecord],
    labels: Iterable[DABenchLabelRecord],
    *,
    labels_path: str | Path | None = None,
) -> list[DABenchQuestion]:
    """Join questions and labels into cases, in labels-file order (the reference's order).

    A label whose id is not a question id raises :class:`InputError` (line of the label).
    A question without a label is not a case (the reference scores labels only); list those
    with :func:`unlabeled_question_ids` to warn about them.
    """
    by_id = {q.id: q for q in questions}
    cases: list[DABenchQuestion] = []
    for lab in labels:
        q = by_id.get(lab.id)
        if q is None:
            raise InputError(
                f"label for unknown question id {lab.id!r}",
                path=labels_path, line=lab.line or None, field="id",
            )
        cases.append(
            DABenchQuestion(
                id=q.id, question=q.question, concepts=list(q.concepts),
                constraints=q.constraints, format=q.format, file_name=q.file_name,
                level=q.level, answers=lab.answers(), label_pairs=len(lab.common_answers),
            )
        )
    return cases


def unlabeled_question_ids(
    questions: Iterable[DABenchQuestionRecord], labels: Iterable[DABenchLabelRecord]
) -> list[str]:
    """Ids of questions that have no label (in questions-file order)."""
    labelled = {lab.id for lab in labels}
    return [q.id for q in questions if q.id not in labelled]


def load_cases(questions_path: str | Path, labels_path: str | Path) -> list[DABenchQuestion]:
    """Read both files and join them (see :func:`join_cases`)."""
    return join_cases(read_questions(questions_path), read_labels(labels_path),
                      labels_path=labels_path)


def responses_by_id(
    responses: Iterable[DABenchResponseRecord],
    case_ids: Iterable[str],
    *,
    path: str | Path | None = None,
    allow_unknown: bool = False,
    first_non_empty: bool = False,
) -> dict[str, str | None]:
    """Map each case id to its response text (``None`` when the file has no line for it).

    A response whose id is not a case id is an :class:`InputError` (a typo there would
    silently turn a real answer into a missing one) unless ``allow_unknown`` (the reference
    ignores such lines). With ``first_non_empty`` (InfiAgent's rule, ``compat=infiagent``)
    an id's first non-empty response wins over later lines and over empty ones; otherwise the
    last line for an id is used (read :func:`read_responses` without ``allow_duplicates`` to
    refuse repeats).
    """
    wanted = list(case_ids)
    known = set(wanted)
    got: dict[str, str | None] = {}
    for r in responses:
        if r.id not in known:
            if allow_unknown:
                continue
            raise InputError(
                f"response for unknown question id {r.id!r}",
                path=path, line=r.line or None, field="id",
            )
        if first_non_empty and got.get(r.id):
            continue
        got[r.id] = r.response
    return {cid: got.get(cid) for cid in wanted}


def string_integer_id(obj: dict) -> bool:
    """Whether a recorded line's id (``id``, else ``case_id``) is a string holding an integer
    as Python writes one (``"5"``, ``"-3"``; not ``"05"``): not equal to the integer id in a
    reader that compares the JSON values (InfiAgent's ``resp["id"] == label_id``)."""
    cid = obj.get("id" if "id" in obj else "case_id")
    if not isinstance(cid, str):
        return False
    try:
        return str(int(cid)) == cid and cid.isascii()
    except ValueError:
        return False
