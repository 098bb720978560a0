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
STORE_DIR`` (``*``: in-memory stores loaded on request, :func:`serve_stores`) started
with :mod:`subprocess`, not :mod:`multiprocessing`: multiprocessing's spawn and forkserver
start methods re-import the caller's ``__main__`` module, which breaks every user script
without an ``if __name__ == "__main__"`` guard (measured), and fork is unsafe in a process
that has threads. Messages are length-prefixed pickles over the
worker's stdin and stdout (the worker moves ``sys.stdout`` to stderr first, so a stray
print cannot corrupt the channel). The parent may send one settings frame first
(:class:`WorkerProcess` ``init``); the worker sends ``("ready", {"sandbox": report, ...})``
or ``("fatal", message)`` once; then answers every request dict with ``("ok", payload)`` /
``("refused" | "syntax" | "error", message)``; ``None`` or end of input make it exit. Each
worker gets a fresh temporary folder (``TMPDIR``, its working directory; removed when it
ends).
A reader thread in the parent moves replies into a queue, so waiting with a deadline is a
``Queue.get(timeout=...)`` and works on every platform. Rows travel as SPARQL-JSON term
dicts, so the parent does no conversion.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import queue
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from queryeval.engines.query.base import (
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    cell_bytes,
    result_too_large,
)

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
RDF_DIR_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString"

START_TIMEOUT_S = 120.0
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


_HEADER = struct.Struct("!Q")
_EOF = object()


