"""The sandboxed workers that run a gold and its mutants on the original database (graph)
and on the candidate neighbours while they are distilled (:mod:`.distill`, :mod:`.graphs`),
and the verdict's queries on the kept ones (:mod:`queryeval.tasks.query.testsuite`).

A gold comes from the suite file -- a user may evaluate a downloaded suite -- and a mutant is
derived from it: both are untrusted queries. They run where predictions run: in a
:mod:`..sql_worker` process under the operating-system sandbox (:mod:`..sandbox`: no socket,
reads only the files it serves, writes only in the worker's own temporary folder, no new
process, RLIMIT_DATA at the memory cap), killed at each query's deadline. Only what the engine's text checks add is switched by
:data:`..base.QUERY_CHECKS` (test-only); the sandbox holds with or without them.

One worker serves every database file of one build: the parent names the file on each
request and the worker opens it read-only, refusing a file outside the folders the parent
allowed when it started the worker (``roots``, sent in the settings frame, never on a
request a query could influence). A worker killed at a deadline is started again on the
next request.

SPARQL (:class:`SparqlRunner`): one :mod:`..sparql_worker` process serves every graph of a
build in the same way; the parent sends a graph's triples, the worker parses them into an
in-memory store of that graph alone, runs the queries naming it there and drops it after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from queryeval.engines.query.worker_handle import WorkerBacked, WorkerHandle

MULTI_FILE = "*"
"""The worker's PATH argument meaning "the file is named on each request"."""


class NeighbourRunner(WorkerHandle):
    """Run queries on several sqlite or DuckDB files in one sandboxed worker; use as a
    context manager. ``run`` raises QueryRefused / QueryTimeout / QueryFailed."""

    max_result_bytes = 0
    """The byte budget of each result (0: none; the verdict's runners use the engines')."""

    def __init__(self, dialect: str, roots: list[Path], *, memory_limit_bytes: int | None = None,
                 threads: int = 1) -> None:
        from queryeval.engines.query.base import DEFAULT_MEMORY_LIMIT_BYTES, check_memory_limit
        from queryeval.engines.query.sql import sql_worker_process

        self.dialect = dialect
        self.roots = [str(Path(r).resolve()) for r in roots]
        memory = check_memory_limit(memory_limit_bytes or DEFAULT_MEMORY_LIMIT_BYTES)
        self.memory_limit_bytes = memory
        self.refused: dict[str, str] = {}
        self._hold(sql_worker_process(dialect, MULTI_FILE, memory, threads))
        self._worker.name = f"{dialect} neighbour worker"

    def allow(self, roots: list[Path]) -> None:
        """Allow these folders or files from the next request on (a changed list restarts
        the worker: the allowlist is part of its settings, never of a request)."""
        self.roots = [str(Path(r).resolve()) for r in roots]

    def start(self) -> None:
        """Start the worker now (outside any query's time: the distillation times the gold
        to set the mutants' deadline)."""
        from queryeval.engines.query import base

        self._ensure_started({"checks": base.QUERY_CHECKS, "roots": self.roots})

    def run(self, path: Path, query: str, timeout_s: float,
            max_rows: int) -> tuple[list[str], list[Any], bool]:
        """(columns, rows, truncated) of ``query`` on the file ``path``."""
        from queryeval.engines.query import base
        from queryeval.engines.query.sql import KILL_GRACE_S, check_sql_length, raise_worker_error
        from queryeval.engines.query.sql_safety import check_sql

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

    # The builder's steps on a user's database (docs/execution.md): each one a request to
    # the sandboxed worker under a deadline (a kill past it) and the worker's memory cap.

    def _op(self, request: dict[str, Any], timeout_s: float) -> Any:
        from queryeval.engines.query.sql import KILL_GRACE_S, raise_worker_error

        self.start()
        status, payload = self._worker.request(request, timeout_s + KILL_GRACE_S)
        if status != "ok":
            raise_worker_error(payload)
        return payload

    def schema(self, path: Path, timeout_s: float = 30.0) -> Any:
        """:func:`.schema.read_schema` of ``path``, read by the worker."""
        from queryeval.engines.query.neighbours.schema import Schema

        doc = self._op({"op": "schema", "path": str(path), "timeout_s": timeout_s}, timeout_s)
        return Schema.from_wire(doc["schema"])

    def rows(self, path: Path, timeout_s: float = 30.0) -> dict[str, dict[str, list]]:
        """:func:`.schema.table_rows` of ``path``, read by the worker."""
        return self._op({"op": "rows", "path": str(path), "timeout_s": timeout_s},
                        timeout_s)["tables"]

    def write(self, schema: Any, path: Path, rows: dict[str, list[tuple]],
              timeout_s: float = 30.0) -> dict[str, list[tuple]]:
        """:func:`.schema.write_database` by the worker, in its own temporary folder (the
        one place it may write), then moved here to ``path``; the rows that went in. The
        engine's words on the first refused row of each table are kept in
        :attr:`refused` (table -> reason) for the build's reason."""
        import os
        import shutil

        name = "candidate" + Path(path).suffix
        doc = self._op({"op": "write", "name": name, "schema": schema.to_wire(),
                        "rows": {t: [tuple(r) for r in rs] for t, rs in rows.items()},
                        "timeout_s": timeout_s}, timeout_s)
        for table, why in (doc.get("refused") or {}).items():
            self.refused.setdefault(str(table), str(why))
        folder = self._worker._tmpdir
        made = os.path.join(folder, name)
        if os.path.islink(made) or not os.path.isfile(made):
            from queryeval.engines.query.base import QueryFailed

            raise QueryFailed("the neighbour worker wrote no database file")
        Path(path).unlink(missing_ok=True)
        shutil.move(made, path)
        return {str(t): [tuple(r) for r in rs] for t, rs in doc["kept"].items()}


