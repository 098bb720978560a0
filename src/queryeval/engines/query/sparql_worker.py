"""The worker process that runs SPARQL on a read-only pyoxigraph store, and its handle.

Why a process: pyoxigraph evaluates a query inside Rust code that cannot be interrupted
from Python (no timeout parameter; signals are not checked; it releases the GIL, so a
watchdog thread could not stop it either). The only reliable way to stop a runaway
query is to kill the process that runs it. The worker opens the store with
``Store.read_only`` -- it cannot write, whatever it is asked -- and stays alive between
queries, so the start-up cost (interpreter, import, opening the store; a few hundred ms)
is paid once per engine and again only after a timeout kill. Before it opens anything the
worker puts itself in the operating-system sandbox (:mod:`.sandbox`: no socket, writes only
in its own temporary folder, RLIMIT_DATA), and every query is first decided by one parse
(:func:`analyse`, :mod:`.sparql_safety`) inside it, under the query's deadline.

Process and protocol: the worker is ``python -m queryeval.engines.query.sparql_worker
STORE_DIR [MEMORY_BYTES]`` (``*``: in-memory stores loaded on request, :func:`serve_stores`),
a child of the one worker base (:mod:`queryeval.engines.worker`: :class:`SparqlWorker` is its
:class:`~queryeval.engines.worker.WorkerProcess`, :func:`worker_main` its
:func:`~queryeval.engines.worker.serve`, without a settings frame). Rows travel as
SPARQL-JSON term dicts, so the parent does no conversion.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from queryeval.engines.query.base import (
    QueryRefused,
    cell_bytes,
    result_too_large,
)
from queryeval.engines.worker import WorkerProcess, serve

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
RDF_DIR_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString"

MEMORY_STORE = ":memory:"
"""Store path meaning "no data, only check queries" (the remote engine's checker)."""
MULTI_STORE = "*"
"""Store path meaning "in-memory stores loaded and dropped on request" (:func:`serve_stores`)."""
CHECK_BASE_IRI = "http://queryeval.invalid/"
"""Base IRI for checking queries that use relative IRIs (the check never resolves them)."""


def term_to_json(term: Any) -> dict[str, Any] | None:
    """A pyoxigraph term as a SPARQL 1.1 JSON results term (as oxigraph's server writes it)."""
    import pyoxigraph as ox

    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        out: dict[str, Any] = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        else:
            dt = term.datatype.value
            if dt not in (XSD_STRING, RDF_LANG_STRING, RDF_DIR_LANG_STRING):
                out["datatype"] = dt
        return out
    if isinstance(term, ox.Triple):
        return {"type": "triple", "value": {
            "subject": term_to_json(term.subject),
            "predicate": term_to_json(term.predicate),
            "object": term_to_json(term.object),
        }}
    raise TypeError(f"unexpected RDF term {term!r}")


def analyse(checker: Any, request: dict[str, Any]) -> tuple[str, Any]:
    """The one parse of the request's query (:func:`.sparql_safety.check_sparql`):
    ``("ok", SparqlCheck.to_dict())`` when it may run, else ``("refused" | "syntax", why)``.

    Text the SPARQL 1.1 grammar rejects is run once on ``checker`` (an empty in-memory
    store, inside this sandboxed worker): if oxigraph rejects it too it is a plain syntax
    error; if oxigraph reads something in it (``trueSERVICE:x`` is ``true SERVICE :x`` for
    oxigraph's backtracking parser) it is refused -- the two parsers disagree, so no
    decision read off the grammar would hold for the engine. Whatever oxigraph does with it
    meanwhile (a SERVICE request, say) meets the sandbox: no socket, no file."""
    from queryeval.engines.query.sparql_safety import SparqlSyntaxError, check_sparql

    try:
        check = check_sparql(request["query"], allowed_graphs=request.get("allowed_graphs") or (),
                             prefixes=request.get("prefixes") or {},
                             base_iri=request.get("base_iri"),
                             lenient_prefixes=bool(request.get("lenient_prefixes")))
    except QueryRefused as exc:
        return ("refused", exc.reason)
    except SparqlSyntaxError as exc:
        grammar = str(exc)
        try:
            result = checker.query(request["query"], prefixes=request.get("prefixes") or None,
                                   base_iri=request.get("base_iri") or CHECK_BASE_IRI)
            if not isinstance(result, bool) and hasattr(result, "__iter__"):
                for _ in result:
                    break
        except SyntaxError as again:
            # With lenient prefixes (remote endpoints predefine some) oxigraph may stop at
            # a prefix the endpoint would know: then it read nothing we could verify.
            if not (request.get("lenient_prefixes") and "Prefix not found" in str(again)):
                return ("syntax", str(again))
        except Exception:  # noqa: BLE001 - oxigraph read a query and failed running it
            pass
        return ("refused", "the SPARQL 1.1 grammar rejects this text but the engine's parser "
                           f"reads a query in it, so it cannot be verified ({grammar})")
    except Exception as exc:  # noqa: BLE001 - whatever it is, the query was not verified
        return ("refused", f"could not verify the query: {type(exc).__name__}: {exc}")
    return ("ok", check.to_dict())


def run_query(store: Any, request: dict[str, Any], checker: Any = None) -> tuple[str, Any]:
    """Decide (one parse, :func:`analyse`) and execute one request on ``store``; never
    raises (errors become replies). ``store`` None: decide only (the reply's payload is
    the parse's description). ``request["checks"]`` False (a test-only switch, see
    :data:`.base.QUERY_CHECKS`) skips the decision: only the sandbox holds then."""
    import pyoxigraph as ox

    shape: dict[str, Any] | None = None
    if request.get("checks", True):
        status, shape = analyse(checker if checker is not None else ox.Store(), request)
        if status != "ok" or store is None:
            return (status, shape)
    elif store is None:
        return ("ok", None)
    max_rows: int = request["max_rows"]
    start = time.perf_counter()
    try:
        result = store.query(
            request["query"],
            prefixes=request.get("prefixes") or None,
            base_iri=request.get("base_iri"),
            use_default_graph_as_union=bool(request.get("union_default_graph")),
        )
        truncated = False
        rows: list[tuple[Any, ...]] = []
        if isinstance(result, ox.QueryBoolean):
            payload: dict[str, Any] = {"kind": "ask", "columns": [], "rows": [],
                                       "boolean": bool(result)}
        else:
            if isinstance(result, ox.QuerySolutions):
                variables = list(result.variables)
                columns = [v.value for v in variables]
                kind = "select"

                def convert(item: Any) -> tuple[Any, ...]:
                    return tuple(term_to_json(item[v]) for v in variables)
            else:
                columns = ["subject", "predicate", "object"]
                kind = "graph"

                def convert(item: Any) -> tuple[Any, ...]:
                    return (term_to_json(item.subject), term_to_json(item.predicate),
                            term_to_json(item.object))
            budget = int(request.get("max_result_bytes") or 0)
            size = 0
            for item in result:
                if len(rows) >= max_rows:
                    truncated = True  # a (max_rows + 1)-th row exists
                    break
                row = convert(item)
                if budget:
                    size += cell_bytes(row)
                    if size > budget:
                        return ("error", result_too_large(budget))
                rows.append(row)
            payload = {"kind": kind, "columns": columns, "rows": rows, "boolean": None}
        payload["truncated"] = truncated
        payload["engine_ms"] = (time.perf_counter() - start) * 1000.0
        payload["shape"] = shape
        return ("ok", payload)
    except SyntaxError as exc:
        return ("syntax", str(exc))
    except Exception as exc:  # an engine error must become a reply, not kill the worker
        return ("error", f"{type(exc).__name__}: {exc}")


class _Stores:
    """What a SPARQL worker serves: one store opened read-only, or none (queries are only
    checked: :data:`MEMORY_STORE`), or graphs loaded per request (:data:`MULTI_STORE`);
    ``checker``, an empty store in memory, is where unverifiable text is tried."""

    def __init__(self, store_path: str) -> None:
        import pyoxigraph as ox

        self.checker = ox.Store()
        self.stores: dict[str, Any] | None = {} if store_path == MULTI_STORE else None
        self.store = None if store_path in (MEMORY_STORE, MULTI_STORE) \
            else ox.Store.read_only(store_path)

    def answer(self, request: dict[str, Any]) -> tuple[str, Any]:
        if self.stores is None:
            return run_query(self.store, request, self.checker)
        return serve_stores(self.stores, request, self.checker)

    def close(self) -> None:
        pass


def worker_main(store_path: str, memory_limit: int = 0) -> int:
    """Entry point of the worker process (``python -m ... STORE_DIR [MEMORY_BYTES]``): the
    sandbox first (before pyoxigraph is imported or any thread started), then the store
    (:func:`serve`, without a settings frame)."""
    own = [] if store_path in (MEMORY_STORE, MULTI_STORE) else [store_path]  # all it reads
    return serve(memory_limit, lambda _settings: _Stores(store_path), _Stores.answer,
                 readable=lambda _settings: own, with_settings=False)


def serve_stores(stores: dict[str, Any], request: dict[str, Any], checker: Any) -> tuple[str, Any]:
    """One request to a :data:`MULTI_STORE` worker: ``{"op": "load", "store": ID, "data":
    bytes, "format": NAME}`` parses the data into a new in-memory store (its default graph
    for triple formats), ``{"op": "drop", "store": ID}`` forgets one; any other request is a
    query (:func:`run_query`) on the one store it names, which holds nothing of the others."""
    import pyoxigraph as ox

    op, key = request.get("op"), request.get("store")
    if op == "drop":
        stores.pop(key, None)
        return ("ok", None)
    if op == "load":
        store = ox.Store()
        try:
            store.load(request["data"], format=getattr(ox.RdfFormat, request["format"]),
                       base_iri=request.get("base_iri"))
        except Exception as exc:  # noqa: BLE001 - a reply, never a dead worker
            return ("error", f"cannot load graph {key!r}: {type(exc).__name__}: {exc}")
        stores[key] = store
        return ("ok", {"quads": len(store)})
    if key not in stores:
        return ("error", f"no graph {key!r} is loaded in this worker")
    return run_query(stores[key], request, checker)


class SparqlWorker(WorkerProcess):
    """The SPARQL worker: opens ``store_path`` read-only (or only checks queries when it
    is :data:`MEMORY_STORE`)."""

    name = "SPARQL worker"

    def __init__(self, store_path: str, memory_limit_bytes: int | None = None) -> None:
        super().__init__("queryeval.engines.query.sparql_worker",
                         [store_path, str(memory_limit_bytes or 0)])
        self.store_path = store_path


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.stderr.write("usage: python -m queryeval.engines.query.sparql_worker "
                         "STORE_DIR [MEMORY_BYTES]\n")
        sys.exit(2)
    sys.exit(worker_main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 0))
