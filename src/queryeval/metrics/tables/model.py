"""The table model: one small shape (:class:`Table`) for every result a metric compares, the
converters from the common shapes, and the two value normalisations.

Shapes accepted by :func:`as_table`:

* a :class:`Table` (returned unchanged, except for the ``buildingqa`` first-row rule);
* SPARQL 1.1 JSON results ``{"head": {"vars": [...]}, "results": {"bindings": [...]}}``;
* a bare bindings list ``[{"var": {"value": "..."}}, ...]`` (cells may also be plain scalars
  or pyoxigraph terms);
* a header plus rows: ``(["a", "b"], [("1", "2"), ...])`` or
  ``{"columns": [...], "rows": [...]}``, or any object with ``.columns`` and ``.rows``;
* a pandas DataFrame.

Stored values are *raw* strings (``None`` for an unbound cell / SQL NULL / NaN);
normalisation happens when a metric compares them, because the BuildingQA rules normalise
rows but not entity sets.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation, getcontext
from typing import Any, Literal

from queryeval.errors import InputError
from queryeval.metrics.deadline import check

Rules = Literal["clean", "buildingqa"]
RULES: tuple[str, ...] = ("clean", "buildingqa")

Cell = str | None


@dataclass(frozen=True)
class Table:
    """A result table: column names and rows of raw string cells (``None`` = unbound/NULL).

    Row order carries no meaning for any metric; rows are compared as a multiset.
    """

    columns: list[str]
    rows: list[tuple[Cell, ...]] = field(default_factory=list)

    def __post_init__(self) -> None:
        width = len(self.columns)
        for i, row in enumerate(self.rows):
            if len(row) != width:
                raise InputError(
                    f"row {i} has {len(row)} cells but the table has {width} columns",
                    field="rows",
                )

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def n_columns(self) -> int:
        return len(self.columns)


def check_rules(rules: str) -> None:
    """Raise ``ValueError`` unless ``rules`` names a rule set."""
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}, got {rules!r}")


# ---------------------------------------------------------------------------------------------
# cells
# ---------------------------------------------------------------------------------------------


def cell_to_str(value: Any) -> Cell:
    """A raw cell as a string, or ``None`` for a missing value.

    ``None``, float NaN, ``pandas.NA`` and ``NaT`` are missing; booleans become the SPARQL /
    SQL lexical forms ``true``/``false``; a pyoxigraph term (or anything with a string
    ``.value``) gives its value; a SPARQL JSON cell ``{"value": ...}`` gives its value.
    """
    while isinstance(value, Mapping):  # a loop: nested {"value": {"value": ...}} from a file
        value = value.get("value")
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return None if math.isnan(value) else repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    inner = getattr(value, "value", None)
    if isinstance(inner, str):  # pyoxigraph NamedNode / Literal / BlankNode
        return inner
    try:  # pandas.NA, NaT and numpy floats
        import pandas as pd

        if pd.isna(value):
            return None
    except (ImportError, TypeError, ValueError):
        pass
    return str(value)


# ---------------------------------------------------------------------------------------------
# normalisations
# ---------------------------------------------------------------------------------------------

_NUMERIC = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MAX_PLAIN_EXPONENT = 60
_NUMBER_START = frozenset("+-.0123456789")
"""The characters a numeric literal (:data:`_NUMERIC`) can start with."""
_PLAIN_DIGITS = _MAX_PLAIN_EXPONENT + 1
"""An integer of at most this many digits keeps its plain form in :func:`canonical_number`."""


def canonical_number(text: str) -> str | None:
    """The canonical form of a decimal numeric literal, or ``None`` when ``text`` is not one.

    ``500``, ``500.0``, ``+500``, ``5.0E2`` and ``0500`` all give ``500``; ``0.10`` gives
    ``0.1``; ``-0.0`` gives ``0``. Exact (``decimal``), never via binary floats, so distinct
    decimals never collide. Magnitudes beyond 1e±60 keep scientific notation (``1E+99``)
    so a hostile ``1e999999`` cannot expand into a megabyte string.
    """
    if not _NUMERIC.fullmatch(text):
        return None
    try:
        number = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        return None
    if number.is_zero():
        return "0"
    number = number.normalize()
    if abs(number.adjusted()) > _MAX_PLAIN_EXPONENT:
        return str(number)
    return format(number, "f")


def clean_normalize(value: Cell) -> Cell:
    """The clean rules' single normalisation, used by every metric alike.

    Unicode NFC, surrounding whitespace stripped, numeric literals canonicalised
    (:func:`canonical_number`). Case is kept (IRIs and SQL strings are case-sensitive) and
    ``None`` stays ``None`` (unbound matches only unbound).
    """
    if value is None:
        return None
    if value.isascii():  # ASCII text is NFC already; the checks below give canonical_number's
        text = value.strip()  # answer where it is plain: no number starts so, or an integer
        if not text or text[0] not in _NUMBER_START:  # already in canonical form
            return text
        if (text.isdigit() and (text[0] != "0" or len(text) == 1)
                and len(text) <= min(_PLAIN_DIGITS, getcontext().prec)):  # normalize() rounds
            return text  # to the context's precision (28 digits): a longer one may change
    else:
        text = unicodedata.normalize("NFC", value).strip()
    number = canonical_number(text)
    return text if number is None else number


def clean_normalize_all(values: list[Cell]) -> list[Cell]:
    """:func:`clean_normalize` of each value (the same results, one call for a list)."""
    limit = min(_PLAIN_DIGITS, getcontext().prec)
    start = _NUMBER_START
    out: list[Cell] = []
    append = out.append
    for value in values:
        if value is not None and value.isascii():
            text = value.strip()
            if not text or text[0] not in start or (
                    text.isdigit() and (text[0] != "0" or len(text) == 1) and len(text) <= limit):
                append(text)
                continue
        append(clean_normalize(value))
    return out


_BQA_DATATYPE = re.compile(r"\^\^.*$")
_BQA_LANG = re.compile(r"@[a-z]{2}(-[a-z]{2})?$")


def buildingqa_normalize(value: Cell) -> Cell:
    """BuildingQA's row normalisation, reproduced exactly (used for row and exact F1 only).

    Strip, lower-case, drop one pair of surrounding double quotes, drop everything from the
    first ``^^``, drop a trailing ``@xx`` / ``@xx-yy`` (so ``ann@ab`` becomes ``ann``: a quirk
    we keep). ``None`` (a key absent from the row) stays distinct from every string.
    """
    if value is None:
        return None
    text = value.strip().lower()
    if len(text) > 1 and text.startswith('"') and text.endswith('"'):
        text = text[1:-1]
    text = _BQA_DATATYPE.sub("", text)
    return _BQA_LANG.sub("", text)


def buildingqa_entity(value: Cell) -> str:
    """BuildingQA's entity-set value: the raw string, with an absent cell read as ``""``."""
    return "" if value is None else value


