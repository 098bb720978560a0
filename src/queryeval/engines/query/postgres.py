"""Read-only SQL on a PostgreSQL server (``postgresql://user@host:port/db``), with psycopg 3
(``pip install 'queryeval[postgres]'``).

Layers, each enough on its own for the common cases, together for the rest:

1. **Policy** (:func:`check_postgres`, before anything is sent): sqlglot parses the text
   in the postgres dialect; exactly one statement whose root is a SELECT / set operation /
   VALUES; refused anywhere in the tree: DML (in CTEs too), DDL, ``SELECT … INTO``, row
   locks (``FOR UPDATE/SHARE``), COPY (``COPY … TO PROGRAM`` included), SET (``SET ROLE``,
   ``SET SESSION AUTHORIZATION``), transactions, opaque commands (DO, PREPARE, LISTEN …),
   ``U&"…"`` identifiers (the server decodes their escapes, sqlglot does not), and functions
   that reach files, large objects, other servers, settings or other sessions, have side
   effects that outlive ROLLBACK, or run SQL text (``pg_read_file``, ``pg_ls_dir``,
   ``lo_import``, ``lo_export``, ``dblink*``, ``set_config``, ``pg_terminate_backend``,
   ``pg_advisory_lock``, ``pg_stat_reset``, ``nextval``, ``query_to_xml``, ``ts_stat``,
   ``ts_rewrite``, ``pg_sleep`` …). Text sqlglot cannot parse is refused.
2. **Worker** (:mod:`.sql_worker`): the connection lives in a worker process that opens it
   and then installs the operating-system sandbox (:mod:`.sandbox`: no new socket, writes
   only in its temporary folder, RLIMIT_DATA); rows are fetched in batches against
   ``max_rows`` and a byte budget (``max_result_bytes``), so a huge result fails in the
   worker instead of filling the evaluating process; the worker is killed at the deadline
   (plus a grace), and a query that finishes past it is a ``QueryTimeout``.
3. **Server**: every query runs in a ``READ ONLY`` transaction that is rolled back, with
   ``statement_timeout`` = the time limit (``set_config(…, true)``: this transaction only),
   through a server-side cursor (``DECLARE … CURSOR FOR <query>``, which accepts exactly one
   SELECT/VALUES without data-modifying CTEs), fetching at most ``max_rows + 1`` rows. After
   the rollback the engine releases session-level advisory locks
   (``pg_advisory_unlock_all()``), the one effect of a read-only query ROLLBACK keeps.
4. **Client deadline**: at ``timeout_s`` the worker cancels the query
   (``connection.cancel()``); at ``timeout_s + 0.5`` s the parent kills the worker.

A connection the server dropped (restart, terminated backend) is replaced before the next
query (by a fresh worker: a sandboxed one cannot open a socket). Use a login role that can only read (``GRANT SELECT``) as well: a read-only
transaction still lets a superuser *read* server files or reset statistics through a function
the policy does not know about.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from queryeval.engines.query.base import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MEMORY_LIMIT_BYTES,
    ConnectionEngine,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    fetch_bounded,
)
from queryeval.engines.query.sql import _SqlEngine
from queryeval.engines.query.sql_safety import remembered
from queryeval.errors import ConfigError

_DENIED_FUNCTIONS = re.compile(
    # files and programs on the server, large objects
    r"^(pg_read_file|pg_read_binary_file|pg_ls_\w*|pg_stat_file|pg_file_\w*|pg_logdir_ls|"
    r"lo_\w*|loread|lowrite|"
    # other servers
    r"dblink\w*|"
    # settings, other sessions, the server itself
    r"set_config|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile|"
    r"pg_promote|pg_switch_wal|pg_create_\w*|pg_drop_\w*|pg_replication_\w*|"
    r"pg_logical_\w*|pg_backup_\w*|pg_start_backup|pg_stop_backup|pg_wal_replay_\w*|"
    r"pg_log_backend_memory_contexts|binary_upgrade_\w*|pg_import_system_collations|"
    # side effects that survive ROLLBACK or reach other sessions
    r"pg_notify|pg_advisory\w*|pg_try_advisory\w*|pg_stat_reset\w*|pg_export_snapshot|"
    r"nextval|setval|gin_clean_pending_list|brin_summarize_\w*|brin_desummarize_range|"
    # functions that run SQL text (the check cannot see inside the string)
    r"query_to_xml\w*|table_to_xml\w*|cursor_to_xml\w*|schema_to_xml\w*|"
    r"database_to_xml\w*|ts_stat|ts_rewrite|"
    # time
    r"pg_sleep\w*)$",
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
    """Raise :class:`QueryRefused` unless ``sql`` is one read-only query (module docstring).
    An accepted text is parsed once a process (:func:`.sql_safety.remembered`)."""
    _remembered_check(sql)


def _check_postgres(sql: str) -> None:
    from sqlglot import exp

    from queryeval.engines.query.sql_safety import parse_one_select

    root = parse_one_select(sql, "postgres")
    _refuse_unicode_identifiers(sql)
    forbidden = tuple(getattr(exp, n) for n in _FORBIDDEN_NODES if hasattr(exp, n))
    for node in root.walk():
        if isinstance(node, forbidden):
            raise QueryRefused(f"{type(node).__name__.upper()} is not allowed inside a query")
        if isinstance(node, exp.Func) and _DENIED_FUNCTIONS.match(_name(node)):
            raise QueryRefused(f"function {_name(node)}() is not allowed (files, large objects, "
                               "other servers, settings, sessions, side effects or SQL text)")
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise QueryRefused("SELECT ... FOR UPDATE/SHARE is not allowed")


_remembered_check = remembered(_check_postgres)


def _refuse_unicode_identifiers(sql: str) -> None:
    """Refuse ``U&"…"`` identifiers. PostgreSQL decodes their escapes
    (``U&"pg_advisory\\005flock"(1)`` calls pg_advisory_lock) while sqlglot reads a column
    ``U``, a bitwise AND and a function whose name still holds the escape, so a name check
    on the tree would miss the function. (``U&'…'`` strings are data and stay allowed.)"""
    from sqlglot.dialects.postgres import Postgres
    from sqlglot.tokens import TokenType

    tokens = Postgres().tokenize(sql)
    for u, amp, name in zip(tokens, tokens[1:], tokens[2:], strict=False):
        if (u.token_type == TokenType.VAR and u.text.upper() == "U"
                and amp.token_type == TokenType.AMP and amp.start == u.end + 1
                and name.token_type == TokenType.IDENTIFIER and name.start == amp.end + 1):
            raise QueryRefused('Unicode-escaped identifiers (U&"...") are not allowed: the '
                               "statement check cannot verify the name they spell")


class PostgresEngine(_SqlEngine):
    """Read-only SQL on PostgreSQL, run by a sandboxed worker process that holds the one
    connection (see :mod:`.sql_worker`). Use as a context manager."""

    dialect = "postgres"

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0,
                 memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES,
                 max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise ConfigError("PostgreSQL needs psycopg: pip install 'queryeval[postgres]'") \
                from None
        self.url = url
        self.connect_timeout_s = connect_timeout_s
        super().__init__(None, memory_limit_bytes=memory_limit_bytes, threads=None,
                         max_result_bytes=max_result_bytes,
                         settings={"url": url, "connect_timeout_s": connect_timeout_s})
        try:
            self.start()  # a server that cannot be reached is a ConfigError now, not per query
        except QueryFailed:
            self.close()
            raise ConfigError(self._worker.last_fatal or f"cannot connect to PostgreSQL "
                              f"({_redact(url)})") from None

    def check(self, query: str) -> frozenset[str]:
        check_postgres(query)
        return frozenset()


class PostgresSession(ConnectionEngine):
    """The connection to the server (lives in the worker process; module docstring)."""

    max_result_bytes = 0
    """The byte budget of the next result (0: none); the worker sets it per request."""
    clock = staticmethod(time.monotonic)
    """What measures a query against its deadline (tests replace it)."""

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0) -> None:
        self.url = url
        self.connect_timeout_s = connect_timeout_s
        self._conn: Any = self._connect()

    def _connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(self.url, connect_timeout=max(1, int(self.connect_timeout_s)),
                                   autocommit=False)
        except psycopg.Error as exc:
            raise ConfigError(f"cannot connect to PostgreSQL ({_redact(self.url)}): "
                              f"{_first_line(exc)}") from None
        conn.read_only = True  # every transaction psycopg opens is BEGIN READ ONLY
        return conn

    def _begin(self, timeout_s: float) -> Any:
        """The connection, in a fresh READ ONLY transaction with ``statement_timeout`` set.
        A connection the server has dropped (restart, terminated backend, network) cannot be
        replaced here -- the sandbox forbids new sockets -- so the worker asks the parent for
        a fresh worker (``restart``): nothing of the query has run yet, so that is safe."""
        import psycopg

        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            raise _Restart("postgres: connection lost")
        try:
            _set_timeout(conn, timeout_s)
        except psycopg.Error as exc:
            if not conn.broken:
                _end(conn)
                raise QueryFailed(f"postgres: {_first_line(exc)}") from None
            raise _Restart(f"postgres: connection lost; {_first_line(exc)}") from None
        return conn

    def run(self, query: str, timeout_s: float, max_rows: int,
            table_functions: frozenset[str] = frozenset()) -> tuple[list[str], list[Any], bool]:
        """(columns, rows, truncated): a server-side cursor, fetched in batches against
        ``max_rows`` and the byte budget; raises QueryRefused / QueryTimeout / QueryFailed.
        A query that finishes past its deadline is a QueryTimeout."""
        import psycopg
        from psycopg import errors as pg_errors

        conn = self._begin(timeout_s)
        cancelled = threading.Event()

        def cancel() -> None:
            cancelled.set()
            try:
                conn.cancel()
            except psycopg.Error:  # pragma: no cover - the query ended meanwhile
                pass

        timer = threading.Timer(timeout_s, cancel)
        timer.daemon = True
        start = self.clock()
        try:
            timer.start()
            with conn.cursor(name="queryeval_q") as cur:
                cur.execute(query)
                columns = [d.name for d in cur.description or ()]
                rows, truncated = fetch_bounded(cur.fetchmany, max_rows, self.max_result_bytes)
        except pg_errors.QueryCanceled:
            raise QueryTimeout(f"query ran longer than {timeout_s:g} s; cancelled") from None
        except psycopg.Error as exc:
            if cancelled.is_set():
                raise QueryTimeout(f"query ran longer than {timeout_s:g} s; cancelled") from None
            first = _first_line(exc)
            syntax = isinstance(exc, pg_errors.SyntaxError)
            if isinstance(exc, (pg_errors.ReadOnlySqlTransaction,
                                pg_errors.InsufficientPrivilege)):
                raise QueryRefused(f"postgres: {first}") from None
            raise QueryFailed(f"postgres: {first}", syntax_error=syntax) from None
        finally:
            timer.cancel()
            _end(conn)
        if cancelled.is_set() or self.clock() - start > timeout_s:
            raise QueryTimeout(f"query ran longer than {timeout_s:g} s")
        return columns, rows, truncated


class _Restart(QueryFailed):
    """The connection is gone; the parent starts a fresh worker and retries once."""

    kind = "restart"


def _set_timeout(conn: Any, timeout_s: float) -> None:
    """Open the transaction (psycopg sends BEGIN READ ONLY) and set its statement_timeout."""
    with conn.cursor() as setup:
        setup.execute("SELECT set_config('statement_timeout', %s, true)",
                      (f"{max(1, int(timeout_s * 1000))}ms",))


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _end(conn: Any) -> None:
    """Roll the query's transaction back, then release session-level advisory locks: they
    are the one effect of a read-only query that survives ROLLBACK (and would block other
    sessions until the engine closes). One round trip, outside any transaction."""
    import psycopg

    try:
        conn.rollback()
        conn.autocommit = True
        try:
            conn.execute("SELECT pg_advisory_unlock_all()")
        finally:
            conn.autocommit = False
    except psycopg.Error:  # a broken connection: _begin replaces it before the next query
        pass


def _redact(url: str) -> str:
    """The URL without its password (``user:secret@`` and ``?password=secret``)."""
    from queryeval.io.urls import redact

    return redact(url)
