"""Read-only SQL on a PostgreSQL server (``postgresql://user@host:port/db``), with psycopg 3
(``pip install 'queryeval[postgres]'``).

Layers, each enough on its own for the common cases, together for the rest:

1. **Policy** (:func:`check_postgres`, before anything is sent): sqlglot parses the text
   in the postgres dialect; exactly one statement whose root is a SELECT / set operation /
   VALUES; refused anywhere in the tree: DML, DDL, COPY (``COPY … TO PROGRAM`` included),
   SET (``SET ROLE``, ``SET SESSION AUTHORIZATION``), transactions, opaque commands, and
   functions that reach files, large objects, other servers, settings, other sessions or
   run SQL text (``pg_read_file``, ``pg_read_binary_file``, ``pg_ls_dir``, ``lo_import``,
   ``lo_export``, ``dblink*``, ``set_config``, ``pg_terminate_backend``,
   ``query_to_xml`` …). Text sqlglot cannot parse is refused.
2. **Server**: every query runs in a ``READ ONLY`` transaction that is rolled back, with
   ``SET LOCAL statement_timeout`` = the time limit, through a server-side cursor
   (``DECLARE … CURSOR FOR <query>``, which accepts exactly one query), fetching at most
   ``max_rows + 1`` rows.
3. **Client deadline**: if the server does not stop by ``timeout_s + 1`` s, the client
   cancels the query (``connection.cancel()``).

Use a login role that can only read (``GRANT SELECT``) as well: a read-only transaction
still lets a superuser call functions the policy does not know about.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from queryeval.errors import ConfigError
from queryeval.systems.engines.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    ConnectionEngine,
    QueryFailed,
    QueryRefused,
    QueryResult,
    QueryTimeout,
    check_limits,
)

_DENIED_FUNCTIONS = re.compile(
    r"^(pg_read_file|pg_read_binary_file|pg_ls_\w*|pg_stat_file|lo_\w*|dblink\w*|"
    r"set_config|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile|"
    r"pg_promote|pg_switch_wal|pg_create_\w*|pg_drop_\w*|pg_replication_\w*|"
    r"pg_logical_\w*|pg_file_\w*|pg_notify|pg_advisory\w*|pg_try_advisory\w*|"
    r"pg_export_snapshot|nextval|setval|query_to_xml\w*|table_to_xml\w*|cursor_to_xml\w*|"
    r"schema_to_xml\w*|database_to_xml\w*|pg_import_system_collations|pg_sleep\w*)$",
    re.IGNORECASE)
_FORBIDDEN_NODES = (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Into", "Command",
    "Pragma", "Attach", "Detach", "Copy", "Set", "Install", "Use", "Transaction", "Commit",
    "Rollback", "Describe", "Show", "Cache", "Uncache", "Refresh", "TruncateTable",
    "LoadData", "Analyze", "Export", "Lock",
)


def _name(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name)
    return str(getattr(node, "sql_name", lambda: type(node).__name__)())


def check_postgres(sql: str) -> None:
    """Raise :class:`QueryRefused` unless ``sql`` is one read-only query (module docstring)."""
    from sqlglot import exp

    from queryeval.systems.engines.sql_safety import parse_one_select

    root = parse_one_select(sql, "postgres")
    forbidden = tuple(getattr(exp, n) for n in _FORBIDDEN_NODES if hasattr(exp, n))
    for node in root.walk():
        if isinstance(node, forbidden):
            raise QueryRefused(f"{type(node).__name__.upper()} is not allowed inside a query")
        if isinstance(node, exp.Func) and _DENIED_FUNCTIONS.match(_name(node)):
            raise QueryRefused(f"function {_name(node)}() is not allowed (files, large objects, "
                               "other servers, settings or sessions)")
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise QueryRefused("SELECT ... FOR UPDATE/SHARE is not allowed")


class PostgresEngine(ConnectionEngine):
    """Read-only SQL on PostgreSQL. One connection, reused; use as a context manager."""

    dialect = "postgres"

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError("PostgreSQL needs psycopg: pip install 'queryeval[postgres]'") \
                from None
        self.url = url
        self._lock = threading.Lock()
        try:
            conn = psycopg.connect(url, connect_timeout=max(1, int(connect_timeout_s)),
                                   autocommit=False)
        except psycopg.Error as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(f"cannot connect to PostgreSQL ({_redact(url)}): {first}") from None
        conn.read_only = True
        self._conn: Any = conn

    def execute(self, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
        """Check and run one SELECT; raises QueryRefused, QueryTimeout or QueryFailed."""
        import psycopg
        from psycopg import errors as pg_errors

        check_limits(timeout_s, max_rows)
        check_postgres(query)
        with self._lock:
            conn = self._conn
            if conn is None:
                raise QueryFailed("engine is closed")
            cancelled = threading.Event()

            def cancel() -> None:
                cancelled.set()
                try:
                    conn.cancel()
                except psycopg.Error:  # pragma: no cover - the query ended meanwhile
                    pass

            timer = threading.Timer(timeout_s + 1.0, cancel)
            start = time.perf_counter()
            try:
                with conn.cursor() as setup:
                    setup.execute("SELECT set_config('statement_timeout', %s, true)",
                                  (f"{max(1, int(timeout_s * 1000))}ms",))
                timer.start()
                with conn.cursor(name="queryeval_q") as cur:
                    cur.execute(query)
                    rows = cur.fetchmany(max_rows + 1)
                    columns = [d.name for d in cur.description or ()]
            except pg_errors.QueryCanceled:
                raise QueryTimeout(f"query ran longer than {timeout_s:g} s; cancelled") from None
            except psycopg.Error as exc:
                if cancelled.is_set():
                    raise QueryTimeout(f"query ran longer than {timeout_s:g} s; cancelled") \
                        from None
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                syntax = isinstance(exc, pg_errors.SyntaxError)
                if isinstance(exc, (pg_errors.ReadOnlySqlTransaction,
                                    pg_errors.InsufficientPrivilege)):
                    raise QueryRefused(f"postgres: {first}") from None
                raise QueryFailed(f"postgres: {first}", syntax_error=syntax) from None
            finally:
                timer.cancel()
                try:
                    conn.rollback()
                except psycopg.Error:  # pragma: no cover - a broken connection
                    pass
        elapsed = (time.perf_counter() - start) * 1000.0
        return QueryResult(columns=columns, rows=[tuple(r) for r in rows[:max_rows]],
                           truncated=len(rows) > max_rows, elapsed_ms=elapsed, kind="sql")


def _redact(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)