def write_frame(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


_SAFE_GLOBALS = frozenset({
    ("datetime", "date"), ("datetime", "datetime"), ("datetime", "time"),
    ("datetime", "timedelta"), ("datetime", "timezone"), ("decimal", "Decimal"),
    ("uuid", "UUID"), ("uuid", "SafeUUID"), ("zoneinfo", "ZoneInfo"),
    ("ipaddress", "IPv4Address"), ("ipaddress", "IPv6Address"), ("ipaddress", "IPv4Network"),
    ("ipaddress", "IPv6Network"), ("ipaddress", "IPv4Interface"),
    ("ipaddress", "IPv6Interface"),
})
"""The only classes a frame may name: the values sqlite, DuckDB, psycopg and the SPARQL
worker put in rows (plus ``getattr(ZoneInfo, "_unpickle")``, how a ZoneInfo pickles)."""


class UnsafeFrame(pickle.UnpicklingError):
    """A frame named a class outside :data:`_SAFE_GLOBALS`."""


def _zoneinfo_getattr(obj: Any, name: str) -> Any:
    import zoneinfo

    if obj is zoneinfo.ZoneInfo and name == "_unpickle":
        return zoneinfo.ZoneInfo._unpickle
    raise UnsafeFrame(f"a frame asked for {name!r} of {obj!r}")


class _FrameUnpickler(pickle.Unpickler):
    """Reads frames from the other side of a worker channel -- for the parent, a process
    that may be running hostile native code -- so nothing in a frame can call a function:
    only the value classes of :data:`_SAFE_GLOBALS` are found."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        if (module, name) == ("builtins", "getattr"):
            return _zoneinfo_getattr
        raise UnsafeFrame(f"a frame named {module}.{name}, which is not a result value type")


def read_frame(stream: IO[bytes], unpickler: type[pickle.Unpickler] | None = None) -> Any:
    """One message, or ``_EOF`` when the stream ends (also mid-frame). Only value types are
    read (:class:`_FrameUnpickler`); a frame naming anything else raises
    :class:`UnsafeFrame` before any of it is built. ``unpickler``: another reader, for a
    worker running the user's own code rather than hostile queries (the Python system)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return _EOF
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return _EOF
    return (unpickler or _FrameUnpickler)(io.BytesIO(data)).load()


def cap_memory(limit: int) -> None:
    """Set this process's RLIMIT_DATA (and RLIMIT_FSIZE) to ``limit`` bytes; 0 leaves them
    alone (see :func:`.sandbox.cap_resources`)."""
    from queryeval.engines.query.sandbox import cap_resources

    cap_resources(limit)


def open_channel() -> tuple[IO[bytes], IO[bytes]]:
    """(requests in, replies out) of a worker: the replies go to a copy of stdout, and
    stdout itself is moved to stderr so that a stray print cannot corrupt the channel."""
    channel_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return sys.stdin.buffer, channel_out


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


def serve(memory: int, open_fn: Callable[[dict[str, Any]], Any],
          answer: Callable[[Any, dict[str, Any]], tuple[str, Any]], *,
          readable: Callable[[dict[str, Any]], list[str]] | None = None,
          with_settings: bool = True) -> int:
    """A worker's life (this module's, :mod:`.sql_worker`'s and :mod:`.neighbours.pg_worker`'s):
    the settings frame (``with_settings``; else no frame and ``{}``); then, with ``readable``
    (a file worker), the sandbox reading only ``readable(settings)`` and the session
    ``open_fn(settings)`` after it, or without (a
    connection worker) the session -- its connection -- first and the sandbox, reading
    nothing, after it; ``("ready", {"sandbox": report})``; then ``answer(session, request)``
    for each request until the parent closes the channel or a reply says the connection is
    lost (``"restart"``: no new socket can be opened here)."""
    from queryeval.engines.query import sandbox

    channel_in, channel_out = open_channel()
    settings = read_frame(channel_in) if with_settings else {}
    if not isinstance(settings, dict):
        return 1
    writable = os.environ.get(WORKER_TMP_ENV) or tempfile.gettempdir()
    try:
        if readable is not None:
            report = sandbox.apply(writable, memory, readable=readable(settings))
            session = open_fn(settings)
        else:
            session = open_fn(settings)
            report = sandbox.apply(writable, memory, readable=())  # the server reads, not we
        write_frame(channel_out, ("ready", {"sandbox": report}))
    except Exception as exc:  # noqa: BLE001
        reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
        write_frame(channel_out, ("fatal", reason))
        return 1
    while True:
        request = read_frame(channel_in)
        if request is _EOF or request is None:
            session.close()
            return 0
        reply = answer(session, request)
        write_frame(channel_out, reply)
        if reply[0] == "error" and isinstance(reply[1], dict) \
                and reply[1].get("kind") == "restart":
            session.close()
            return 0  # the connection is gone and no new socket can be opened here


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


WORKER_TMP_ENV = "QUERYEVAL_WORKER_TMP"
"""The environment variable naming a worker's own temporary folder (the one place the
sandbox lets it write); TMPDIR points there as well."""


class WorkerProcess:
    """The parent's handle on one worker process (``python -m MODULE ARGS...``): start,
    ask with a deadline, kill. The child sends ``("ready", info)`` or ``("fatal", message)``
    once, then one reply per request; ``None`` asks it to exit. The one base of every worker:
    the engines' and the neighbour runners' (through :class:`.worker_handle.WorkerHandle`)
    and the isolated Python system's (:mod:`queryeval.systems.python`, which changes how the
    process is started (:meth:`_popen`), stopped (:meth:`_signal`) and its replies read
    (``unpickler``))."""

    name = "worker"
    start_timeout_s = START_TIMEOUT_S
    """Seconds a worker may take to send ``ready``."""
    unpickler: type[pickle.Unpickler] | None = None
    """How replies are read (:func:`read_frame`; None: value types only)."""

    def __init__(self, module: str, args: list[str], init: Any = None) -> None:
        self.module = module
        self.args = list(args)
        self.init = init  # sent as the first frame (settings kept off the command line)
        self._proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue[Any] = queue.Queue()
        self._tmpdir: str | None = None
        self.starts = 0  # how many processes were started (tests watch restarts)
        self.last_fatal: str | None = None  # why the last start failed (the worker's words)
        self.sandbox: dict[str, str] | None = None
        """The last started worker's sandbox report (:func:`.sandbox.apply`)."""
        self.exit_code: int | None = None
        """How the last worker that ended, ended (its return code; None: not known)."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _popen(self) -> subprocess.Popen[bytes]:
        """Start the process: ``python -m MODULE ARGS`` in a temporary folder of its own
        (its ``TMPDIR`` too), requests on its stdin, replies on its stdout."""
        self._tmpdir = tempfile.mkdtemp(prefix="queryeval-worker-")
        env = _child_env()
        env[WORKER_TMP_ENV] = env["TMPDIR"] = self._tmpdir
        return subprocess.Popen(
            [sys.executable, "-m", self.module, *self.args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=self._tmpdir,
        )

    def _signal(self, proc: subprocess.Popen[bytes]) -> None:
        """Stop the process now (SIGKILL) unless it has ended."""
        if proc.poll() is None:
            proc.kill()

    def start(self) -> None:
        """Start a fresh worker and wait until it has opened the store."""
        self.kill()
        self.last_fatal = None
        proc = self._popen()
        if self.init is not None:
            assert proc.stdin is not None
            try:
                write_frame(proc.stdin, self.init)
            except (OSError, ValueError):
                pass  # the reader sees the worker die
        replies: queue.Queue[Any] = queue.Queue()
        assert proc.stdout is not None
        threading.Thread(target=_pump, args=(proc.stdout, replies, self.unpickler),
                         daemon=True, name="queryeval-worker-reader").start()
        self._proc, self._replies = proc, replies
        self.starts += 1
        try:
            reply = replies.get(timeout=self.start_timeout_s)
        except queue.Empty:
            self.kill()
            self.exit_code = None  # it did not end by itself
            raise QueryFailed(f"{self.name} did not start within {self.start_timeout_s:.0f} s") \
                from None
        if reply is _EOF:
            code = _exit_code(proc)
            self.kill()
            raise QueryFailed(f"{self.name} died while starting (exit code {code})")
        status, detail = reply
        if status != "ready":
            self.kill()
            self.last_fatal = str(detail)
            raise QueryFailed(f"{self.name} could not start: {detail}")
        self.sandbox = dict(detail.get("sandbox") or {}) if isinstance(detail, dict) else None

    def request(self, request: dict[str, Any], timeout_s: float) -> tuple[str, Any]:
        """Send one request; kill the worker and raise QueryTimeout past ``timeout_s``."""
        if not self.alive():
            self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            write_frame(proc.stdin, request)
        except (OSError, ValueError):
            self.kill()
            raise QueryFailed(f"{self.name} process is gone") from None
        try:
            reply = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()
            raise QueryTimeout(f"query ran longer than {timeout_s:g} s; worker process killed") from None
        if reply is _EOF:
            code = _exit_code(proc)
            self.kill()
            if code is None:  # alive, but its channel is unreadable (a hostile frame)
                raise QueryFailed(f"{self.name} sent a reply that is not a result; killed")
            raise QueryFailed(f"{self.name} process died during the query (exit code {code}; "
                              "out of memory?)")
        return reply

    def kill(self) -> None:
        """Stop the worker now (SIGKILL) and remove its temporary folder; safe to call when
        none is running."""
        proc, self._proc = self._proc, None
        if proc is None:
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
                self._tmpdir = None
            return
        self._signal(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        self.exit_code = proc.returncode
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        tmpdir, self._tmpdir = self._tmpdir, None
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)

    def close(self) -> None:
        """Ask the worker to exit, then make sure it has."""
        proc = self._proc
        if proc is not None and proc.poll() is None and proc.stdin is not None:
            try:
                write_frame(proc.stdin, None)
                proc.stdin.close()
                proc.wait(2)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.kill()


class SparqlWorker(WorkerProcess):
    """The SPARQL worker: opens ``store_path`` read-only (or only checks queries when it
    is :data:`MEMORY_STORE`)."""

    name = "SPARQL worker"

    def __init__(self, store_path: str, memory_limit_bytes: int | None = None) -> None:
        super().__init__("queryeval.engines.query.sparql_worker",
                         [store_path, str(memory_limit_bytes or 0)])
        self.store_path = store_path


def _child_env() -> dict[str, str]:
    """The parent's environment, with the directory holding ``queryeval`` first on
    PYTHONPATH, so the worker imports the same code even when the parent found it through
    a ``sys.path`` edit rather than an installation."""
    root = str(Path(os.path.abspath(__file__)).parents[3])  # the folder holding queryeval
    env = dict(os.environ)
    parts = [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def _exit_code(proc: subprocess.Popen[bytes]) -> int | None:
    """The worker's exit code once its channel ended, or None when it is still alive a
    few seconds later (it sent something unreadable; the caller kills it)."""
    try:
        return proc.wait(3)
    except subprocess.TimeoutExpired:
        return None


def _pump(stream: IO[bytes], replies: queue.Queue[Any],
          unpickler: type[pickle.Unpickler] | None = None) -> None:
    """Reader thread: move every frame from the worker into ``replies``, then ``_EOF``."""
    try:
        while True:
            msg = read_frame(stream, unpickler)
            replies.put(msg)
            if msg is _EOF:
                return
    except (OSError, ValueError, pickle.UnpicklingError, EOFError, MemoryError):
        replies.put(_EOF)  # a hostile or broken frame: the worker is treated as dead


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.stderr.write("usage: python -m queryeval.engines.query.sparql_worker "
                         "STORE_DIR [MEMORY_BYTES]\n")
        sys.exit(2)
    sys.exit(worker_main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 0))
