"""SQL on sqlite and DuckDB database files: read-only, one SELECT, timeout, row limit.

Both engines run :func:`.sql_safety.check_sql` first, then execute on a connection that is
locked down on its own, because each read-only mode has measured holes:

sqlite (``SqliteEngine``)
    * ``file:...?mode=ro`` URI -- no writes to the database file;
    * ``SQLITE_LIMIT_ATTACHED = 0`` -- ``mode=ro`` alone still lets ``ATTACH`` create and
      write a *new* file;
    * an authorizer that allows only SQLITE_SELECT, SQLITE_READ, SQLITE_RECURSIVE and
      SQLITE_FUNCTION for functions on a safe list (no load_extension, randomblob,
      zeroblob ...); everything else (ATTACH, PRAGMA, DML, DDL, transactions) is denied;
    * ``SQLITE_LIMIT_LENGTH`` lowered to 100 MB so ``printf('%.*c', 1e9, 'x')`` cannot
      allocate gigabytes;
    * a progress handler checking the deadline every 1,000 VM steps (the timeout).

DuckDB (``DuckDBEngine``)
    * ``read_only=True``;
    * ``enable_external_access=false`` -- read_only still allows ``COPY ... TO``,
      ``read_csv('/etc/passwd')``, ATTACH of new files, INSTALL/LOAD;
    * autoinstall/autoload of extensions off, ``lock_configuration=true`` so a query
      cannot ``SET`` any of this back;
    * the timeout: a watchdog thread calls ``Connection.interrupt()`` at the deadline and
      keeps calling it every 50 ms until the query ends (one early interrupt can be lost).
    TEMP tables remain possible in DuckDB's read-only mode (they live in memory); the
    sqlglot check refuses CREATE.

Rows: ``fetchmany(max_rows + 1)`` -- both drivers stream, so a huge result is never
materialised; ``truncated`` says whether a row beyond ``max_rows`` existed.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
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
from queryeval.systems.engines.sql_safety import check_sql

SQLITE_MAX_LENGTH = 100_000_000
_PROGRESS_STEPS = 1000

# Functions a read-only query may call (core, aggregate, window, date/time, math, JSON).
SQLITE_SAFE_FUNCTIONS = frozenset("""
abs char coalesce concat concat_ws format glob hex ifnull iif instr length like likelihood
likely lower ltrim max min nullif octet_length printf quote random replace round rtrim sign
soundex sqlite_version substr substring trim typeof unhex unicode unlikely upper
avg count group_concat string_agg sum total
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
nth_value
date time datetime julianday unixepoch strftime timediff current_date current_time
current_timestamp
acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log log10
log2 mod pi pow power radians sin sinh sqrt tan tanh trunc
json json_array json_array_length json_extract json_insert json_object json_patch
json_remove json_replace json_set json_type json_valid json_quote json_group_array
json_group_object json_each json_tree json_error_position json_pretty jsonb jsonb_array
jsonb_extract jsonb_insert jsonb_object jsonb_patch jsonb_remove jsonb_replace jsonb_set
jsonb_group_array jsonb_group_object
""".split())

_SQLITE_ALLOWED_ACTIONS = frozenset({
    sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
})


_SQLITE_ACTION_NAMES: dict[int, str] = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_")
    for name in (
        "SQLITE_CREATE_INDEX", "SQLITE_CREATE_TABLE", "SQLITE_CREATE_TEMP_INDEX",
        "SQLITE_CREATE_TEMP_TABLE", "SQLITE_CREATE_TEMP_TRIGGER", "SQLITE_CREATE_TEMP_VIEW",
        "SQLITE_CREATE_TRIGGER", "SQLITE_CREATE_VIEW", "SQLITE_DELETE", "SQLITE_DROP_INDEX",
        "SQLITE_DROP_TABLE", "SQLITE_DROP_TEMP_INDEX", "SQLITE_DROP_TEMP_TABLE",
        "SQLITE_DROP_TEMP_TRIGGER", "SQLITE_DROP_TEMP_VIEW", "SQLITE_DROP_TRIGGER",
        "SQLITE_DROP_VIEW", "SQLITE_INSERT", "SQLITE_PRAGMA", "SQLITE_READ", "SQLITE_SELECT",
        "SQLITE_TRANSACTION", "SQLITE_UPDATE", "SQLITE_ATTACH", "SQLITE_DETACH",
        "SQLITE_ALTER_TABLE", "SQLITE_REINDEX", "SQLITE_ANALYZE", "SQLITE_CREATE_VTABLE",
        "SQLITE_DROP_VTABLE", "SQLITE_FUNCTION", "SQLITE_SAVEPOINT", "SQLITE_RECURSIVE",
    ) if hasattr(sqlite3, name)
}


def _check_file(path: str | Path, what: str) -> Path:
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise InputError(f"{what} database file not found", path=p)
    return p


class SqliteEngine(ConnectionEngine):
    """Read-only SQL on a sqlite file. One connection, reused; use as a context manager."""

    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = _check_file(path, "sqlite")
        self._denied: list[str] = []
        self._vtabs: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise InputError(f"cannot open sqlite database: {exc}", path=self.path) from None
        if hasattr(conn, "setlimit"):  # Python >= 3.11; the authorizer denies ATTACH anyway
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_LENGTH)
        conn.set_authorizer(self._authorize)
        self._conn: sqlite3.Connection | None = conn

    def _authorize(self, action: int, arg1: str | None, arg2: str | None,
                   db: str | None, trigger: str | None) -> int:
        if action in _SQLITE_ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master" and db == "main" \
                and self._vtabs:
            # sqlite registering an eponymous virtual table (json_each ...) that the
            # statement check found and allowed; the file is read-only and sqlite itself
            # refuses real writes to sqlite_master (writable_schema is off).
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in SQLITE_SAFE_FUNCTIONS:
            return sqlite3.SQLITE_OK
        what = _SQLITE_ACTION_NAMES.get(action, f"action {action}")
        detail = arg2 if action == sqlite3.SQLITE_FUNCTION else (arg1 or "")
        self._denied.append(f"{what}({detail})" if detail else what)
        return sqlite3.SQLITE_DENY

    def execute(self, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
        """Check and run one SELECT; raises QueryRefused, QueryTimeout or QueryFailed."""
        check_limits(timeout_s, max_rows)
        vtabs = check_sql(query, "sqlite")
        with self._lock:
            conn = self._conn
            if conn is None:
                raise QueryFailed("engine is closed")
            self._denied.clear()
            self._vtabs = vtabs
            deadline = time.monotonic() + timeout_s
            timed_out = False

            def progress() -> int:
                nonlocal timed_out
                if time.monotonic() > deadline:
                    timed_out = True
                    return 1  # non-zero aborts the statement
                return 0

            conn.set_progress_handler(progress, _PROGRESS_STEPS)
            start = time.perf_counter()
            cur = conn.cursor()
            try:
                cur.execute(query)
                columns = [d[0] for d in cur.description or ()]
                rows = cur.fetchmany(max_rows + 1)
            except sqlite3.Error as exc:
                if timed_out:
                    raise QueryTimeout(f"query ran longer than {timeout_s:g} s; interrupted") from None
                if self._denied:
                    raise QueryRefused(f"not authorized: {', '.join(self._denied)}") from None
                msg = str(exc)
                raise QueryFailed(f"sqlite: {msg}", syntax_error="syntax error" in msg) from None
            finally:
                cur.close()
                conn.set_progress_handler(None, 0)
        elapsed = (time.perf_counter() - start) * 1000.0
        truncated = len(rows) > max_rows
        return QueryResult(columns=columns, rows=[tuple(r) for r in rows[:max_rows]],
                           truncated=truncated, elapsed_ms=elapsed, kind="sql")


class DuckDBEngine(ConnectionEngine):
    """Read-only SQL on a DuckDB file, no file system or network access."""

    dialect = "duckdb"

    def __init__(self, path: str | Path, *, threads: int | None = None) -> None:
        import duckdb

        self.path = _check_file(path, "DuckDB")
        config: dict[str, Any] = {
            "enable_external_access": False,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
        }
        if threads is not None:
            config["threads"] = threads
        config["lock_configuration"] = True
        try:
            self._conn: Any = duckdb.connect(str(self.path), read_only=True, config=config)
        except duckdb.Error as exc:
            raise InputError(f"cannot open DuckDB database: {exc}", path=self.path) from None
        self._lock = threading.Lock()

    def execute(self, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
        """Check and run one SELECT; raises QueryRefused, QueryTimeout or QueryFailed."""
        import duckdb

        check_limits(timeout_s, max_rows)
        check_sql(query, "duckdb")
        with self._lock:
            conn = self._conn
            if conn is None:
                raise QueryFailed("engine is closed")
            fired = threading.Event()
            done = threading.Event()

            def watchdog() -> None:
                # Keep interrupting until the query ends: an interrupt() that lands before
                # DuckDB has started executing (parse/bind under load) would otherwise be lost.
                if done.wait(timeout_s):
                    return
                fired.set()
                while not done.is_set():
                    conn.interrupt()
                    done.wait(0.05)

            guard = threading.Thread(target=watchdog, daemon=True, name="queryeval-duckdb-timeout")
            start = time.perf_counter()
            guard.start()
            try:
                cur = conn.execute(query)
                columns = [d[0] for d in cur.description or ()]
                rows = cur.fetchmany(max_rows + 1)
            except duckdb.Error as exc:
                done.set()
                guard.join()
                _rollback(conn)  # leave no aborted transaction behind for the next query
                if fired.is_set() or isinstance(exc, duckdb.InterruptException):
                    raise QueryTimeout(f"query ran longer than {timeout_s:g} s; interrupted") from None
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if isinstance(exc, duckdb.PermissionException):
                    raise QueryRefused(f"duckdb: {msg}") from None
                raise QueryFailed(f"duckdb: {msg}",
                                  syntax_error=isinstance(exc, duckdb.ParserException)) from None
            finally:
                done.set()
                guard.join()
            elapsed = (time.perf_counter() - start) * 1000.0
            if fired.is_set():
                # It finished, but past the deadline (an interrupt may also still be pending
                # on the connection: absorb it).
                try:
                    conn.execute("SELECT 1").fetchall()
                except duckdb.Error:
                    pass
                raise QueryTimeout(f"query ran longer than {timeout_s:g} s")
        truncated = len(rows) > max_rows
        return QueryResult(columns=columns, rows=[tuple(r) for r in rows[:max_rows]],
                           truncated=truncated, elapsed_ms=elapsed, kind="sql")


def _rollback(conn: Any) -> None:
    """Roll back an open transaction if there is one (errors mean there was none)."""
    import duckdb

    try:
        conn.execute("ROLLBACK")
    except duckdb.Error:
        pass