# ---------------------------------------------------------------------------------------------
# conversion
# ---------------------------------------------------------------------------------------------


class ResultJson(dict):
    """SPARQL 1.1 Query Results JSON -- a plain dict to every reader and writer -- that also
    holds its cells as text, column by column (:attr:`cells`: each term's ``value``, None
    where unbound, in ``head.vars`` order), so that what reads the result as text (a
    :class:`Table` under clean rules, the report's result sample) does not walk every
    binding again: the same cells, read once. Made by
    ``engines.query.base.QueryResult.to_sparql_json`` for a SQL result, whose every term's
    value is text; a copy (``dict(result)``) is a plain dict, read from its bindings."""

    __slots__ = ("cells",)

    def __init__(self, doc: dict[str, Any], cells: list[list[str | None]]) -> None:
        super().__init__(doc)
        self.cells = cells

    def __reduce__(self) -> tuple:
        return (ResultJson, (dict(self), self.cells))


def _bindings_table(bindings: Sequence[Any], head_vars: Sequence[str] | None,
                    rules: str) -> Table:
    for i, row in enumerate(bindings):
        if not isinstance(row, Mapping):
            raise InputError(f"binding {i} is {type(row).__name__}, expected an object",
                             field="results.bindings")
    if rules == "buildingqa":
        # The reference takes the columns from the first row's keys: a variable unbound in
        # the first row drops out, and keys that only later rows carry are ignored.
        columns = [str(k) for k in bindings[0]] if bindings else []
        rows = [tuple(_bqa_cell(row, c) for c in columns) for row in bindings]
        return Table(columns, rows)
    if head_vars is not None:
        columns = [str(v) for v in head_vars]
    else:  # no head: every key seen, in order of first appearance
        seen: dict[str, None] = {}
        for row in bindings:
            for key in row:
                seen.setdefault(str(key), None)
        columns = list(seen)
    return Table(columns, _rows_by_column([[row.get(c) for row in bindings] for c in columns],
                                          len(bindings)))


def cells_to_str(values: list[Any]) -> list[Cell]:
    """:func:`cell_to_str` of each value, with the shapes engines give handled inline (a
    SPARQL-JSON term dict with a text value, text, ``None``): the same cells, without a
    function call and an ``isinstance`` chain per cell."""
    check()  # the case's scoring deadline, once a column (metrics/deadline.py)
    out: list[Cell] = []
    append = out.append
    for value in values:
        kind = type(value)
        if kind is dict:
            inner = value.get("value")
            if type(inner) is str:
                append(inner)
                continue
        elif kind is str or value is None:
            append(value)
            continue
        append(cell_to_str(value))
    return out


