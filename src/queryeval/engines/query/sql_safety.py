"""Refuse anything but one read-only SELECT before it reaches sqlite or DuckDB.

The statement is parsed with sqlglot in the engine's dialect. Accepted: exactly one
statement whose root is a SELECT (``WITH ... SELECT`` included), a set operation
(UNION / INTERSECT / EXCEPT), a parenthesised query or VALUES. Refused, wherever they
appear in the tree: DML and DDL (INSERT, UPDATE, DELETE, MERGE, CREATE, DROP, ALTER,
SELECT ... INTO), PRAGMA, ATTACH / DETACH, COPY, SET, INSTALL / LOAD, transactions,
and anything sqlglot could only keep as an opaque command (CALL, EXPLAIN, VACUUM ...).
For DuckDB also: table functions other than range / generate_series / unnest / json_each
and the catalogue views (duckdb_tables() ...), functions that read files or run SQL text (read_csv, read_parquet, read_text,
glob, query, sniff_csv ...), and quoted table names that look like paths or URLs
(DuckDB's replacement scans read ``FROM 'data.csv'`` as a file).

This is the *policy* layer. The connections are read-only and locked down as well (see
:mod:`.sql`), because a parser can be fooled and the measured holes are real: sqlite's
``mode=ro`` still lets ATTACH create and write a new file, DuckDB's ``read_only`` still
allows COPY TO, read_csv('/etc/...'), TEMP tables and several statements per call.
Text sqlglot cannot parse is refused (we cannot verify it), with the parser's message.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from queryeval.engines.query.base import QueryRefused

Dialect = Literal["sqlite", "duckdb"]

_DUCKDB_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "json_each", "json_tree",
    # read-only catalogue views (schema introspection)
    "duckdb_tables", "duckdb_columns", "duckdb_views", "duckdb_schemas", "duckdb_types",
    "duckdb_constraints", "duckdb_indexes", "duckdb_databases",
})
# sqlite: read-only table-valued functions (eponymous virtual tables). Others (pragma_*,
# dbstat, fts/rtree helpers ...) are refused; the authorizer denies PRAGMA as well.
_SQLITE_TABLE_FUNCTIONS = frozenset({"json_each", "json_tree"})
_FILE_FUNCTION_RE = re.compile(
    r"^(read_.*|.*_scan|glob|sniff_csv|query|query_table|parquet_.*|getenv|"
    r"load_extension|install_extension|load|install|export_.*|import_.*)$",
    re.IGNORECASE,
)
_PATHLIKE_RE = re.compile(r"[/\\:*?]|\.(csv|tsv|parquet|json|jsonl|ndjson|txt|gz|xlsx?|db|duckdb|sqlite3?)$",
                          re.IGNORECASE)


T = TypeVar("T")

_MEMO_QUERIES, _MEMO_CHARS = 2048, 4096
"""The answers :func:`remembered` keeps: at most this many queries, each text of at most
this many characters (a gold and its mutants are checked again on every candidate
database of a test-suite build, and a run's verdicts run them on every neighbour)."""


def check_sql(sql: str, dialect: Dialect) -> frozenset[str]:
    """Raise :class:`QueryRefused` unless ``sql`` is exactly one read-only query.

    Returns the (lower-case) names of the table-valued functions the query calls, all
    on the dialect's allow-list: sqlite's authorizer needs them (using an eponymous
    virtual table such as ``json_each`` first registers it in the connection's schema,
    which sqlite authorizes as an UPDATE of ``sqlite_master``).

    The answer is a function of the text and the dialect, so an accepted query is parsed
    once a process (:func:`remembered`); a refused one raises and is never remembered."""
    return _remembered_check(sql, dialect)


def remembered(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn(text, *hashable)``, a pure function of its arguments, remembered: at most
    :data:`_MEMO_QUERIES` answers, each for a text of at most :data:`_MEMO_CHARS` characters
    (least recently used dropped first; a longer text is computed every time). An exception
    is never remembered. The answer is shared: it must not be mutable."""
    memo = functools.lru_cache(maxsize=_MEMO_QUERIES)(fn)

    @functools.wraps(fn)
    def answer(text: str, *rest: Any) -> T:
        if type(text) is str and len(text) <= _MEMO_CHARS:
            return memo(text, *rest)
        return fn(text, *rest)

    return answer


def _check_sql(sql: str, dialect: Dialect) -> frozenset[str]:
    from sqlglot import exp

    root = parse_one_select(sql, dialect)

    forbidden: tuple[type[exp.Expression], ...] = tuple(
        getattr(exp, name) for name in (
            "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Into",
            "Command", "Pragma", "Attach", "Detach", "Copy", "Set", "Install", "Use",
            "Transaction", "Commit", "Rollback", "Describe", "Summarize", "Show", "Cache",
            "Uncache", "Refresh", "TruncateTable", "LoadData", "Analyze", "Export",
        ) if hasattr(exp, name)
    )
    file_readers: tuple[type[exp.Expression], ...] = tuple(
        getattr(exp, name) for name in ("ReadCSV", "ReadParquet") if hasattr(exp, name)
    )
    table_functions: set[str] = set()
    for node in root.walk():
        if isinstance(node, forbidden):
            raise QueryRefused(f"{_describe(node)} is not allowed inside a query")
        if isinstance(node, file_readers):
            raise QueryRefused(f"reading files ({_describe(node)}) is not allowed")
        if isinstance(node, exp.Func):
            name = _func_name(node)
            if _FILE_FUNCTION_RE.match(name):
                raise QueryRefused(f"function {name}() is not allowed (file, environment or SQL access)")
        if dialect == "sqlite" and isinstance(node, exp.Table) and \
                isinstance(node.this, exp.Func):
            name = _func_name(node.this).lower()
            if name not in _SQLITE_TABLE_FUNCTIONS:
                raise QueryRefused(f"table function {name}() is not allowed "
                                   f"(only {', '.join(sorted(_SQLITE_TABLE_FUNCTIONS))})")
            table_functions.add(name)
        if dialect == "duckdb" and isinstance(node, exp.Table):
            target = node.this
            if isinstance(target, exp.Func):
                name = _func_name(target)
                generated = isinstance(target, (exp.GenerateSeries, exp.Unnest)) or \
                    name.lower() in _DUCKDB_TABLE_FUNCTIONS
                if not generated:
                    raise QueryRefused(f"table function {name}() is not allowed")
            elif isinstance(target, exp.Identifier) and target.quoted and \
                    _PATHLIKE_RE.search(target.name):
                raise QueryRefused(f"table name {target.name!r} looks like a file or URL; "
                                   "DuckDB would read it")
    return frozenset(table_functions)


_remembered_check = remembered(_check_sql)


def _func_name(node: object) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name)
    if isinstance(node, exp.Func):
        return node.sql_name()
    return type(node).__name__


def _describe(node: object) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Command):
        return f"{str(node.this).upper()} command"
    return type(node).__name__.upper()


def parse_one_select(sql: str, dialect: str) -> Any:
    """``sql`` parsed by sqlglot in ``dialect``: exactly one statement whose root is a query
    (SELECT, set operation, subquery, VALUES); anything else, or anything that does not
    parse, is :class:`QueryRefused`."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    if not isinstance(sql, str):
        raise QueryRefused(f"query must be text, got {type(sql).__name__}")
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # silence "falling back to parsing as a Command"
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise QueryRefused(f"could not parse the statement ({dialect}): {first}") from None
    except RecursionError:
        raise QueryRefused("statement nested too deeply to verify") from None
    finally:
        logger.setLevel(level)
    if not statements:
        raise QueryRefused("empty statement")
    if len(statements) > 1:
        kinds = ", ".join(_describe(s) for s in statements)
        raise QueryRefused(f"exactly one statement allowed, found {len(statements)} ({kinds})")
    root = statements[0]
    if not isinstance(root, (exp.Select, exp.SetOperation, exp.Subquery, exp.Values)):
        words = re.findall(r"[A-Za-z_]+", sql)
        shown = words[0].upper() if words else _describe(root)
        raise QueryRefused(f"only SELECT queries are allowed, found a {shown} statement")
    return root
