"""SQL on sqlite and DuckDB database files: read-only, one SELECT, deadline, memory cap.

Each engine runs :func:`.sql_safety.check_sql` in the caller's process, then sends the
query to its own worker process (``python -m queryeval.engines.query.sql_worker``),
which holds the locked-down connection. Why a process: some work cannot be interrupted
from inside (sqlite's ``printf('%.*c', 1e9, 'x')`` loops a billion times inside one
function call, never reaching the progress handler or ``sqlite3_interrupt``; DuckDB's
``repeat('x', 4e9)`` allocates 4 GB regardless of ``memory_limit``), so the deadline is
held by killing the process, and the memory cap is the worker's ``RLIMIT_DATA``
(``memory_limit_bytes``, default 2 GiB), under which such an allocation fails at once.
Inside the worker the usual guards still stop ordinary runaway queries without a kill:

sqlite (``SqliteEngine``)
    * ``file:...?mode=ro`` URI -- no writes to the database file;
    * ``SQLITE_LIMIT_ATTACHED = 0`` -- ``mode=ro`` alone still lets ``ATTACH`` create and
      write a *new* file;
    * an authorizer that allows only SQLITE_SELECT, SQLITE_READ, SQLITE_RECURSIVE and
      SQLITE_FUNCTION for functions on a safe list (no load_extension, randomblob,
      zeroblob ...), plus the schema registration of the table-valued functions the
      statement check allowed (json_each, json_tree); everything else (ATTACH, PRAGMA,
      DML, DDL, transactions) is denied;
    * ``SQLITE_LIMIT_LENGTH`` lowered to 100 MB;
    * a progress handler checking the deadline every 1,000 VM steps, and
      ``Connection.interrupt()`` from a timer at the deadline.

DuckDB (``DuckDBEngine``)
    * ``read_only=True``; ``enable_external_access=false`` -- read_only still allows
      ``COPY ... TO``, ``read_csv('/etc/passwd')``, ATTACH of new files, INSTALL/LOAD;
    * autoinstall/autoload of extensions off, ``lock_configuration=true`` so a query
      cannot ``SET`` any of this back; ``memory_limit`` (half the worker's cap),
      ``max_temp_directory_size`` (the worker's cap: what a query may spill to the worker's
      temporary folder; DuckDB's default is 90% of the free disk) and ``threads`` (default
      min(4, CPUs));
    * a watchdog thread calls ``Connection.interrupt()`` at the deadline and keeps
      calling it every 50 ms until the query ends (one early interrupt can be lost).
    TEMP tables remain possible in DuckDB's read-only mode (they live in memory); the
    sqlglot check refuses CREATE.

The parent waits ``timeout_s`` plus :data:`KILL_GRACE_S` for the worker's answer, then
kills it (``QueryTimeout``); the next query starts a fresh worker (outside its deadline).
Rows: :func:`.base.fetch_bounded` -- batches of ``fetchmany`` against ``max_rows`` and a byte
budget (``max_result_bytes``, default 128 MiB), so a result of huge rows fails in the worker
instead of reaching the evaluating process; ``truncated`` says whether a row beyond
``max_rows`` existed.

Every worker runs in the operating-system sandbox (:mod:`.sandbox`: no socket, reads only
its database, writes only in its own temporary folder, RLIMIT_DATA), so a statement that
slips past the policy and the connection's own locks still cannot reach the network, read
another file or change one.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from queryeval.engines.query import base
from queryeval.engines.query.base import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_MEMORY_LIMIT_BYTES,
    DEFAULT_TIMEOUT_S,
    MAX_SQL_CHARS,
    ConnectionEngine,
    QueryFailed,
    QueryRefused,
    QueryResult,
    QueryTimeout,
    check_limits,
    check_memory_limit,
    fetch_bounded,
)
from queryeval.engines.query.sql_safety import check_sql
from queryeval.engines.query.worker_handle import WorkerHandle
from queryeval.errors import InputError

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
        builder = p.parent / "build_db.py"  # a shipped example's database is built, not stored
        more = f" (build it first: python {builder})" if builder.is_file() else ""
        raise InputError(f"{what} database file not found{more}", path=p)
    return p


KILL_GRACE_S = 0.5
"""How long past ``timeout_s`` the parent waits for the worker before killing it."""
class _SqlEngine(WorkerHandle):
    """The parent side: statement check, then the sandboxed worker process with a hard
    deadline (sqlite, DuckDB and PostgreSQL alike)."""

    dialect: str = ""

    def __init__(self, path: Path | None, *, memory_limit_bytes: int | None,
                 threads: int | None, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
                 settings: dict[str, Any] | None = None) -> None:
        self.path = path
        self.memory_limit_bytes = check_memory_limit(memory_limit_bytes)
        self.max_result_bytes = max_result_bytes
        self.threads = threads
        self._settings = dict(settings or {})
        self._lock = threading.Lock()
        self._closed = False
        self._hold(sql_worker_process(self.dialect, str(path or "-"), self.memory_limit_bytes,
                                      threads))

    def close(self) -> None:
        """Stop the worker. Idempotent."""
        with self._lock:
            self._closed = True
            super().close()

    def check(self, query: str) -> frozenset[str]:
        """The statement policy (:func:`.sql_safety.check_sql`); the table functions it allowed."""
        return check_sql(query, self.dialect)  # type: ignore[arg-type]

    def start(self) -> None:
        """Start the worker now (outside any query's deadline), with the current settings."""
        with self._lock:
            self._start()

    def _start(self) -> None:
        self._ensure_started(self._init())

    def _init(self) -> dict[str, Any]:
        """The worker's settings frame: the engine's settings and the query checks' switch."""
        return {**self._settings, "checks": base.QUERY_CHECKS}

    def execute(self, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_rows: int = DEFAULT_MAX_ROWS, text_errors: str = "strict") -> QueryResult:
        """Check and run one SELECT; raises QueryRefused, QueryTimeout or QueryFailed.
        ``text_errors="ignore"``: sqlite text that is not valid UTF-8 is decoded dropping the
        bad bytes (test-suite-sql-eval's ``text_factory``) instead of failing the query; the
        other dialects hold valid UTF-8 only."""
        check_limits(timeout_s, max_rows)
        check_sql_length(query)
        table_functions = self.check(query) if base.QUERY_CHECKS else frozenset()
        request = {"query": query, "timeout_s": timeout_s, "max_rows": max_rows,
                   "table_functions": sorted(table_functions or ()),
                   "max_result_bytes": self.max_result_bytes,
                   "text_errors": "ignore" if text_errors == "ignore" else "strict"}
        with self._lock:
            if self._closed:
                raise QueryFailed("engine is closed")
            # a PostgreSQL worker whose connection was lost before the query ran is replaced
            # once: a fresh one connects (before its sandbox's filter is installed)
            status, payload, elapsed = self._ask(self._init(), request,
                                                 timeout_s + KILL_GRACE_S)
        if status != "ok":
            raise_worker_error(payload)
        return QueryResult(columns=payload["columns"], rows=payload["rows"],
                           truncated=payload["truncated"], elapsed_ms=elapsed, kind="sql",
                           extra={"engine_ms": payload["engine_ms"],
                                  "sandbox": self._worker.sandbox})


def sql_worker_process(dialect: str, path: str, memory_limit_bytes: int | None,
                       threads: int | None) -> Any:
    """A (not yet started) :mod:`.sql_worker` process for ``dialect`` on ``path`` (the
    neighbour runner's :data:`.neighbours.runner.MULTI_FILE`: the file named per request)."""
    from queryeval.engines.worker import WorkerProcess

    worker = WorkerProcess("queryeval.engines.query.sql_worker",
                           [dialect, path, str(memory_limit_bytes or 0), str(threads or 0)])
    worker.name = f"{dialect} worker"
    return worker


def raise_worker_error(payload: dict) -> None:
    """The SQL worker's error reply as the engines' exception: QueryRefused, QueryTimeout or
    QueryFailed (with its syntax-error flag)."""
    kind, reason = payload["kind"], payload["reason"]
    if kind == "refused":
        raise QueryRefused(reason)
    if kind == "timeout":
        raise QueryTimeout(reason)
    raise QueryFailed(reason, syntax_error=bool(payload.get("syntax_error")))


def check_sql_length(query: object, max_chars: int = MAX_SQL_CHARS) -> None:
    """Refuse SQL that is not text or longer than ``max_chars`` (before any parsing)."""
    if not isinstance(query, str):
        raise QueryRefused(f"query must be text, got {type(query).__name__}")
    if len(query) > max_chars:
        raise QueryRefused(f"query is {len(query):,} characters long; the limit is {max_chars:,}")


class SqliteEngine(_SqlEngine):
    """Read-only SQL on a sqlite file, run in a worker process; use as a context manager."""

    dialect = "sqlite"

    def __init__(self, path: str | Path, *,
                 memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES,
                 max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> None:
        p = _check_file(path, "sqlite")
        SqliteSession(p).close()  # a bad file is an InputError here, not a failed query
        super().__init__(p, memory_limit_bytes=memory_limit_bytes, threads=None,
                         max_result_bytes=max_result_bytes)


class DuckDBEngine(_SqlEngine):
    """Read-only SQL on a DuckDB file (worker process), no file system or network access."""

    dialect = "duckdb"

    def __init__(self, path: str | Path, *, threads: int | None = None,
                 memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES,
                 max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> None:
        p = _check_file(path, "DuckDB")
        DuckDBSession(p, threads=threads, memory_limit_bytes=memory_limit_bytes).close()
        super().__init__(p, memory_limit_bytes=memory_limit_bytes, threads=threads,
                         max_result_bytes=max_result_bytes)


# ------------------------------------------------------------ inside the worker process


class SqliteSession(ConnectionEngine):
    """The locked-down sqlite connection (lives in the worker process)."""

    max_result_bytes = 0
    """The byte budget of the next result (0: none); the worker sets it per request."""
    text_errors = "strict"
    """How the next result's text is decoded: ``strict`` UTF-8 (sqlite3's default: bad bytes
    fail the query) or ``ignore`` (bad bytes dropped); the worker sets it per request."""

    def __init__(self, path: Path, *, checks: bool = True) -> None:
        self.path = path
        self._denied: list[str] = []
        self._vtabs: frozenset[str] = frozenset()
        uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise InputError(f"cannot open sqlite database: {exc}", path=self.path) from None
        if checks:  # off only in tests (base.QUERY_CHECKS): then the OS sandbox alone holds
            if hasattr(conn, "setlimit"):  # Python >= 3.11; the authorizer denies ATTACH too
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

    def run(self, query: str, timeout_s: float, max_rows: int,
            table_functions: frozenset[str] = frozenset()) -> tuple[list[str], list[Any], bool]:
        """(columns, rows, truncated); raises QueryRefused / QueryTimeout / QueryFailed."""
        conn = self._conn
        if conn is None:
            raise QueryFailed("engine is closed")
        self._denied.clear()
        self._vtabs = frozenset(table_functions)
        deadline = time.monotonic() + timeout_s
        timed_out = False

        def progress() -> int:
            nonlocal timed_out
            if time.monotonic() > deadline:
                timed_out = True
                return 1  # non-zero aborts the statement
            return 0

        def interrupt() -> None:
            nonlocal timed_out
            timed_out = True
            conn.interrupt()

        timer = threading.Timer(timeout_s, interrupt)
        timer.daemon = True
        conn.set_progress_handler(progress, _PROGRESS_STEPS)
        if self.text_errors == "ignore":
            conn.text_factory = _decode_ignoring
        cur = conn.cursor()
        timer.start()
        try:
            cur.execute(query)
            columns = [d[0] for d in cur.description or ()]
            rows, truncated = fetch_bounded(cur.fetchmany, max_rows, self.max_result_bytes)
        except sqlite3.Error as exc:
            if timed_out:
                raise QueryTimeout(f"query ran longer than {timeout_s:g} s; interrupted") from None
            if self._denied:
                raise QueryRefused(f"not authorized: {', '.join(self._denied)}") from None
            msg = str(exc)
            raise QueryFailed(f"sqlite: {msg}", syntax_error="syntax error" in msg) from None
        finally:
            timer.cancel()
            cur.close()
            conn.set_progress_handler(None, 0)
            conn.text_factory = str
        if timed_out or time.monotonic() > deadline:
            raise QueryTimeout(f"query ran longer than {timeout_s:g} s")
        return columns, rows, truncated


def _decode_ignoring(data: bytes) -> str:
    """sqlite text as test-suite-sql-eval reads it: UTF-8, invalid bytes dropped."""
    return data.decode(errors="ignore")


class DuckDBSession(ConnectionEngine):
    """The locked-down DuckDB connection (lives in the worker process)."""

    max_result_bytes = 0
    """The byte budget of the next result (0: none); the worker sets it per request."""

    def __init__(self, path: Path, *, threads: int | None = None,
                 memory_limit_bytes: int | None = None, checks: bool = True,
                 temp_directory: str | None = None) -> None:
        import duckdb

        self.path = path
        config = _duckdb_config(threads, memory_limit_bytes, checks, temp_directory)
        try:
            self._conn: Any = duckdb.connect(str(self.path), read_only=True, config=config)
        except duckdb.Error as exc:
            raise InputError(f"cannot open DuckDB database: {exc}", path=self.path) from None

    def run(self, query: str, timeout_s: float, max_rows: int,
            table_functions: frozenset[str] = frozenset()) -> tuple[list[str], list[Any], bool]:
        """(columns, rows, truncated); raises QueryRefused / QueryTimeout / QueryFailed."""
        import duckdb

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
        guard.start()
        try:
            cur = conn.execute(query)
            columns = [d[0] for d in cur.description or ()]
            rows, truncated = fetch_bounded(cur.fetchmany, max_rows, self.max_result_bytes)
        except duckdb.Error as exc:
            done.set()
            guard.join()
            _rollback(conn)  # leave no aborted transaction behind for the next query
            if fired.is_set() or isinstance(exc, duckdb.InterruptException):
                raise QueryTimeout(f"query ran longer than {timeout_s:g} s; interrupted") from None
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if isinstance(exc, duckdb.PermissionException):
                raise QueryRefused(f"duckdb: {msg}") from None
            if isinstance(exc, duckdb.OutOfMemoryException):
                raise QueryFailed(f"duckdb: out of memory (worker cap): {msg}") from None
            raise QueryFailed(f"duckdb: {msg}",
                              syntax_error=isinstance(exc, duckdb.ParserException)) from None
        finally:
            done.set()
            guard.join()
        if fired.is_set():
            # It finished, but past the deadline (an interrupt may also still be pending
            # on the connection: absorb it).
            try:
                conn.execute("SELECT 1").fetchall()
            except duckdb.Error:
                pass
            raise QueryTimeout(f"query ran longer than {timeout_s:g} s")
        return columns, rows, truncated


def _duckdb_config(threads: int | None, memory_limit_bytes: int | None, checks: bool,
                   temp_directory: str | None) -> dict[str, Any]:
    """The locked-down configuration of a worker's DuckDB instance."""
    config: dict[str, Any] = {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "threads": threads or min(4, os.cpu_count() or 1),
    }
    if temp_directory:  # spilling goes to the worker's own folder (the sandbox's)
        config["temp_directory"] = temp_directory
    if memory_limit_bytes:
        config["memory_limit"] = f"{max(memory_limit_bytes // 2 // 1024**2, 32)}MB"
        # spilling is capped too (DuckDB's default: 90% of the free disk)
        config["max_temp_directory_size"] = f"{memory_limit_bytes // 1024**2}MiB"
    config["lock_configuration"] = True
    if not checks:  # test-only (base.QUERY_CHECKS): the OS sandbox alone holds
        config.update({"enable_external_access": True, "autoinstall_known_extensions": True,
                       "autoload_known_extensions": True, "lock_configuration": False})
    return config


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_SWITCH = "queryeval_switch"
_LEFT_BEHIND = (
    "SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = 'temp') "
    "+ (SELECT count(*) FROM duckdb_views() WHERE NOT internal AND database_name = 'temp') "
    "+ (SELECT count(*) FROM duckdb_sequences() WHERE database_name = 'temp') "
    "+ (SELECT count(*) FROM duckdb_indexes() WHERE database_name = 'temp') "
    "+ (SELECT count(*) FROM duckdb_functions() WHERE NOT internal AND database_name = 'temp') "
    "+ (SELECT count(*) FROM duckdb_databases() WHERE NOT internal "
    "AND database_name <> current_database())")
"""Objects a query left in the connection (0 when it holds the attached file alone)."""


class DuckDBFiles(DuckDBSession):
    """:class:`DuckDBSession` over many files, one at a time (the multi-file worker of
    :mod:`.neighbours.runner`): one in-memory DuckDB instance that ``ATTACH``es each file
    read-only under its stem (the catalog name a direct open gives it), ``USE``s it and
    ``DETACH``es the one before, so a query sees what it sees on a direct open of the file
    (``current_database()`` its stem; ``duckdb_databases()`` that file, ``system`` and
    ``temp``). A switch costs 1 to 2 ms where a read-only open (a new DuckDB instance) cost
    30 to 60 ms (docs/test-suite.md, Cost). The configuration is the direct open's,
    and the instance reaches only ``roots`` (``allowed_directories`` / ``allowed_paths``,
    then external access off and the configuration locked).

    With the query checks on, only one SELECT reaches it (:mod:`.sql_safety`), which leaves
    nothing in the connection; with them off (test-only: the sandbox alone) each switch
    checks that the queries before left no temporary object or other database
    (:data:`_LEFT_BEHIND`) and raises :class:`QueryFailed` if they did. Any failure here
    leaves the caller to close this and open the file directly."""

    def __init__(self, roots: list[str], *, threads: int | None = None,
                 memory_limit_bytes: int | None = None, checks: bool = True,
                 temp_directory: str | None = None) -> None:
        import duckdb

        self.path = None  # type: ignore[assignment]
        self.checks = checks
        config = _duckdb_config(threads, memory_limit_bytes, checks, temp_directory)
        locked = config.pop("lock_configuration")
        external = config["enable_external_access"]
        config["enable_external_access"] = True  # until the allowed paths are set
        conn = duckdb.connect(":memory:", config=config)
        try:
            if not external:
                real = [os.path.realpath(r) for r in roots]
                conn.execute("SET allowed_directories = ?",
                             [[r.rstrip(os.sep) + os.sep for r in real if os.path.isdir(r)]])
                conn.execute("SET allowed_paths = ?",
                             [[r + suffix for r in real if not os.path.isdir(r)
                               for suffix in ("", ".wal")]])
                conn.execute("SET enable_external_access = false")
            if locked:
                conn.execute("SET lock_configuration = true")
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._current = "memory"

    def use(self, path: Path) -> None:
        """Make ``path`` (read-only) the connection's database, in place of the one before."""
        conn, stem = self._conn, Path(path).stem
        if conn is None:
            raise QueryFailed("engine is closed")
        if self._current == stem:  # the same catalog name: through a placeholder
            conn.execute(f"ATTACH ':memory:' AS {_ident(_SWITCH)}")
            conn.execute(f"USE {_ident(_SWITCH)}")
            conn.execute(f"DETACH {_ident(stem)}")
            self._current = _SWITCH
        literal = os.path.realpath(path).replace("'", "''")
        conn.execute(f"ATTACH '{literal}' AS {_ident(stem)} (READ_ONLY)")
        conn.execute(f"USE {_ident(stem)}")
        conn.execute(f"DETACH {_ident(self._current)}")
        self._current, self.path = stem, Path(path)
        if not self.checks and conn.execute(_LEFT_BEHIND).fetchone()[0]:
            raise QueryFailed("a query left objects in the shared DuckDB connection")


def _rollback(conn: Any) -> None:
    """Roll back an open transaction if there is one (errors mean there was none)."""
    import duckdb

    try:
        conn.execute("ROLLBACK")
    except duckdb.Error:
        pass