def _rows_by_column(columns: list[list[Any]], n_rows: int) -> list[tuple[Cell, ...]]:
    """Row tuples from per-column raw values (each converted by :func:`cells_to_str`)."""
    if not columns:
        return [()] * n_rows
    return list(zip(*(cells_to_str(col) for col in columns), strict=True))


def _bqa_cell(row: Mapping[str, Any], column: str) -> Cell:
    if column not in row:
        return None
    cell = row[column]
    if isinstance(cell, Mapping):  # the reference reads r[k].get('value', '')
        return str(cell.get("value", ""))
    text = cell_to_str(cell)
    return "" if text is None else text


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _header_rows_table(columns: Sequence[Any], rows: Sequence[Sequence[Any]]) -> Table:
    if not _is_list(columns):
        raise InputError(f"columns must be a list, got {type(columns).__name__}", field="columns")
    if not _is_list(rows):
        raise InputError(f"rows must be a list, got {type(rows).__name__}", field="rows")
    for i, row in enumerate(rows):
        if not _is_list(row):
            raise InputError(f"row {i} is {type(row).__name__}, expected a list of cells",
                             field="rows")
    names = [str(c) for c in columns]
    for i, row in enumerate(rows):
        if len(row) != len(names):
            raise InputError(f"row {i} has {len(row)} cells but the table has {len(names)} "
                             "columns", field="rows")
    return Table(names, _rows_by_column([[row[k] for row in rows] for k in range(len(names))],
                                        len(rows)))


def _dataframe_table(frame: Any) -> Table:
    columns = [str(c) for c in frame.columns]
    rows = [tuple(cell_to_str(v) for v in row)
            for row in frame.itertuples(index=False, name=None)]
    return Table(columns, rows)


def _first_row_rule(table: Table) -> Table:
    """BuildingQA's first-row rule applied to an already tabular input: drop the columns
    that are unbound in the first row."""
    if not table.rows:
        return Table([], [])
    keep = [i for i, v in enumerate(table.rows[0]) if v is not None]
    if len(keep) == table.n_columns:
        return table
    return Table([table.columns[i] for i in keep],
                 [tuple(row[i] for i in keep) for row in table.rows])


def as_table(data: Any, *, rules: str = "clean") -> Table:
    """Convert a result in any supported shape (see the module docstring) to a :class:`Table`.

    Under ``rules="clean"`` the columns of SPARQL JSON are ``head.vars`` (a bare bindings
    list: every key, in order of first appearance). Under ``rules="buildingqa"`` they are the
    first row's keys, and for tabular inputs the columns unbound in the first row are
    dropped, as the reference does. Raises :class:`InputError` for an unsupported shape.
    """
    check_rules(rules)
    table: Table
    if isinstance(data, Table):
        table = data
    elif isinstance(data, Mapping):
        if type(data) is ResultJson and rules == "clean":  # its cells, checked once a column
            cells = data.cells
            for _ in cells:
                check()  # the case's scoring deadline, as cells_to_str checks it
            return Table([str(v) for v in data["head"]["vars"]],
                         list(zip(*cells, strict=True)) if cells
                         else [()] * len(data["results"]["bindings"]))
        if "results" in data or "head" in data:
            if "boolean" in data:
                raise InputError("an ASK result (boolean) is not a table", field="boolean")
            results = data.get("results") or {}
            bindings = results.get("bindings", []) if isinstance(results, Mapping) else None
            if not isinstance(bindings, Sequence) or isinstance(bindings, str):
                raise InputError("results.bindings must be a list", field="results.bindings")
            head = data.get("head") or {}
            head_vars = head.get("vars") if isinstance(head, Mapping) else None
            if head_vars is not None and not _is_list(head_vars):
                raise InputError(f"head.vars must be a list, got {type(head_vars).__name__}",
                                 field="head.vars")
            return _bindings_table(bindings, head_vars, rules)
        if "columns" in data and "rows" in data:
            table = _header_rows_table(data["columns"], data["rows"])
        else:
            raise InputError("a table object needs head/results (SPARQL JSON) or columns/rows")
    elif _is_dataframe(data):
        table = _dataframe_table(data)
    elif isinstance(data, tuple) and len(data) == 2 and _is_header(data[0]):
        table = _header_rows_table(data[0], data[1])
    elif isinstance(data, Sequence) and not isinstance(data, str | bytes):
        if not data or isinstance(data[0], Mapping):
            return _bindings_table(data, None, rules)
        raise InputError("a list of rows needs a header: pass (columns, rows) or a DataFrame")
    elif hasattr(data, "columns") and hasattr(data, "rows"):
        table = _header_rows_table(data.columns, data.rows)
    else:
        raise InputError(f"cannot read a result table from {type(data).__name__}")
    return _first_row_rule(table) if rules == "buildingqa" else table


def _is_header(value: Any) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str | bytes)
            and all(isinstance(c, str) for c in value))


def _is_dataframe(value: Any) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and hasattr(value, "itertuples")
