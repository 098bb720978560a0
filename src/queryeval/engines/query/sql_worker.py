"""The SQL worker process: one locked-down sqlite, DuckDB or PostgreSQL connection, in the
operating-system sandbox.

``python -m queryeval.engines.query.sql_worker DIALECT PATH MEMORY_BYTES THREADS``
(0 means "no cap" / "default"; for PostgreSQL PATH is ``-``). The parent's first frame is
the settings dict (``checks``: the test-only switch of :data:`.base.QUERY_CHECKS`; ``url``:
the PostgreSQL server, kept off the command line because it may hold a password).

Order matters. sqlite / DuckDB: the sandbox (:func:`.sandbox.apply`: RLIMIT_DATA, Landlock,
seccomp) first -- before DuckDB is imported or any thread started -- then the database is
opened read-only. PostgreSQL: the one connection to the configured server first, then the
sandbox, so the open socket keeps working and no new one can be made (a lost connection
ends the worker; the parent starts a fresh one). Then the worker answers requests with the
framing of :mod:`..worker`: ``("ok", {"columns", "rows", "truncated", "engine_ms"})``
or ``("error", {"kind", "reason", "syntax_error"?})``. The parent kills it when a query
overruns its deadline (see :mod:`.sql`).

With PATH ``*`` (sqlite / DuckDB, :mod:`.neighbours.runner`) the worker opens no file at
start: each request names its file (``path``), opened read-only in the sandbox, one at a
time; a file outside the folders the settings frame allows (``roots``) is refused -- and the
sandbox lets the worker read nothing else (:func:`own_files`): a changed list of roots
restarts the worker (:mod:`.worker_handle`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from queryeval.engines.query.sandbox import allowed


def handle(session: Any, request: dict[str, Any]) -> tuple[str, Any]:
    """Run one request; never raises (errors become replies)."""
    from queryeval.engines.query.base import QueryExecutionError

    start = time.perf_counter()
    session.max_result_bytes = int(request.get("max_result_bytes") or 0)
    session.text_errors = "ignore" if request.get("text_errors") == "ignore" else "strict"
    try:
        columns, rows, truncated = session.run(
            request["query"], float(request["timeout_s"]), int(request["max_rows"]),
            frozenset(request.get("table_functions") or ()))
    except QueryExecutionError as exc:
        return ("error", exc.to_dict())
    except MemoryError:
        return ("error", {"kind": "failed", "reason": "out of memory (worker cap)"})
    except Exception as exc:  # noqa: BLE001 - an engine error must become a reply
        return ("error", {"kind": "failed", "reason": f"{type(exc).__name__}: {exc}"})
    return ("ok", {"columns": columns, "rows": [tuple(map(wire_value, row)) for row in rows],
                   "truncated": truncated, "engine_ms": (time.perf_counter() - start) * 1000.0})


def _plain_types() -> tuple[frozenset[type], frozenset[type]]:
    import datetime as dt
    import decimal
    import ipaddress
    import uuid
    import zoneinfo

    plain = frozenset({type(None), bool, int, float, str, bytes, bytearray, decimal.Decimal,
                       dt.date, dt.timedelta, uuid.UUID, ipaddress.IPv4Address,
                       ipaddress.IPv6Address, ipaddress.IPv4Network, ipaddress.IPv6Network,
                       ipaddress.IPv4Interface, ipaddress.IPv6Interface})
    return plain, frozenset({type(None), dt.timezone, zoneinfo.ZoneInfo})


_PLAIN, _PLAIN_TZ = _plain_types()


def wire_value(value: Any) -> Any:
    """``value`` as the parent may read it (:data:`..worker._SAFE_GLOBALS`): the value
    types rows hold stay as they are (lists, tuples and dicts through), anything else --
    psycopg's ranges and multiranges, a time zone of another kind -- becomes its text, which
    is what the parent's conversions (``str(value)``) made of it."""
    import datetime as dt

    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind in (dt.datetime, dt.time):
        return value if type(value.tzinfo) in _PLAIN_TZ else str(value)
    if kind in (list, tuple):
        return kind(wire_value(v) for v in value)
    if kind is dict:
        return {wire_value(k): wire_value(v) for k, v in value.items()}
    if kind is memoryview:
        return bytes(value)
    return str(value)


