"""What every query engine returns and raises.

A query written by a machine must never crash an evaluation run. Every engine therefore
either returns a :class:`QueryResult` or raises one of three typed errors, all carrying a
``reason`` string that the runner records on the case (the case then scores 0):

* :class:`QueryRefused` -- the safety checks rejected the query *before* execution
  (SPARQL Update, ``SERVICE``, DML/DDL, stacked SQL statements, file access ...);
* :class:`QueryTimeout` -- the query ran past its time limit and was stopped;
* :class:`QueryFailed` -- the engine reported an error (syntax error, unknown table,
  a worker process that died, an HTTP error from an endpoint ...).
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from queryeval.errors import ConfigError, QueryevalError
from queryeval.io.closing import Closing

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_MEMORY_LIMIT_BYTES = 2 * 1024**3
"""Every engine's worker process runs under this RLIMIT_DATA unless told otherwise."""
DEFAULT_MAX_RESULT_BYTES = 128 * 1024**2
"""Byte budget of one result as the worker fetches it (text plus 64 bytes a cell): a larger
result is a failed query, so it never reaches the evaluating process."""
MAX_SQL_CHARS = 100_000
"""Longest SQL text accepted (characters), as for SPARQL."""

QUERY_CHECKS = True
"""Test-only switch: False turns every query-text check off (the SPARQL parse decisions,
the SQL statement policy, the sqlite authorizer and DuckDB's external-access lock), so that
tests can show what the operating-system sandbox holds alone. Never set it elsewhere."""

XSD = "http://www.w3.org/2001/XMLSchema#"


class QueryExecutionError(QueryevalError):
    """Base of the errors a query can cause. ``kind`` names the class for run logs."""

    kind = "failed"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{self.kind}: {reason}")

    def to_dict(self) -> dict[str, Any]:
        """The record the runner stores on the case."""
        return {"kind": self.kind, "reason": self.reason}


class QueryRefused(QueryExecutionError):
    """The query was refused before execution by a safety check."""

    kind = "refused"


class QueryTimeout(QueryExecutionError):
    """The query ran past ``timeout_s`` and was interrupted (or its worker killed)."""

    kind = "timeout"


class QueryFailed(QueryExecutionError):
    """The engine (or endpoint) reported an error; ``syntax_error`` when it is a parse error."""

    kind = "failed"

    def __init__(self, reason: str, *, syntax_error: bool = False) -> None:
        self.syntax_error = syntax_error
        super().__init__(reason)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "syntax_error": self.syntax_error}


def sparql_worker_payload(status: str, payload: Any) -> Any:
    """The payload of a SPARQL worker's ``ok`` answer; its other answers as the engines'
    errors (``refused`` -> :class:`QueryRefused`, ``syntax`` -> a syntax
    :class:`QueryFailed`, anything else -> :class:`QueryFailed`)."""
    if status == "refused":
        raise QueryRefused(str(payload))
    if status == "syntax":
        raise QueryFailed(f"SPARQL syntax error: {payload}", syntax_error=True)
    if status != "ok":
        raise QueryFailed(str(payload))
    return payload


ResultKind = Literal["select", "ask", "graph", "sql"]


