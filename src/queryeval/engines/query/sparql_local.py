"""SPARQL on an embedded pyoxigraph store, with safety checks, timeouts and row limits.

``LocalSparqlEngine(sources, store_dir=None)`` loads Turtle / N-Triples / RDF-XML /
N-Quads / TriG files into a persisted store (reused across runs while the sources are
unchanged, see :mod:`.sparql_store`) and runs each query in a worker process that opens
the store read-only and is killed on timeout (see :mod:`.sparql_worker`).

Default prefixes: BuildingQA's gold queries use ``brick:``, ``rdf:`` ... without declaring
them, because rdflib silently injects the namespaces bound in the graph. pyoxigraph has
no such memory, so the engine passes ``prefixes=``: the core rdflib set (rdf, rdfs, xsd,
owl), overridden by the prefixes the sources declare, overridden by the ``prefixes``
argument. A query's own ``PREFIX`` declarations override them all (SPARQL semantics).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.engines.query import base
from queryeval.engines.query.base import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_MEMORY_LIMIT_BYTES,
    DEFAULT_TIMEOUT_S,
    QueryFailed,
    QueryResult,
    check_limits,
    check_memory_limit,
    sparql_worker_payload,
)
from queryeval.engines.query.sparql_safety import check_length
from queryeval.engines.query.sparql_store import CORE_PREFIXES, StoreInfo, prepare_store
from queryeval.engines.query.sparql_worker import SparqlWorker
from queryeval.engines.query.worker_handle import WorkerHandle


class LocalSparqlEngine(WorkerHandle):
    """An embedded, read-only SPARQL engine over RDF files. Use as a context manager.

    ``sources``: one path or a list of paths. ``store_dir``: where the pyoxigraph store
    lives; ``None`` makes a temporary one that :meth:`close` deletes. ``prefixes``: extra
    default prefixes (win over the sources'). ``union_default_graph``: let the default
    graph be the union of all graphs (useful for N-Quads / TriG sources).
    ``memory_limit_bytes``: the worker's RLIMIT_DATA (default 2 GiB; None: no cap).

    The engine is safe to share between threads (queries are serialised; one worker).
    """

    def __init__(
        self,
        sources: str | Path | Sequence[str | Path],
        store_dir: str | Path | None = None,
        *,
        prefixes: Mapping[str, str] | None = None,
        base_iri: str | None = None,
        union_default_graph: bool = False,
        memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    ) -> None:
        srcs = [sources] if isinstance(sources, (str, Path)) else list(sources)
        check_memory_limit(memory_limit_bytes)
        self._tmpdir: str | None = None
        if store_dir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="queryeval-oxigraph-")
            store_dir = Path(self._tmpdir) / "store"
        try:
            self.info: StoreInfo = prepare_store(srcs, store_dir, base_iri=base_iri)
        except BaseException:
            self._remove_tmpdir()
            raise
        self.prefixes: dict[str, str] = {**CORE_PREFIXES, **self.info.prefixes,
                                         **dict(prefixes or {})}
        self.base_iri = base_iri
        self.union_default_graph = union_default_graph
        self.max_result_bytes = max_result_bytes
        self.memory_limit_bytes = memory_limit_bytes
        self._lock = threading.Lock()
        self._closed = False
        worker = SparqlWorker(str(self.info.path), memory_limit_bytes)
        self._hold(worker, _cleanup, worker, self._tmpdir)

    @property
    def store_path(self) -> Path:
        return self.info.path

    def start(self) -> None:
        """Start the worker now rather than on the first query."""
        with self._lock:
            self._ensure_started(None)

    def execute(self, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
        """Check and run ``query``; raises QueryRefused, QueryTimeout or QueryFailed.

        The timeout covers evaluation and row conversion in the worker plus the transfer
        back; it does not count starting a worker (done first, outside the deadline).
        """
        check_limits(timeout_s, max_rows)
        if self._closed:
            raise QueryFailed("engine is closed")
        check_length(query)  # everything else is decided in the worker, under the deadline
        request: dict[str, Any] = {
            "query": query, "prefixes": self.prefixes, "base_iri": self.base_iri,
            "union_default_graph": self.union_default_graph, "max_rows": max_rows,
            "allowed_graphs": sorted(self.info.named_graphs), "checks": base.QUERY_CHECKS,
            "max_result_bytes": self.max_result_bytes,
        }
        with self._lock:
            self._ensure_started(None)
            start = time.perf_counter()
            status, payload = self._worker.request(request, timeout_s)
            elapsed = (time.perf_counter() - start) * 1000.0
        payload = sparql_worker_payload(status, payload)
        return QueryResult(columns=payload["columns"], rows=payload["rows"],
                           truncated=payload["truncated"], elapsed_ms=elapsed,
                           kind=payload["kind"], boolean=payload["boolean"],
                           extra={"engine_ms": payload["engine_ms"], "shape": payload["shape"],
                                  "sandbox": self._worker.sandbox})

    def close(self) -> None:
        """Stop the worker and delete a temporary store. Idempotent."""
        with self._lock:
            self._closed = True
            super().close()

    def _remove_tmpdir(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)


def _cleanup(worker: SparqlWorker, tmpdir: str | None) -> None:
    worker.close()
    if tmpdir is not None:
        shutil.rmtree(tmpdir, ignore_errors=True)
