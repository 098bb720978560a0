"""Readers for seed 004's tables: the data table (fields retrieved over) and the evaluation table.

Data table (CSV, Parquet or xlsx): every column is a field, except description columns. A
column named ``<field>__description`` describes the values of ``<field>`` (or name the column
explicitly with ``descriptions={field: column}``). A field's documents are its distinct
non-empty values, first occurrence order; a value with a description becomes
``value + " " + description`` (the reference's document text), taking the first non-empty
description seen for that value.

Evaluation table (CSV or xlsx): a question column (``Question`` by default) and one
ground-truth column per evaluated field, headed by the field's name; cells are
``;``-separated (see :func:`queryeval.metrics.fields.split_ground_truth`).

All cells are read as text and stripped of surrounding whitespace. Errors name the file, the
line (CSV: the physical line where the record starts; xlsx: the sheet row; Parquet: the
record number) and the column.
"""

from __future__ import annotations

import csv
import datetime as _dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from queryeval.errors import InputError
from queryeval.io.files import XLSX_MAX_CELLS, XLSX_MAX_UNCOMPRESSED, check_input
from queryeval.io.jsonl import iter_csv
from queryeval.metrics.fields import split_ground_truth
from queryeval.suite.yamlsrc import printable

DESCRIPTION_SUFFIX = "__description"
DATA_SUFFIXES = (".csv", ".parquet", ".xlsx")
EVALUATION_SUFFIXES = (".csv", ".xlsx")


@dataclass(frozen=True)
class FieldData:
    """A field's distinct values and, aligned with them, their descriptions (or None)."""

    name: str
    values: list[str]
    descriptions: list[str | None]

    @property
    def documents(self) -> list[str]:
        """What a retriever indexes: ``value`` or ``value + " " + description``."""
        return [v if not d else f"{v} {d}" for v, d in zip(self.values, self.descriptions, strict=True)]


@dataclass
class DataTable:
    path: Path
    fields: dict[str, FieldData]


@dataclass
class EvaluationTable:
    """Questions in table order; ``ground_truth[field][q]`` is question q's item list."""

    path: Path
    questions: list[str]
    ground_truth: dict[str, list[list[str]]]
    lines: list[int] = field(default_factory=list)

    @property
    def fields(self) -> list[str]:
        return list(self.ground_truth)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    return str(value)


def _rows_csv(path: Path) -> Iterator[tuple[int, list[str]]]:
    return iter_csv(path)