@dataclass
class QueryResult:
    """One executed query's answer.

    ``rows`` hold one tuple per solution, aligned with ``columns``. For SPARQL each cell
    is a SPARQL-JSON term dict (``{"type": "uri"|"literal"|"bnode"|"triple", "value": ...,
    "datatype"?: ..., "xml:lang"?: ...}``) or ``None`` for an unbound variable; for SQL
    each cell is the Python value the driver returned (``None`` for NULL). ``truncated``
    is true when the result had more than ``max_rows`` rows and only the first
    ``max_rows`` were kept. ``elapsed_ms`` is the wall time of execution plus fetching,
    as seen by the caller. ASK queries have no columns and carry ``boolean``; CONSTRUCT
    and DESCRIBE queries (``kind="graph"``) have the columns subject, predicate, object.
    """

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    elapsed_ms: float = 0.0
    kind: ResultKind = "select"
    boolean: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def to_sparql_json(self) -> dict[str, Any]:
        """The SPARQL 1.1 Query Results JSON form (what the table metrics consume).

        SQL values become literals typed as the matching XSD datatype (int -> integer,
        float -> double, Decimal -> decimal, bool -> boolean, date/datetime/time ->
        date/dateTime/time, bytes -> hexBinary, str -> a plain literal); NULL and
        unbound cells are left out of the binding, as the format requires. Duplicate SQL
        column names get a ``_2``, ``_3`` ... suffix because SPARQL variables are unique.
        """
        if self.kind == "ask":
            return {"head": {}, "boolean": bool(self.boolean)}
        names = unique_names(self.columns)
        width = len(names)
        for row in self.rows:
            if len(row) != width:  # as zip(..., strict=True) said it
                raise ValueError(f"a row has {len(row)} cells for {width} columns")
        # column by column: one type test per cell, no call (sql_terms), then one dict per row
        cols = ([sql_terms([row[k] for row in self.rows]) for k in range(width)]
                if self.kind == "sql" else [[row[k] for row in self.rows] for k in range(width)])
        bindings: list[dict[str, Any]] = []
        append = bindings.append
        for cells in zip(*cols, strict=True) if width else [()] * len(self.rows):
            if None in cells:
                append({n: c for n, c in zip(names, cells, strict=True) if c is not None})
            else:
                append(dict(zip(names, cells, strict=True)))
        doc = {"head": {"vars": names}, "results": {"bindings": bindings}}
        if self.kind != "sql":
            return doc
        from queryeval.metrics.tables.model import ResultJson

        # every SQL term's value is text (sql_terms): the cells a reader takes from them
        return ResultJson(doc, [[None if t is None else t["value"] for t in col] for col in cols])

    def to_table_json(self) -> dict[str, Any]:
        """``{"columns": [...], "rows": [[...]]}`` with JSON-safe scalars.

        SPARQL terms become their lexical ``value`` (None when unbound); SQL values stay
        as they are when JSON has them (int, float, str, bool, None) and become strings
        otherwise (Decimal, dates, bytes as hex). ASK gives one column ``boolean``.
        """
        if self.kind == "ask":
            return {"columns": ["boolean"], "rows": [[bool(self.boolean)]]}
        if self.kind == "sql":
            rows = [[sql_value_to_json(v) for v in row] for row in self.rows]
        else:
            rows = [[None if t is None else term_text(t) for t in row] for row in self.rows]
        return {"columns": list(self.columns), "rows": rows}