def open_session(dialect: str, path: str, memory: int, threads: int,
                 settings: dict[str, Any]) -> Any:
    checks = bool(settings.get("checks", True))
    if dialect == "postgres":
        from queryeval.engines.query.postgres import PostgresSession

        return PostgresSession(str(settings["url"]),
                               connect_timeout_s=float(settings.get("connect_timeout_s") or 10))
    from queryeval.engines.query.sql import DuckDBSession, SqliteSession

    if dialect == "sqlite":
        return SqliteSession(Path(path), checks=checks)
    return DuckDBSession(Path(path), threads=threads or None, memory_limit_bytes=memory or None,
                         checks=checks, temp_directory=os.environ.get("TMPDIR"))


MULTI_FILE = "*"


class FileSessions:
    """The multi-file mode's session: the file a request names, opened read-only (the last
    one kept open for the next request on it); DuckDB files attached one after another to one
    connection (:class:`..sql.DuckDBFiles`) rather than a DuckDB instance each."""

    def __init__(self, dialect: str, memory: int, threads: int, settings: dict[str, Any]) -> None:
        self.dialect, self.memory, self.threads, self.settings = dialect, memory, threads, settings
        self.roots = [str(r) for r in settings.get("roots") or ()]
        self.path: str | None = None
        self.session: Any = None
        self.writer: Any = None  # DuckDB: the one connection writing every neighbour

    def handle(self, request: dict[str, Any]) -> tuple[str, Any]:
        if request.get("op") == "write":  # a neighbour, in this worker's own folder
            return self.build(request)
        path = str(request.get("path") or "")
        if not path or not allowed(path, self.roots):
            return ("error", {"kind": "refused",
                              "reason": "the worker may open only the files its parent allowed"})
        if request.get("op") in ("schema", "rows"):
            return self.build(request)
        if path != self.path and not self.attach(path):
            self.close()
            try:
                self.session = open_session(self.dialect, path, self.memory, self.threads,
                                            self.settings)
            except Exception as exc:  # noqa: BLE001 - a bad file is a failed request
                reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
                return ("error", {"kind": "failed", "reason": str(reason)})
            self.path = path
        return handle(self.session, request)

    def attach(self, path: str) -> bool:
        """DuckDB: ``path`` made the database of the one shared connection
        (:class:`..sql.DuckDBFiles`); False (nothing held) where that fails -- the caller
        then opens the file on its own, as for sqlite."""
        if self.dialect != "duckdb":
            return False
        from queryeval.engines.query.sql import DuckDBFiles

        try:
            if not isinstance(self.session, DuckDBFiles):
                self.close()
                self.session = DuckDBFiles(self.roots, threads=self.threads or None,
                                           memory_limit_bytes=self.memory or None,
                                           checks=bool(self.settings.get("checks", True)),
                                           temp_directory=os.environ.get("TMPDIR"))
            self.session.use(Path(path))
        except Exception:  # noqa: BLE001 - any failure: the direct open decides
            self.close()
            return False
        self.path = path
        return True

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session, self.path = None, None

    def build(self, request: dict[str, Any]) -> tuple[str, Any]:
        """The test-suite builder's steps on a database (:mod:`.neighbours.schema`): read
        the schema and sample of an allowed file (``"schema"``), every table's rows of one
        (``"rows"``), or write a neighbour into this worker's own folder (``"write"``). The
        parent's deadline (a kill) and the sandbox hold them as they hold a query."""
        from queryeval.engines.query.neighbours import schema as sch
        from queryeval.engines.worker import WORKER_TMP_ENV

        sch.MEMORY_LIMIT_BYTES = self.memory
        op = request["op"]
        if op != "write" and self.path == str(request.get("path")):
            self.close()  # DuckDB opens a file once per process with one configuration
        try:
            if op == "schema":
                doc = sch.read_schema(Path(request["path"]), self.dialect).to_wire()
                for t in doc["tables"]:
                    t["values"] = {c: [wire_value(v) for v in vs] for c, vs in t["values"].items()}
                return ("ok", {"schema": doc})
            if op == "rows":
                tables = sch.table_rows(Path(request["path"]), self.dialect)
                return ("ok", {"tables": {n: {"columns": t["columns"],
                                              "rows": [[wire_value(v) for v in r]
                                                       for r in t["rows"]]}
                                          for n, t in tables.items()}})
            folder = Path(os.environ.get(WORKER_TMP_ENV) or tempfile.gettempdir())
            name = os.path.basename(str(request["name"]))
            refused: dict[str, str] = {}
            made = folder / name
            if self.dialect == "duckdb":  # written in a folder of its own, then moved up
                self.writer = self.writer or sch.DuckDBWriter(folder / "duckdb-writes")
                made = self.writer.folder / name
            kept = sch.write_database(sch.Schema.from_wire(request["schema"]), made,
                                      request["rows"], refused, self.writer)
            if made != folder / name:
                os.replace(made, folder / name)
            return ("ok", {"kept": {t: [tuple(map(wire_value, r)) for r in rs]
                                    for t, rs in kept.items()}, "refused": refused})
        except MemoryError:
            return ("error", {"kind": "failed", "reason": "out of memory (worker cap)"})
        except Exception as exc:  # noqa: BLE001 - an engine error must become a reply
            return ("error", {"kind": "failed", "reason": f"{type(exc).__name__}: {exc}"})


