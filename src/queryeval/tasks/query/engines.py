"""Where the query task runs queries: the engines it opens per source (embedded pyoxigraph
store, SPARQL endpoint, sqlite, DuckDB, PostgreSQL), one execution of a query on them, and
the cache of gold results. Kept out of ``tasks/query/task.py`` (scoring, aggregation, outputs);
:class:`~queryeval.tasks.query.task.QueryTask` takes these methods from :class:`QueryEngines`.
See docs/execution.md.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError
from queryeval.suite.models import Case

RDF_SUFFIXES = {".ttl", ".nt", ".rdf", ".xml", ".owl", ".nq", ".trig", ".n3"}
SQLITE_SUFFIXES = {".sqlite", ".sqlite3", ".db"}


def _store_root() -> Path:
    """The default folder of the embedded SPARQL stores: ``oxigraph`` under the root of every
    queryeval cache (:func:`queryeval.io.caches.cache_root`)."""
    from queryeval.io.caches import cache_dir

    return cache_dir("oxigraph")


def _lang_of(source: str) -> str:
    first = source.split(",")[0].strip().lower()
    if first.startswith(("http://", "https://")) or Path(first).suffix in RDF_SUFFIXES:
        return "sparql"
    return "sql"


class QueryEngines:
    """The engine half of the query task: one engine per source, opened once and shared by
    the run's threads, and each gold query's result computed once. Needs the task's
    ``options`` (``source``, ``store_dir``, ``timeout_s``, ``max_rows``) and ``target_of``."""

    def _init_engines(self) -> None:
        self._engines: dict[str, Any] = {}
        self._gold: dict[tuple[str, str], dict] = {}
        self._lock = threading.Lock()

    def _source(self, case_target) -> str:
        source = case_target.source or self.options.source
        if not source:
            raise ConfigError("no place to run queries: pass --graph, --database or --endpoint "
                              "(or set target.query.source)")
        return source

    def engine(self, source: str):
        with self._lock:
            if source not in self._engines:
                self._engines[source] = self._open(source)
            return self._engines[source]

    def _open(self, source: str):
        from queryeval.engines import query as eng

        if source.startswith(("http://", "https://")):
            return eng.RemoteSparqlEngine(source)
        if source.startswith(("postgresql://", "postgres://")):
            from queryeval.engines.query.postgres import PostgresEngine

            return PostgresEngine(source)
        paths = [p.strip() for p in source.split(",") if p.strip()]
        suffix = Path(paths[0]).suffix.lower()
        if suffix in RDF_SUFFIXES:
            key = hashlib.sha256("\0".join(str(Path(p).resolve()) for p in paths).encode()).hexdigest()[:16]
            root = Path(self.options.store_dir) if self.options.store_dir else _store_root()
            return eng.LocalSparqlEngine(paths, store_dir=root / key)
        if suffix in SQLITE_SUFFIXES:
            return eng.SqliteEngine(paths[0])
        if suffix == ".duckdb":
            return eng.DuckDBEngine(paths[0])
        raise ConfigError(f"cannot tell what kind of source {source!r} is (RDF file, endpoint URL, "
                          ".sqlite/.db or .duckdb)")

    def input_files(self) -> list[str]:
        """The graph and database files of the sources opened (endpoints have none)."""
        with self._lock:
            sources = list(self._engines)
        return [p.strip() for s in sources for p in s.split(",")
                if p.strip() and "://" not in p]

    def _close_engines(self, *more: Any) -> None:
        """Close every engine opened, and ``more`` holders of workers, side by side."""
        from queryeval.engines.query.worker_handle import close_all

        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        close_all([*engines, *more])

    def _execute(self, source: str, query: str, engine: Any = None) -> tuple[dict | None, dict]:
        """(result table as SPARQL JSON or None, execution info)."""
        from queryeval.engines.query import QueryExecutionError
        from queryeval.engines.query.sandbox import unavailable_layers

        engine = engine or self.engine(source)
        try:
            res = engine.execute(query, timeout_s=self.options.timeout_s, max_rows=self.options.max_rows)
        except QueryExecutionError as err:
            kind = type(err).__name__.removeprefix("Query").lower()  # refused / timeout / failed
            syntax = bool(getattr(err, "syntax_error", False))
            info = {"status": kind, "reason": err.reason, "syntax_error": syntax}
            res = None
        else:
            info = {"status": "ok", "kind": res.kind, "rows": res.row_count, "columns": len(res.columns),
                    "truncated": res.truncated, "elapsed_ms": res.elapsed_ms}
        # The run log says so on every execution that ran without a whole OS sandbox
        # (docs/reliability.md: another platform, an old kernel, no libseccomp).
        report = getattr(engine, "sandbox", None)
        if report and unavailable_layers(report):
            info["sandbox_unavailable"] = {k: report[k] for k in unavailable_layers(report)}
        if res is None:
            return None, info
        limit = getattr(self.options, "score_max_cells", None)
        cells = res.row_count * max(len(res.columns), 1)
        if limit is not None and cells > limit:  # the memory cap of scoring: not converted
            return None, {**info, "status": "too_large",
                          "reason": f"the result has {cells:,} cells, more than the scoring "
                                    f"budget of {limit:,} (score_max_cells)"}
        from queryeval.metrics.deadline import gc_paused

        with gc_paused():  # a wide result's terms and bindings: many objects, no cycle
            table = res.to_table_json() if res.kind in ("ask", "graph") else res.to_sparql_json()
        return table, info

    def _gold_result(self, source: str, query: str) -> tuple[dict | None, dict]:
        key = (source, query)
        with self._lock:
            hit = self._gold.get(key)
        if hit is None:
            hit = dict(zip(("table", "info"), self._execute(source, query), strict=True))
            with self._lock:
                self._gold[key] = hit
        return hit["table"], hit["info"]

    def select_cases(self, cases: Iterable[Case]) -> Iterator[Case]:
        """Open every source the cases name during the run's first pass over them (before the
        run starts), so a missing graph or database is one clear error and no half-started
        run log."""
        opened: set[str | None] = set()
        for case in cases:
            source = self._source(self.target_of(case))
            if source not in opened:
                self.engine(source)
                opened.add(source)
            yield case
