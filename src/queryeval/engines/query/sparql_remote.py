"""SPARQL on a remote endpoint over the SPARQL 1.1 protocol (httpx).

Each query is decided by one parse (:func:`.sparql_safety.check_sparql`, run in a sandboxed
checker worker under the query's deadline) before anything is sent: the endpoint might
honour Update, SERVICE or FROM <url>, and we never send them. This is the one path that
must send the query text away, so here the parse decides alone; what the endpoint then does
with a query that passed is the endpoint's business (docs/reliability.md). The request is ``POST`` with the form field
``query=``; SELECT and ASK ask for ``application/sparql-results+json``, CONSTRUCT and
DESCRIBE for ``application/n-triples`` (parsed with pyoxigraph). The timeout is a total
deadline on the whole exchange (httpx's own timeouts are per read, so a server that
dribbles bytes could otherwise hold us forever); on expiry the connection is closed --
the server may keep computing, which is why ``oxigraph serve --timeout-s`` or the
endpoint's own limit is still worth setting. Responses larger than ``max_response_bytes``
are refused, then at most ``max_rows`` bindings are kept. Redirects are not followed.

Default prefixes cannot be passed to an endpoint as a parameter, so they are injected as
``PREFIX`` lines in front of the query, for the names the query does not declare itself.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import weakref
from collections.abc import Collection, Mapping
from typing import Any

import httpx

from queryeval.engines.query.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_MEMORY_LIMIT_BYTES,
    DEFAULT_TIMEOUT_S,
    QueryFailed,
    QueryResult,
    QueryTimeout,
    check_limits,
    check_memory_limit,
    sparql_worker_payload,
)
from queryeval.engines.query.sparql_safety import check_length
from queryeval.engines.query.sparql_worker import MEMORY_STORE, SparqlWorker
from queryeval.io.closing import Closing

RESULTS_JSON = "application/sparql-results+json"
N_TRIPLES = "application/n-triples"
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class RemoteSparqlEngine(Closing):
    """A SPARQL 1.1 protocol client with the same ``execute`` contract as the others.

    ``allowed_graphs``: graph IRIs that FROM / FROM NAMED may name (default: none).
    ``prefixes``: default prefixes injected into queries that do not declare them.
    ``headers``: extra HTTP headers (e.g. authorisation). ``client``: an httpx.Client to
    use (the engine closes only a client it created).
    """

    def __init__(
        self,
        url: str,
        *,
        prefixes: Mapping[str, str] | None = None,
        allowed_graphs: Collection[str] = (),
        headers: Mapping[str, str] | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        client: httpx.Client | None = None,
        memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES,
    ) -> None:
        self.url = url
        self.prefixes = dict(prefixes or {})
        self.allowed_graphs = frozenset(allowed_graphs)
        self.headers = dict(headers or {})
        self.max_response_bytes = max_response_bytes
        self._own_client = client is None
        # No keep-alive on our own client: every exchange opens its connection, so the
        # deadline watchdog always holds the socket it has to shut down.
        self._client = client or httpx.Client(
            follow_redirects=False, limits=httpx.Limits(max_keepalive_connections=0))
        self._lock = threading.Lock()
        # the one parse, in a killable, sandboxed process with a memory cap; stopped (and
        # its temporary folder removed) by close, or when the engine is dropped unclosed
        self._checker = SparqlWorker(MEMORY_STORE, check_memory_limit(memory_limit_bytes))
        self._finalizer = weakref.finalize(self, self._checker.close)

    def close(self) -> None:
        self._finalizer()
        if self._own_client:
            self._client.close()

    def execute(self, query: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
        """Check, send and decode ``query``; raises QueryRefused/QueryTimeout/QueryFailed."""
        check_limits(timeout_s, max_rows)
        check_length(query)
        with self._lock:
            if not self._checker.alive():
                self._checker.start()  # outside the deadline, as for the embedded engine
            start = time.perf_counter()
            deadline = time.monotonic() + timeout_s
            # One parse decides, on exactly the text that will be sent (prologue included).
            status, shape = self._checker.request(
                {"query": query, "prefixes": self.prefixes, "base_iri": None, "max_rows": 0,
                 "lenient_prefixes": True, "allowed_graphs": sorted(self.allowed_graphs)},
                timeout_s)
            shape = sparql_worker_payload(status, shape)
            missing = {k: v for k, v in self.prefixes.items() if k not in shape["prefixes"]}
            text = "".join(f"PREFIX {k}: <{v}>\n" for k, v in missing.items()) + query
            graph = shape["form"] in ("CONSTRUCT", "DESCRIBE")
            headers = {**self.headers, "Accept": N_TRIPLES if graph else RESULTS_JSON}
            body, content_type = self._post(text, headers, deadline, timeout_s)
        if graph:
            result = _decode_triples(body, max_rows)
        else:
            result = _decode_results_json(body, content_type, max_rows)
        result.elapsed_ms = (time.perf_counter() - start) * 1000.0
        return result

    def _post(self, text: str, headers: dict[str, str], deadline: float,
              timeout_s: float) -> tuple[bytes, str]:
        """POST ``text``; the whole exchange (connect, headers, body) ends by ``deadline``.

        httpx's timeouts are per operation, so a server that sends one byte of its
        headers every second would hold us forever. A timer thread therefore shuts the
        connection's socket down at the deadline (the socket is taken from httpcore's
        ``connect_tcp`` trace event); the blocked read returns and the exchange ends with
        :class:`QueryTimeout`. The body loop also checks the deadline after each chunk.
        """
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise QueryTimeout(f"query ran longer than {timeout_s:g} s (checking it took it all)")
        expired = threading.Event()
        sockets: list[Any] = []
        guard = threading.Lock()

        def shut(sock: Any) -> None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def trace(name: str, info: dict[str, Any]) -> None:
            if name == "connection.connect_tcp.complete" and info.get("return_value"):
                sock = info["return_value"].get_extra_info("socket")
                if sock is not None:
                    with guard:
                        sockets.append(sock)
                        late = expired.is_set()
                    if late:
                        shut(sock)

        def expire() -> None:
            with guard:
                expired.set()
                held = list(sockets)
            for sock in held:
                shut(sock)

        timer = threading.Timer(remaining, expire)
        timer.daemon = True
        chunks: list[bytes] = []
        size = 0
        timer.start()
        try:
            with self._client.stream(
                "POST", self.url, data={"query": text}, headers=headers,
                timeout=httpx.Timeout(remaining), extensions={"trace": trace},
            ) as resp:
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > self.max_response_bytes:
                        raise QueryFailed(
                            f"response larger than {self.max_response_bytes} bytes; refused")
                    chunks.append(chunk)
                    if expired.is_set() or time.monotonic() > deadline:
                        raise QueryTimeout(f"endpoint answered for longer than {timeout_s:g} s")
                status = resp.status_code
                content_type = resp.headers.get("content-type", "")
        except httpx.TimeoutException:
            raise QueryTimeout(f"endpoint did not answer within {timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            if expired.is_set():
                raise QueryTimeout(f"endpoint did not answer within {timeout_s:g} s; "
                                   "connection closed") from None
            raise QueryFailed(f"connection to {self.url} failed: {type(exc).__name__}: {exc}") from None
        finally:
            timer.cancel()
        if expired.is_set():
            raise QueryTimeout(f"endpoint did not answer within {timeout_s:g} s")
        body = b"".join(chunks)
        if status != 200:
            detail = body[:500].decode("utf-8", "replace").strip()
            raise QueryFailed(f"HTTP {status} from endpoint: {detail}", syntax_error=status == 400)
        return body, content_type


def _decode_results_json(body: bytes, content_type: str, max_rows: int) -> QueryResult:
    try:
        doc = json.loads(body)
    except ValueError as exc:
        shown = content_type or "no content type"
        raise QueryFailed(f"endpoint did not return SPARQL JSON ({shown}): {exc}") from None
    if not isinstance(doc, dict):
        raise QueryFailed("malformed SPARQL JSON: top level is not an object")
    if "boolean" in doc:
        return QueryResult(columns=[], rows=[], kind="ask", boolean=bool(doc["boolean"]))
    try:
        columns = [str(v) for v in doc["head"].get("vars", [])]
        bindings = doc["results"]["bindings"]
        rows = [tuple(_term(b.get(v)) for v in columns) for b in bindings[:max_rows]]
    except (KeyError, TypeError, AttributeError) as exc:
        raise QueryFailed(f"malformed SPARQL JSON: {type(exc).__name__}: {exc}") from None
    return QueryResult(columns=columns, rows=rows, truncated=len(bindings) > max_rows)


def _term(term: Any) -> dict[str, Any] | None:
    if term is None:
        return None
    if not isinstance(term, dict) or "type" not in term:
        raise TypeError(f"not a SPARQL JSON term: {term!r}")
    if term["type"] == "typed-literal":  # SPARQL 1.0-era servers
        term = {**term, "type": "literal"}
    return term


def _decode_triples(body: bytes, max_rows: int) -> QueryResult:
    import pyoxigraph as ox

    from queryeval.engines.query.sparql_worker import term_to_json

    rows: list[tuple[Any, ...]] = []
    truncated = False
    try:
        for quad in ox.parse(body, format=ox.RdfFormat.N_TRIPLES):
            if len(rows) >= max_rows:
                truncated = True
                break
            rows.append((term_to_json(quad.subject), term_to_json(quad.predicate),
                         term_to_json(quad.object)))
    except SyntaxError as exc:
        raise QueryFailed(f"endpoint returned invalid N-Triples: {exc}") from None
    return QueryResult(columns=["subject", "predicate", "object"], rows=rows,
                       truncated=truncated, kind="graph")