class _LentEngine(WorkerBacked):
    """One neighbour through a (shared) runner, as the query task's ``_execute`` uses an
    engine: ``execute`` returns a :class:`..base.QueryResult`; closing it leaves the
    runner's worker running for the next neighbour."""

    runner: Any

    @property
    def worker(self) -> Any:
        return self.runner.worker

    def close(self) -> None:
        """Give back what this neighbour holds in the runner (nothing by default)."""

    def _run(self, query: str, timeout_s: float, max_rows: int) -> dict[str, Any]:
        raise NotImplementedError

    def execute(self, query: str, *, timeout_s: float, max_rows: int) -> Any:
        import time

        from queryeval.engines.query.base import QueryResult, check_limits

        check_limits(timeout_s, max_rows)
        start = time.perf_counter()
        fields = self._run(query, timeout_s, max_rows)
        extra = {"sandbox": self.runner.sandbox, **fields.pop("extra", {})}
        return QueryResult(**fields, elapsed_ms=(time.perf_counter() - start) * 1000.0,
                           extra=extra)


class FileEngine(_LentEngine):
    """One sqlite or DuckDB file through a :class:`NeighbourRunner`."""

    def __init__(self, runner: NeighbourRunner, path: Path) -> None:
        self.runner, self.path, self.dialect = runner, Path(path), runner.dialect

    def _run(self, query: str, timeout_s: float, max_rows: int) -> dict[str, Any]:
        columns, rows, truncated = self.runner.run(self.path, query, timeout_s, max_rows)
        return {"columns": columns, "rows": rows, "truncated": truncated, "kind": "sql"}