class Engine(Protocol):
    """What the runner needs from an engine."""

    def execute(self, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult: ...

    def close(self) -> None: ...


def execute(engine: Engine, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
            max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
    """Run ``query`` on ``engine``; raises QueryRefused, QueryTimeout or QueryFailed."""
    return engine.execute(query, timeout_s=timeout_s, max_rows=max_rows)


def check_limits(timeout_s: float, max_rows: int) -> None:
    """Reject nonsensical limits (a programming or configuration error, not a query's)."""
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ConfigError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 0:
        raise ConfigError(f"max_rows must be an integer >= 0, got {max_rows!r}")


def check_memory_limit(value: int | None) -> int | None:
    """Validate a worker memory cap in bytes (None: no cap)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 64 * 1024**2:
        raise ConfigError(f"memory_limit_bytes must be an integer >= 64 MiB or None, got {value!r}")
    return value


def unique_names(columns: Sequence[str]) -> list[str]:
    """Column names made unique by suffixing repeats with ``_2``, ``_3`` ..."""
    seen: set[str] = set()
    out: list[str] = []
    for name in columns:
        candidate, n = name, 1
        while candidate in seen:
            n += 1
            candidate = f"{name}_{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


def term_text(term: dict[str, Any]) -> str:
    """A SPARQL-JSON term's text: the value, or ``<< s p o >>`` for a triple term."""
    if term.get("type") == "triple":
        v = term["value"]
        return "<< " + " ".join(term_text(v[k]) for k in ("subject", "predicate", "object")) + " >>"
    return str(term.get("value", ""))


def sql_value_to_term(value: Any) -> dict[str, Any]:
    """A SQL value as a SPARQL-JSON literal (see :meth:`QueryResult.to_sparql_json`)."""
    if isinstance(value, bool):
        return {"type": "literal", "value": "true" if value else "false",
                "datatype": XSD + "boolean"}
    if isinstance(value, int):
        return {"type": "literal", "value": str(value), "datatype": XSD + "integer"}
    if isinstance(value, float):
        return {"type": "literal", "value": repr(value), "datatype": XSD + "double"}
    if isinstance(value, decimal.Decimal):
        return {"type": "literal", "value": str(value), "datatype": XSD + "decimal"}
    if isinstance(value, _dt.datetime):
        return {"type": "literal", "value": value.isoformat(), "datatype": XSD + "dateTime"}
    if isinstance(value, _dt.date):
        return {"type": "literal", "value": value.isoformat(), "datatype": XSD + "date"}
    if isinstance(value, _dt.time):
        return {"type": "literal", "value": value.isoformat(), "datatype": XSD + "time"}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"type": "literal", "value": bytes(value).hex().upper(),
                "datatype": XSD + "hexBinary"}
    return {"type": "literal", "value": str(value)}


_INTEGER, _DOUBLE = XSD + "integer", XSD + "double"


def sql_terms(values: list[Any]) -> list[dict[str, Any] | None]:
    """:func:`sql_value_to_term` of each value (``None`` stays ``None``), with the common
    types (text, int, float) built inline, and -- on a column that repeats its values (at
    most half of its first 4,096 cells distinct) -- one term shared by the equal texts and
    the equal integers (terms are never changed): the same terms, a fraction of the time
    and memory."""
    from queryeval.metrics.deadline import check

    check()  # the case's scoring deadline, once a column (metrics/deadline.py)
    head = values[:_PROBE]
    if len(head) < _PROBE or len(set(v for v in head if type(v) in (str, int))) * 2 <= _PROBE:
        return _shared_terms(values)
    out: list[dict[str, Any] | None] = []
    append = out.append
    for value in values:
        kind = type(value)
        if kind is str:
            append({"type": "literal", "value": value})
        elif kind is int:  # exactly int: True is a bool and takes sql_value_to_term
            append({"type": "literal", "value": str(value), "datatype": _INTEGER})
        elif value is None:
            append(None)
        elif kind is float:
            append({"type": "literal", "value": repr(value), "datatype": _DOUBLE})
        else:
            append(sql_value_to_term(value))
    return out


_PROBE = 4096


def _shared_terms(values: list[Any]) -> list[dict[str, Any] | None]:
    """:func:`sql_terms` with one term per distinct text and per distinct integer."""
    out: list[dict[str, Any] | None] = []
    append = out.append
    texts: dict[str, dict[str, Any]] = {}
    ints: dict[int, dict[str, Any]] = {}  # True (== 1) is a bool: it never meets this table
    for value in values:
        kind = type(value)
        if kind is str:
            term = texts.get(value)
            if term is None:
                term = texts[value] = {"type": "literal", "value": value}
            append(term)
        elif kind is int:
            term = ints.get(value)
            if term is None:
                term = ints[value] = {"type": "literal", "value": str(value),
                                      "datatype": _INTEGER}
            append(term)
        elif value is None:
            append(None)
        elif kind is float:
            append({"type": "literal", "value": repr(value), "datatype": _DOUBLE})
        else:
            append(sql_value_to_term(value))
    return out


def sql_value_to_json(value: Any) -> Any:
    """A SQL value as a JSON-safe scalar (non-JSON types become strings)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b16encode(bytes(value)).decode("ascii")
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    return str(value)


class ConnectionEngine(Closing):
    """Context-manager plumbing for engines that hold one DB-API connection in ``_conn``."""

    _conn: Any

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def cell_bytes(value: Any) -> int:
    """A cell's approximate size in memory for the byte budget: 64 bytes, plus the length of
    text and binary values (nested SPARQL-JSON terms counted through)."""
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return 64 + len(value)
    if isinstance(value, dict):
        return 64 + sum(cell_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return 64 + sum(cell_bytes(v) for v in value)
    return 64


def result_too_large(budget: int) -> str:
    """The reason of a query whose result passed the byte budget."""
    return (f"the result is larger than the byte budget ({budget / 1024**2:g} MiB, "
            "max_result_bytes); nothing of it was kept")


def fetch_bounded(fetchmany: Any, max_rows: int, max_bytes: int) -> tuple[list[tuple], bool]:
    """Up to ``max_rows`` rows through ``fetchmany(n)``, in batches, and whether a further row
    exists; raises :class:`QueryFailed` as soon as the rows pass ``max_bytes`` (0: no
    budget), so a result of huge rows is never held whole."""
    rows: list[tuple] = []
    size = 0
    while len(rows) <= max_rows:
        batch = fetchmany(min(1000, max_rows + 1 - len(rows)))
        if not batch:
            break
        for row in batch:
            if max_bytes:
                size += sum(cell_bytes(v) for v in row)
                if size > max_bytes:
                    raise QueryFailed(result_too_large(max_bytes))
            rows.append(tuple(row))
    return rows[:max_rows], len(rows) > max_rows
