"""The worker process that runs SPARQL on a read-only pyoxigraph store, and its handle.

Why a process: pyoxigraph evaluates a query inside Rust code that cannot be interrupted
from Python (no timeout parameter; signals are not checked; it releases the GIL, so a
watchdog thread could not stop it either). The only reliable way to stop a runaway
query is to kill the process that runs it. The worker opens the store with
``Store.read_only`` -- it cannot write, whatever it is asked -- and stays alive between
queries, so the start-up cost (interpreter, import, opening the store; a few hundred ms)
is paid once per engine and again only after a timeout kill.

Process and protocol: the worker is ``python -m queryeval.systems.engines.sparql_worker
STORE_DIR`` started with :mod:`subprocess`, not :mod:`multiprocessing`: multiprocessing's
spawn and forkserver start methods re-import the caller's ``__main__`` module, which breaks
every user script without an ``if __name__ == "__main__"`` guard (measured), and fork is
unsafe in a process that has threads. Messages are length-prefixed pickles over the
worker's stdin and stdout (the worker moves ``sys.stdout`` to stderr first, so a stray
print cannot corrupt the channel). The worker sends ``("ready", quad_count)`` or
``("fatal", message)`` once; then answers every request dict with ``("ok", payload)`` /
``("syntax", message)`` / ``("error", message)``; ``None`` or end of input make it exit.
A reader thread in the parent moves replies into a queue, so waiting with a deadline is a
``Queue.get(timeout=...)`` and works on every platform. Rows travel as SPARQL-JSON term
dicts, so the parent does no conversion.
"""

from __future__ import annotations

import os
import pickle
import queue
import re
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from queryeval.systems.engines.base import QueryFailed, QueryRefused, QueryTimeout

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
RDF_DIR_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString"

START_TIMEOUT_S = 120.0
MEMORY_STORE = ":memory:"
"""Store path meaning "no data, only check queries" (the remote engine's checker)."""
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


def verify(checker: Any, request: dict[str, Any]) -> tuple[str, Any] | None:
    """Run :func:`.sparql_safety.verify_with_engine` on the empty store ``checker``:
    ``None`` when the query may run, else the ``("refused" | "syntax", message)`` reply."""
    from queryeval.systems.engines.sparql_safety import verify_with_engine

    base_iri = request.get("base_iri") or CHECK_BASE_IRI
    lenient = bool(request.get("lenient_prefixes"))

    def parse(text: str, prefixes: Any) -> None:
        # With lenient_prefixes (remote endpoints, which may predefine prefixes such as
        # dbo: or brick:), an undeclared prefix gets a placeholder IRI for the check only.
        # Never one whose name holds a neutralised keyword: declaring `trueSERVICq:` would
        # turn `trueSERVICE:x {...}` (true + SERVICE for a parser without that prefix)
        # into a harmless-looking triple (found by the corpus test).
        extra: dict[str, str] = {}
        for _ in range(64):
            try:
                checker.query(text, prefixes={**extra, **prefixes} or None, base_iri=base_iri)
                return
            except SyntaxError as exc:
                name = missing_prefix(text, str(exc)) if lenient else None
                if name is None or name in extra or _NEUTRALISED.search(name):
                    raise
                extra[name] = f"{CHECK_BASE_IRI}prefix/{len(extra)}#"
        raise SyntaxError("too many undeclared prefixes")

    try:
        verify_with_engine(parse, request["query"], prefixes=request.get("prefixes") or {},
                           from_spans=list(request.get("from_spans") or ()))
    except QueryRefused as exc:
        return ("refused", exc.reason)
    except SyntaxError as exc:
        return ("syntax", str(exc))
    except Exception as exc:  # noqa: BLE001 - whatever it is, the query was not verified
        return ("refused", f"could not verify the query: {type(exc).__name__}: {exc}")
    return None


_PREFIX_ERROR = re.compile(r"^error at (\d+):(\d+): expected one of Prefix not found")
_NEUTRALISED = re.compile("servicq|froq", re.IGNORECASE | re.ASCII)
_PNAME_END = re.compile(r"([^\W\d][\w.\-\u00b7]*)?:[\w.\-%\\:]*$")


def missing_prefix(text: str, message: str) -> str | None:
    """The prefix name pyoxigraph reported as undeclared ("Prefix not found"), or None."""
    m = _PREFIX_ERROR.match(message)
    if m is None:
        return None
    lines = text.split("\n")
    line, col = int(m.group(1)), int(m.group(2))
    if not 1 <= line <= len(lines):
        return None
    found = _PNAME_END.search(lines[line - 1][: col - 1])
    return None if found is None else (found.group(1) or "")