class SparqlRunner(WorkerHandle):
    """Run SPARQL on several graphs in one sandboxed SPARQL worker (the worker's
    :data:`..sparql_worker.MULTI_STORE` mode); use as a context manager.

    :meth:`add` names a graph (its RDF text, kept here); the first query on it loads it into
    an in-memory store of its own in the worker -- its default graph is exactly that graph,
    never a union with the others -- and :meth:`discard` drops it there. Each query has the
    deadline it is given (a kill past it, as :class:`..sparql_local.LocalSparqlEngine`), its
    row cap, the result-byte budget and the worker's memory cap; loading is not counted
    in a query's deadline (as a store build is not). A worker killed (deadline, memory cap,
    crash) is started again on the next request, and the graphs still named are loaded
    into it again. ``run`` raises QueryRefused / QueryTimeout / QueryFailed."""

    def __init__(self, *, memory_limit_bytes: int | None = None,
                 max_result_bytes: int | None = None) -> None:
        from queryeval.engines.query.base import (
            DEFAULT_MAX_RESULT_BYTES,
            DEFAULT_MEMORY_LIMIT_BYTES,
            check_memory_limit,
        )
        from queryeval.engines.query.sparql_worker import MULTI_STORE, SparqlWorker

        memory = check_memory_limit(memory_limit_bytes or DEFAULT_MEMORY_LIMIT_BYTES)
        self.memory_limit_bytes = memory
        self.max_result_bytes = max_result_bytes or DEFAULT_MAX_RESULT_BYTES
        self._graphs: dict[str, tuple[bytes, str]] = {}
        self._loaded: set[str] = set()
        self._incarnation = 0  # the worker's start count the loaded graphs belong to
        self._hold(SparqlWorker(MULTI_STORE, memory))
        self._worker.name = "SPARQL neighbour worker"

    def add(self, key: str, data: bytes, rdf_format: str = "N_TRIPLES") -> None:
        """Name a graph: ``data`` in ``rdf_format`` (a pyoxigraph ``RdfFormat`` name)."""
        self.discard(key)
        self._graphs[key] = (data, rdf_format)

    def discard(self, key: str) -> None:
        """Forget a graph here and in the worker (when it holds it)."""
        from queryeval.engines.query.base import QueryExecutionError
        from queryeval.engines.worker import START_TIMEOUT_S

        self._graphs.pop(key, None)
        if key in self._loaded and self._worker.alive():
            self._loaded.discard(key)
            try:
                self._worker.request({"op": "drop", "store": key}, START_TIMEOUT_S)
            except QueryExecutionError:
                self._worker.kill()  # the next request starts a fresh one

    def run(self, key: str, query: str, *, prefixes: dict[str, str], timeout_s: float,
            max_rows: int) -> dict[str, Any]:
        """The worker's payload (kind, columns, rows, boolean, truncated, engine_ms, shape) of
        ``query`` on graph ``key``, or the engines' error."""
        from queryeval.engines.query import base
        from queryeval.engines.query.base import QueryFailed, sparql_worker_payload
        from queryeval.engines.query.sparql_safety import check_length
        from queryeval.engines.worker import START_TIMEOUT_S

        check_length(query)
        self._ensure_started(None)
        if self._worker.starts != self._incarnation:  # a new process holds no graph
            self._incarnation, self._loaded = self._worker.starts, set()
        if key not in self._graphs:
            raise QueryFailed(f"no graph {key!r} was added to this runner")
        if key not in self._loaded:
            data, rdf_format = self._graphs[key]
            sparql_worker_payload(*self._worker.request(
                {"op": "load", "store": key, "data": data, "format": rdf_format},
                START_TIMEOUT_S))
            self._loaded.add(key)
        request = {"store": key, "query": query, "prefixes": prefixes, "base_iri": None,
                   "union_default_graph": False, "max_rows": max_rows, "allowed_graphs": [],
                   "checks": base.QUERY_CHECKS, "max_result_bytes": self.max_result_bytes}
        return sparql_worker_payload(*self._worker.request(request, timeout_s))


class GraphEngine(_LentEngine):
    """One graph file (Turtle) through a :class:`SparqlRunner`: loaded into the worker on
    the first query, dropped from it when the engine is closed."""

    def __init__(self, runner: SparqlRunner, path: Path, prefixes: dict[str, str]) -> None:
        self.runner, self.path, self.prefixes = runner, Path(path), prefixes
        self.key = str(self.path)
        runner.add(self.key, self.path.read_bytes(), "TURTLE")

    def close(self) -> None:
        self.runner.discard(self.key)

    def _run(self, query: str, timeout_s: float, max_rows: int) -> dict[str, Any]:
        payload = self.runner.run(self.key, query, prefixes=self.prefixes,
                                  timeout_s=timeout_s, max_rows=max_rows)
        return {"columns": payload["columns"], "rows": payload["rows"],
                "truncated": payload["truncated"], "kind": payload["kind"],
                "boolean": payload["boolean"],
                "extra": {"engine_ms": payload["engine_ms"], "shape": payload["shape"]}}
