"""The sandboxed worker that runs a gold and its mutants on the original database and on the
candidate neighbours while they are distilled (:mod:`.distill`).

A gold comes from the suite file -- a user may evaluate a downloaded suite -- and a mutant is
derived from it: both are untrusted queries. They run where predictions run: in a
:mod:`..sql_worker` process under the operating-system sandbox (:mod:`..sandbox`: no socket,
writes only in the worker's own temporary folder, no new process, RLIMIT_DATA at the memory
cap), killed at each query's deadline. Only what the engine's text checks add is switched by
:data:`..base.QUERY_CHECKS` (test-only); the sandbox holds with or without them.

One worker serves every database file of one build: the parent names the file on each
request and the worker opens it read-only, refusing a file outside the folders the parent
allowed when it started the worker (``roots``, sent in the settings frame, never on a
request a query could influence). A worker killed at a deadline is started again on the
next request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MULTI_FILE = "*"
"""The worker's PATH argument meaning "the file is named on each request"."""


class NeighbourRunner:
    """Run queries on several sqlite or DuckDB files in one sandboxed worker; use as a
    context manager. ``run`` raises QueryRefused / QueryTimeout / QueryFailed."""

    max_result_bytes = 0
    """The byte budget of each result (0: none; the verdict's runners use the engines')."""

    def __init__(self, dialect: str, roots: list[Path], *, memory_limit_bytes: int | None = None,
                 threads: int = 1) -> None:
        import weakref

        from queryeval.systems.engines.base import DEFAULT_MEMORY_LIMIT_BYTES, check_memory_limit
        from queryeval.systems.engines.sparql_worker import WorkerProcess

        self.dialect = dialect
        self.roots = [str(Path(r).resolve()) for r in roots]
        memory = check_memory_limit(memory_limit_bytes or DEFAULT_MEMORY_LIMIT_BYTES)
        self.memory_limit_bytes = memory
        self._worker = WorkerProcess("queryeval.systems.engines.sql_worker",
                                     [dialect, MULTI_FILE, str(memory or 0), str(threads)])
        self._worker.name = f"{dialect} neighbour worker"
        self._finalizer = weakref.finalize(self, self._worker.close)

    @property
    def worker(self) -> Any:
        return self._worker

    @property
    def sandbox(self) -> dict[str, str] | None:
        return self._worker.sandbox

    def __enter__(self) -> NeighbourRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._finalizer()

    def allow(self, roots: list[Path]) -> None:
        """Allow these folders or files from the next request on (a changed list restarts
        the worker: the allowlist is part of its settings, never of a request)."""
        self.roots = [str(Path(r).resolve()) for r in roots]

    def start(self) -> None:
        """Start the worker now (outside any query's time: the distillation times the gold
        to set the mutants' deadline)."""
        from queryeval.systems.engines import base

        init = {"checks": base.QUERY_CHECKS, "roots": self.roots}
        if self._worker.init != init:
            self._worker.kill()
            self._worker.init = init
        if not self._worker.alive():
            self._worker.start()

    def run(self, path: Path, query: str, timeout_s: float,
            max_rows: int) -> tuple[list[str], list[Any], bool]:
        """(columns, rows, truncated) of ``query`` on the file ``path``."""
        from queryeval.systems.engines import base
        from queryeval.systems.engines.sql import KILL_GRACE_S, check_sql_length, raise_worker_error
        from queryeval.systems.engines.sql_safety import check_sql

        check_sql_length(query)
        table_functions = check_sql(query, self.dialect) if base.QUERY_CHECKS else frozenset()  # type: ignore[arg-type]
        self.start()
        request = {"query": query, "timeout_s": timeout_s, "max_rows": max_rows,
                   "table_functions": sorted(table_functions or ()), "path": str(path)}
        if self.max_result_bytes:
            request["max_result_bytes"] = self.max_result_bytes
        status, payload = self._worker.request(request, timeout_s + KILL_GRACE_S)
        if status != "ok":
            raise_worker_error(payload)
        return payload["columns"], payload["rows"], payload["truncated"]


class FileEngine:
    """One file through a (shared) :class:`NeighbourRunner`, as the query task's
    ``_execute`` uses an engine: ``execute`` returns a :class:`..base.QueryResult`; closing
    it leaves the runner's worker running for the next file."""

    def __init__(self, runner: NeighbourRunner, path: Path) -> None:
        self.runner, self.path, self.dialect = runner, Path(path), runner.dialect

    @property
    def sandbox(self) -> dict[str, str] | None:
        return self.runner.sandbox

    def __enter__(self) -> FileEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, query: str, *, timeout_s: float, max_rows: int) -> Any:
        import time

        from queryeval.systems.engines.base import QueryResult, check_limits

        check_limits(timeout_s, max_rows)
        start = time.perf_counter()
        columns, rows, truncated = self.runner.run(self.path, query, timeout_s, max_rows)
        return QueryResult(columns=columns, rows=rows, truncated=truncated,
                           elapsed_ms=(time.perf_counter() - start) * 1000.0, kind="sql",
                           extra={"sandbox": self.runner.sandbox})
