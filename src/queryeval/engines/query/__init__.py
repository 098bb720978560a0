"""Safe query execution: SPARQL (embedded pyoxigraph, remote endpoint) and SQL (sqlite, DuckDB).

Every engine has ``execute(query, *, timeout_s, max_rows) -> QueryResult`` and raises only
:class:`QueryRefused`, :class:`QueryTimeout` or :class:`QueryFailed` (each with ``reason``)
for a bad query; engines are context managers. See docs/execution.md.

The engine classes are imported lazily so that ``import queryeval.engines.query`` does
not pull in pyoxigraph, DuckDB or sqlglot until an engine is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from queryeval.engines.query.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    Engine,
    QueryExecutionError,
    QueryFailed,
    QueryRefused,
    QueryResult,
    QueryTimeout,
    execute,
)

if TYPE_CHECKING:
    from queryeval.engines.query.sparql_local import LocalSparqlEngine
    from queryeval.engines.query.sparql_remote import RemoteSparqlEngine
    from queryeval.engines.query.sql import DuckDBEngine, SqliteEngine

_LAZY = {
    "LocalSparqlEngine": "queryeval.engines.query.sparql_local",
    "RemoteSparqlEngine": "queryeval.engines.query.sparql_remote",
    "SqliteEngine": "queryeval.engines.query.sql",
    "DuckDBEngine": "queryeval.engines.query.sql",
}

__all__ = [
    "DEFAULT_MAX_ROWS", "DEFAULT_TIMEOUT_S", "DuckDBEngine", "Engine", "LocalSparqlEngine",
    "QueryExecutionError", "QueryFailed", "QueryRefused", "QueryResult", "QueryTimeout",
    "RemoteSparqlEngine", "SqliteEngine", "execute",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