def own_files(dialect: str, path: str, settings: dict[str, Any]) -> list[str]:
    """What the worker may read besides Python and the libraries (:func:`.sandbox.apply`):
    its database file (and the write-ahead log beside it, which an engine replays when one
    was left), or in the multi-file mode the folders and files the settings frame allows
    (``roots``; a file's logs with it: sqlite opens a WAL database only with its ``-shm``);
    nothing for PostgreSQL (the server reads, not the worker)."""
    if dialect == "postgres":
        return []
    logs = (".wal",) if dialect == "duckdb" else ("-wal", "-shm", "-journal")
    files = [str(r) for r in settings.get("roots") or ()] if path == MULTI_FILE else [path]
    return [*files, *(f + suffix for f in files for suffix in logs
                      if os.path.isfile(f) and os.path.exists(f + suffix))]


def worker_main(dialect: str, path: str, memory: int, threads: int) -> int:
    from queryeval.engines.worker import serve

    if dialect == "postgres":
        return serve(memory, lambda settings: open_session(dialect, path, memory, threads,
                                                           settings), handle)
    if path == MULTI_FILE:
        return serve(memory, lambda settings: FileSessions(dialect, memory, threads, settings),
                     lambda session, request: session.handle(request),
                     readable=lambda settings: own_files(dialect, path, settings))
    return serve(memory, lambda settings: open_session(dialect, path, memory, threads, settings),
                 handle, readable=lambda settings: own_files(dialect, path, settings))


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("sqlite", "duckdb", "postgres"):
        sys.stderr.write("usage: python -m queryeval.engines.query.sql_worker "
                         "sqlite|duckdb|postgres PATH MEMORY_BYTES THREADS\n")
        sys.exit(2)
    code = worker_main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    # The session is closed (serve closes it before it returns) and every reply was flushed
    # as it was written: the interpreter's teardown has nothing left to save, only modules to
    # free (35-75 ms of a worker's exit, which a closing run waits for), so it is skipped.
    sys.stderr.flush()
    os._exit(code)