def run_query(store: Any, request: dict[str, Any], checker: Any = None) -> tuple[str, Any]:
    """Verify (on ``checker``, an empty in-memory store) and execute one request on
    ``store``; never raises (errors become replies). ``store`` None: verify only."""
    import pyoxigraph as ox

    if checker is not None:
        refusal = verify(checker, request)
        if refusal is not None or store is None:
            return refusal or ("ok", None)
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
            for item in result:
                if len(rows) >= max_rows:
                    truncated = True  # a (max_rows + 1)-th row exists
                    break
                rows.append(convert(item))
            payload = {"kind": kind, "columns": columns, "rows": rows, "boolean": None}
        payload["truncated"] = truncated
        payload["engine_ms"] = (time.perf_counter() - start) * 1000.0
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


def read_frame(stream: IO[bytes]) -> Any:
    """One message, or ``_EOF`` when the stream ends (also mid-frame)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return _EOF
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return _EOF
    return pickle.loads(data)


def cap_memory(limit: int) -> None:
    """Set this process's RLIMIT_DATA (heap and private writable mappings) to ``limit``
    bytes; 0 leaves it alone. Unlike RLIMIT_AS it does not count RocksDB's read-only file
    mappings, so the store still opens; an allocation past it fails (Rust aborts the
    worker, which the parent reports as a failed query)."""
    import resource

    if limit <= 0 or not hasattr(resource, "RLIMIT_DATA"):
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def worker_main(store_path: str, memory_limit: int = 0) -> int:
    """Entry point of the worker process (``python -m ... STORE_DIR [MEMORY_BYTES]``)."""
    cap_memory(memory_limit)
    channel_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr
    channel_in = sys.stdin.buffer
    try:
        import pyoxigraph as ox

        checker = ox.Store()  # empty, in memory: where queries are verified
        store = None if store_path == MEMORY_STORE else ox.Store.read_only(store_path)
        write_frame(channel_out, ("ready", 0 if store is None else len(store)))
    except Exception as exc:
        write_frame(channel_out, ("fatal", f"{type(exc).__name__}: {exc}"))
        return 1
    while True:
        request = read_frame(channel_in)
        if request is _EOF or request is None:
            return 0
        write_frame(channel_out, run_query(store, request, checker))


class WorkerProcess:
    """The parent's handle on one worker process (``python -m MODULE ARGS...``): start,
    ask with a deadline, kill. The child sends ``("ready", info)`` or ``("fatal", message)``
    once, then one reply per request; ``None`` asks it to exit."""

    name = "worker"

    def __init__(self, module: str, args: list[str]) -> None:
        self.module = module
        self.args = list(args)
        self._proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue[Any] = queue.Queue()
        self.starts = 0  # how many processes were started (tests watch restarts)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start a fresh worker and wait until it has opened the store."""
        self.kill()
        proc = subprocess.Popen(
            [sys.executable, "-m", self.module, *self.args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_child_env(),
        )
        replies: queue.Queue[Any] = queue.Queue()
        assert proc.stdout is not None
        threading.Thread(target=_pump, args=(proc.stdout, replies), daemon=True,
                         name="queryeval-sparql-reader").start()
        self._proc, self._replies = proc, replies
        self.starts += 1
        try:
            reply = replies.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            self.kill()
            raise QueryFailed(f"{self.name} did not start within {START_TIMEOUT_S:.0f} s") from None
        if reply is _EOF:
            code = proc.wait(10)
            self.kill()
            raise QueryFailed(f"{self.name} died while starting (exit code {code})")
        status, detail = reply
        if status != "ready":
            self.kill()
            raise QueryFailed(f"{self.name} could not start: {detail}")

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
            code = proc.wait(10)
            self.kill()
            raise QueryFailed(f"{self.name} process died during the query (exit code {code}; "
                              "out of memory?)")
        return reply

    def kill(self) -> None:
        """Stop the worker now (SIGKILL); safe to call when none is running."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

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
        super().__init__("queryeval.systems.engines.sparql_worker",
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


def _pump(stream: IO[bytes], replies: queue.Queue[Any]) -> None:
    """Reader thread: move every frame from the worker into ``replies``, then ``_EOF``."""
    try:
        while True:
            msg = read_frame(stream)
            replies.put(msg)
            if msg is _EOF:
                return
    except (OSError, ValueError, pickle.UnpicklingError, EOFError):
        replies.put(_EOF)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.stderr.write("usage: python -m queryeval.systems.engines.sparql_worker "
                         "STORE_DIR [MEMORY_BYTES]\n")
        sys.exit(2)
    sys.exit(worker_main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 0))