def _check_xlsx_size(path: Path) -> None:
    """Refuse a workbook whose zip members expand beyond :data:`XLSX_MAX_UNCOMPRESSED` (a
    few MB of xlsx can hold gigabytes of sheet XML), from the zip's directory, before
    openpyxl reads a member. A member's declared size bounds what zipfile inflates."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            total = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(f"cannot read workbook: {_one_line(exc)}", path=path) from None
    if total > XLSX_MAX_UNCOMPRESSED:
        raise InputError(f"workbook expands to {total // (1 << 20)} MiB of XML, more than the "
                         f"{XLSX_MAX_UNCOMPRESSED >> 20} MiB limit; save the sheet as CSV",
                         path=path)


def _rows_xlsx(path: Path) -> Iterator[tuple[int, list[str]]]:
    from openpyxl import load_workbook

    _check_xlsx_size(path)
    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several types for a bad file
        raise InputError(f"cannot read workbook: {_one_line(exc)}", path=path) from None
    number = 0
    try:
        if not wb.worksheets:
            raise InputError("workbook has no worksheet", path=path)
        ws = wb.worksheets[0]
        cells = 0
        for number, row in enumerate(ws.iter_rows(values_only=True), start=1):
            cells += len(row)
            if cells > XLSX_MAX_CELLS:
                raise InputError(f"sheet has more than {XLSX_MAX_CELLS:,} cells; save it as "
                                 "CSV", path=path, line=number)
            yield number, [_cell(v) for v in row]
    except InputError:
        raise
    except Exception as exc:  # a damaged sheet inside a readable zip: same many types
        raise InputError(f"cannot read workbook: {_one_line(exc)}", path=path,
                         line=number + 1) from None
    finally:
        wb.close()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _rows_parquet(path: Path) -> Iterator[tuple[int, list[str]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError("reading Parquet needs the 'pyarrow' package", path=path) from exc
    check_input(path, "data")
    try:
        table = pq.read_table(path)
        # decoding can fail here too (e.g. a string column holding invalid UTF-8)
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise InputError(f"invalid Parquet: {_one_line(exc)}", path=path) from None
    yield 1, list(table.column_names)
    for i in range(table.num_rows):
        yield i + 2, [_cell(col[i]) for col in columns]


def read_rows(path: str | Path, suffixes: Sequence[str] = DATA_SUFFIXES) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and (line, cells) records of a table; blank records are skipped, cells stripped."""
    path = Path(path)
    if path.exists():
        check_input(path, "data")  # first: a FIFO or a device is named as what it is
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        raise InputError(f"unsupported table format {suffix or '(none)'}; use one of "
                         + ", ".join(suffixes), path=path)
    check_input(path, "data")
    reader = {".csv": _rows_csv, ".xlsx": _rows_xlsx, ".parquet": _rows_parquet}[suffix]
    rows = reader(path)
    try:
        header_line, header = next(rows)
    except StopIteration:
        raise InputError("empty table: no header row", path=path, line=1) from None
    header = [h.strip() for h in header]
    while header and not header[-1]:
        header.pop()
    seen: set[str] = set()
    for i, name in enumerate(header):
        if not name:
            raise InputError(f"column {i + 1} has no name", path=path, line=header_line)
        if name in seen:
            raise InputError("duplicate column", path=path, line=header_line, field=printable(name))
        seen.add(name)
    records: list[tuple[int, list[str]]] = []
    for line, cells in rows:
        cells = [c.strip() for c in cells]
        while len(cells) > len(header) and not cells[-1]:
            cells.pop()
        if len(cells) > len(header):
            raise InputError(f"{len(cells)} cells for {len(header)} columns", path=path, line=line)
        if not any(cells):
            continue
        records.append((line, cells + [""] * (len(header) - len(cells))))
    return header, records


def load_data_table(path: str | Path, descriptions: Mapping[str, str] | None = None) -> DataTable:
    """Read the data table; ``descriptions`` maps a field to its description column."""
    path = Path(path)
    header, records = read_rows(path, DATA_SUFFIXES)
    desc_of: dict[str, str] = {}
    for name in header:
        if name.endswith(DESCRIPTION_SUFFIX):
            desc_of[name[: -len(DESCRIPTION_SUFFIX)]] = name
    for fld, column in (descriptions or {}).items():
        if column not in header:
            raise InputError("description column not found", path=path, line=1, field=printable(column))
        desc_of[fld] = column
    desc_columns = set(desc_of.values())
    field_names = [h for h in header if h not in desc_columns]
    for fld, column in desc_of.items():
        if fld not in field_names:
            raise InputError(f"describes unknown field {fld!r}", path=path, line=1, field=printable(column))
    index = {h: i for i, h in enumerate(header)}
    fields: dict[str, FieldData] = {}
    for name in field_names:
        col = index[name]
        dcol = index[desc_of[name]] if name in desc_of else None
        found: dict[str, str | None] = {}
        for _, cells in records:
            value = cells[col]
            if not value:
                continue
            desc = cells[dcol] if dcol is not None else None
            if value not in found or (not found[value] and desc):
                found[value] = desc or None
        fields[name] = FieldData(name, list(found), list(found.values()))
    return DataTable(path=path, fields=fields)


