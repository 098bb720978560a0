"""Shared openpyxl helpers: header style, number formats, column widths, atomic save, and
:func:`put`, the one way a value enters a cell.

Every xlsx file queryeval writes (run reports, compare, tune) sets its cells through
:func:`put`: a string is stored as text (data type ``s``), never as a formula, whatever it
starts with (``=HYPERLINK(...)``, ``=cmd|...`` DDE, seed 000's ``=== turn 0`` lines), with
characters a cell cannot hold shown as visible escapes (:func:`queryeval.io.safetext.xlsx_text`)
and cut to Excel's 32,767 characters (:func:`cell_text`).
"""

from __future__ import annotations

import datetime as dt
import numbers
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from openpyxl import Workbook
from openpyxl.cell.cell import Cell
from openpyxl.compat.numbers import NUMERIC_TYPES
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from queryeval.io.atomic import atomic_path
from queryeval.io.numbers import FLOAT_MAX
from queryeval.io.safetext import xlsx_text

HEADER_FONT = Font(bold=True, color="FFFFFF")
HEADER_FILL = PatternFill("solid", fgColor="305496")
TITLE_FONT = Font(bold=True, size=13)
WRAP_TOP = Alignment(wrap_text=True, vertical="top")
TOP = Alignment(vertical="top")
FIGURE = "0.00"
EXCEL_CELL_LIMIT = 32767


def cell_text(text: str, note: str = "… (truncated; full details in the results JSONL)") -> str:
    """Text that fits in one Excel cell."""
    if len(text) <= EXCEL_CELL_LIMIT:
        return text
    return text[: EXCEL_CELL_LIMIT - len(note) - 1] + "\n" + note


def put(ws: Worksheet, row: int, column: int, value: Any) -> Cell:
    """Set one cell: numbers (openpyxl's numeric types: int, float, Decimal, numpy; other real
    numbers as float), booleans, dates and ``None`` as they are; anything else as text (data
    type ``s``, never a formula; storable; at most one cell's length). A float or int no
    float holds (NaN, infinity, an integer of 400 digits) is no number to a spreadsheet:
    it is written as text too."""
    cls = value.__class__
    if (cls is int or cls is float) and not -FLOAT_MAX <= value <= FLOAT_MAX:
        value, cls = repr(value) if cls is float else _long_int(value), str  # no number: text
    elif cls is not str and (value is None or cls is int or cls is float or isinstance(
            value, (*NUMERIC_TYPES, dt.date, dt.time, dt.timedelta))):
        return ws.cell(row=row, column=column, value=value)
    elif cls is not str and isinstance(value, numbers.Real):  # e.g. Fraction
        return ws.cell(row=row, column=column, value=float(value))
    c = ws.cell(row=row, column=column)
    c.value = cell_text(xlsx_text(value if cls is str else str(value)))
    c.data_type = "s"  # openpyxl reads a leading "=" as a formula
    return c


class RepeatColumn:
    """A run with ``--repeats``: a per-case sheet's second column is ``repeat``, which attempt
    the row is (the record's own ``repeat``, as the results CSV's second column); without
    repeats, every method gives its input back unchanged. Column numbers are 1-based, as
    :func:`write_row` takes them: :meth:`col` moves one written for the sheet without it."""

    def __init__(self, metrics: dict) -> None:
        self.on = "repeats" in metrics

    def headers(self, headers: Sequence[str]) -> list[str]:
        return [headers[0], "repeat", *headers[1:]] if self.on else list(headers)

    def values(self, values: Sequence[Any], record: dict) -> list[Any]:
        return [values[0], record.get("repeat"), *values[1:]] if self.on else list(values)

    def col(self, column: int) -> int:
        return column + 1 if self.on and column >= 2 else column

    def cols(self, columns: Iterable[int]) -> list[int]:
        return [self.col(c) for c in columns]

    def formats(self, formats: dict[int, str]) -> dict[int, str]:
        return {self.col(c): f for c, f in formats.items()}

    def widths(self, widths: dict[int, float]) -> dict[int, float]:
        moved = {self.col(c): w for c, w in widths.items()}
        return {**moved, 2: 8} if self.on else moved


def _long_int(value: int) -> str:
    try:
        return str(value)
    except ValueError:  # past Python's int/str digit limit
        digits = int(value.bit_length() * 0.30103) + 1
        return f"{'-' if value < 0 else ''}(an integer of about {digits} digits)"


def write_header(ws: Worksheet, row: int, headers: Sequence[str], col: int = 1) -> None:
    for j, h in enumerate(headers, start=col):
        c = put(ws, row, j, h)
        c.font = HEADER_FONT
        c.fill = HEADER_FILL
        c.alignment = Alignment(vertical="center", wrap_text=True)


def write_row(ws: Worksheet, row: int, values: Sequence[Any], *, wrap: Iterable[int] = (),
              formats: dict[int, str] | None = None) -> None:
    """One data row: top-aligned cells, wrapped text in the ``wrap`` columns, number formats
    by column (applied to numbers only). Columns are 1-based."""
    wrap = set(wrap)
    formats = formats or {}
    for j, v in enumerate(values, start=1):
        c = put(ws, row, j, v)
        c.alignment = WRAP_TOP if j in wrap else TOP
        if j in formats and isinstance(v, (int, float)) and not isinstance(v, bool):
            c.number_format = formats[j]


def finish_sheet(ws: Worksheet, n_columns: int, last_row: int, widths: dict[int, float],
                 freeze: str = "B2") -> None:
    """Frozen header, an auto-filter over the table, column widths."""
    ws.freeze_panes = freeze
    ws.auto_filter.ref = f"A1:{get_column_letter(n_columns)}{max(2, last_row)}"
    set_widths(ws, widths)


def write_table(ws: Worksheet, row: int, headers: Sequence[str], rows: Iterable[Sequence[Any]],
                *, figure_cols: Iterable[int] = (), title: str | None = None) -> int:
    """Write an optional title, a header row and data rows; returns the next free row."""
    if title:
        put(ws, row, 1, title).font = TITLE_FONT
        row += 1
    write_header(ws, row, headers)
    row += 1
    formats = dict.fromkeys(figure_cols, FIGURE)
    for values in rows:
        write_row(ws, row, list(values), formats=formats)
        row += 1
    return row + 1


def new_book(title: str) -> tuple[Workbook, Worksheet]:
    """A workbook and its first sheet, named ``title``."""
    wb = Workbook()
    ws = wb.active
    ws.title = title
    return wb, ws


def write_figures(ws: Worksheet, row: int, title: str, figures: Iterable[tuple[str, Any]], *,
                  name_alignment: Alignment | None = None) -> int:
    """A title, a "metric | value" header and one row a figure (a float in :data:`FIGURE`
    format); returns the row after a blank one, as :func:`write_table` does."""
    put(ws, row, 1, title).font = TITLE_FONT
    write_header(ws, row + 1, ["metric", "value"])
    row += 2
    for name, value in figures:
        c = put(ws, row, 1, name)
        if name_alignment is not None:
            c.alignment = name_alignment
        c = put(ws, row, 2, value)
        if isinstance(value, float):
            c.number_format = FIGURE
        row += 1
    return row + 1


def format_floats(ws: Worksheet, number_format: str) -> None:
    """Every float cell of the sheet in ``number_format``."""
    for line in ws.iter_rows():
        for c in line:
            if isinstance(c.value, float):
                c.number_format = number_format


def set_widths(ws: Worksheet, widths: dict[int, float]) -> None:
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = width


def save(wb: Workbook, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        wb.save(tmp)
    return Path(path)