def load_evaluation_table(
    path: str | Path,
    question_column: str = "Question",
    fields: Sequence[str] | None = None,
    known_fields: Sequence[str] | None = None,
) -> EvaluationTable:
    """Read the evaluation table.

    ``fields``: the ground-truth columns to use (default: every column but the question's).
    ``known_fields``: the data table's fields; a ground-truth column naming another field is an
    error. Empty ground-truth cells mean "nothing to find" (recall 1.0).
    """
    path = Path(path)
    header, records = read_rows(path, EVALUATION_SUFFIXES)
    if question_column not in header:
        raise InputError(f"missing question column (columns: {printable(', '.join(header))})",
                         path=path, line=1, field=question_column)
    if fields is None:
        fields = [h for h in header if h != question_column]
    else:
        for name in fields:
            if name not in header:
                raise InputError("missing ground-truth column", path=path, line=1, field=printable(name))
    if not fields:
        raise InputError("no ground-truth column", path=path, line=1)
    if known_fields is not None:
        known = set(known_fields)
        for name in fields:
            if name not in known:
                raise InputError(
                    f"unknown field (data table fields: {printable(', '.join(known_fields))})",
                    path=path, line=1, field=printable(name),
                )
    index = {h: i for i, h in enumerate(header)}
    questions: list[str] = []
    lines: list[int] = []
    truth: dict[str, list[list[str]]] = {name: [] for name in fields}
    for line, cells in records:
        question = cells[index[question_column]]
        if not question:
            raise InputError("empty question", path=path, line=line, field=question_column)
        questions.append(question)
        lines.append(line)
        for name in fields:
            truth[name].append(split_ground_truth(cells[index[name]]))
    if not questions:
        raise InputError("no questions", path=path, line=1)
    return EvaluationTable(path=path, questions=questions, ground_truth=truth, lines=lines)


# ------------------------------------------------------------------ as a suite for ``run``


def looks_like_fields_table(path: str | Path, question_column: str = "Question") -> bool:
    """Whether ``path`` (``.csv``/``.xlsx``) is a fields evaluation table: its header has the
    question column and no ``content_hash`` column (that one marks seed 002's questions CSV).
    Unreadable files answer False, so the caller's own error message applies."""
    path = Path(path)
    if path.suffix.lower() not in EVALUATION_SUFFIXES or not path.is_file():
        return False
    try:
        header, _ = read_rows(path, EVALUATION_SUFFIXES)
    except (InputError, OSError, UnicodeDecodeError, csv.Error):
        return False
    return question_column in header and "content_hash" not in header


def load_fields_suite(path: str | Path, *, question_column: str = "Question",
                      fields: Sequence[str] | None = None):
    """An evaluation table as a suite: one single-turn case per question, ground truth under
    ``target.fields``; case ids ``q1``, ``q2``... in table order (``load_suite`` calls this
    for a ``.csv``/``.xlsx`` suite that :func:`looks_like_fields_table`)."""
    from queryeval.suite.common import Suite, hash_files
    from queryeval.suite.models import Case

    table = load_evaluation_table(path, question_column, fields)
    cases: list[Case] = []
    origin: dict[str, tuple[str, int]] = {}
    for i, (question, line) in enumerate(zip(table.questions, table.lines, strict=True), start=1):
        cid = f"q{i}"
        truth = {name: table.ground_truth[name][i - 1] for name in table.fields}
        cases.append(Case(id=cid, name=question[:80], conversation=[
            {"role": "user", "content": question, "target": {"fields": truth}}]))
        origin[cid] = (str(table.path), line)
    return Suite(cases=cases, sources=[table.path], hash=hash_files([table.path]), origin=origin)


def evaluation_from_cases(cases: Sequence, path: str | Path,
                          fields: Sequence[str] | None = None) -> EvaluationTable:
    """The evaluation table of a suite's ``target.fields`` turns (for ``tune`` on YAML): one
    question per scored turn (its text), every question evaluated on the same fields."""
    path = Path(path)
    questions: list[str] = []
    truths: list[dict[str, list[str]]] = []
    for case in cases:
        for i in case.scored_turns():
            target = case.conversation[i].target
            if target is None or target.fields is None:
                continue
            questions.append(case.conversation[i].content)
            truths.append(dict(target.fields))
    if not questions:
        raise InputError("no question has target.fields", path=path)
    names = list(fields) if fields else list(dict.fromkeys(f for t in truths for f in t))
    for q, t in enumerate(truths):
        missing = [f for f in names if f not in t]
        if missing:
            raise InputError(f"question {q + 1} ({questions[q][:40]!r}) has no ground truth for "
                             f"field(s) {', '.join(missing)}; tuning needs every question on "
                             "every field (an empty list means nothing to find)", path=path)
    ground_truth = {f: [list(t[f]) for t in truths] for f in names}
    return EvaluationTable(path=path, questions=questions, ground_truth=ground_truth)
