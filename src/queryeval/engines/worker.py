"""The one worker-process base: a child process run as ``python -m MODULE ARGS...``, its
frame protocol, and the parent's handle on it (:class:`WorkerProcess`).

Every worker is built on it: the SPARQL worker (:mod:`.query.sparql_worker`), the SQL worker
(:mod:`.query.sql_worker`), the PostgreSQL neighbour worker (:mod:`.query.neighbours.pg_worker`)
and the isolated Python system (:mod:`queryeval.systems.python`).

Why a process: an engine that evaluates a query inside native code (pyoxigraph, DuckDB)
cannot be interrupted from Python, so the only reliable way to stop a runaway query is to
kill the process that runs it. The worker is started with :mod:`subprocess`, not
:mod:`multiprocessing`: multiprocessing's spawn and forkserver start methods re-import the
caller's ``__main__`` module, which breaks every user script without an ``if __name__ ==
"__main__"`` guard (measured), and fork is unsafe in a process that has threads.

Protocol: messages are length-prefixed pickles over the worker's stdin and stdout
(:func:`write_frame`, :func:`read_frame`; the worker moves ``sys.stdout`` to stderr first,
:func:`open_channel`, so a stray print cannot corrupt the channel). The parent reads only
value types (:class:`_FrameUnpickler`). The parent may send one settings frame first
(:class:`WorkerProcess` ``init``); the worker sends ``("ready", {"sandbox": report, ...})``
or ``("fatal", message)`` once (:func:`serve`: the operating-system sandbox of
:mod:`.query.sandbox` first); then answers every request dict with ``("ok", payload)`` /
``("refused" | "syntax" | "error", message)``; ``None`` or end of input make it exit. Each
worker gets a fresh temporary folder (``TMPDIR`` and :data:`WORKER_TMP_ENV`, its working
directory; removed when it ends). A reader thread in the parent moves replies into a queue,
so waiting with a deadline is a ``Queue.get(timeout=...)`` and works on every platform.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import queue
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from queryeval.engines.query.base import QueryFailed, QueryTimeout

START_TIMEOUT_S = 120.0
"""Seconds a worker may take to send ``ready`` (:attr:`WorkerProcess.start_timeout_s`)."""

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


def open_channel() -> tuple[IO[bytes], IO[bytes]]:
    """(requests in, replies out) of a worker: the replies go to a copy of stdout, and
    stdout itself is moved to stderr so that a stray print cannot corrupt the channel."""
    channel_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return sys.stdin.buffer, channel_out


def serve(memory: int, open_fn: Callable[[dict[str, Any]], Any],
          answer: Callable[[Any, dict[str, Any]], tuple[str, Any]], *,
          readable: Callable[[dict[str, Any]], list[str]] | None = None,
          with_settings: bool = True) -> int:
    """A worker's life (:mod:`.query.sparql_worker`'s, :mod:`.query.sql_worker`'s and
    :mod:`.query.neighbours.pg_worker`'s): the settings frame (``with_settings``; else no frame and ``{}``); then, with ``readable``
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


WORKER_TMP_ENV = "QUERYEVAL_WORKER_TMP"
"""The environment variable naming a worker's own temporary folder (the one place the
sandbox lets it write); TMPDIR points there as well."""


class WorkerProcess:
    """The parent's handle on one worker process (``python -m MODULE ARGS...``): start,
    ask with a deadline, kill. The child sends ``("ready", info)`` or ``("fatal", message)``
    once, then one reply per request; ``None`` asks it to exit. The one base of every worker:
    the engines' and the neighbour runners' (through :class:`.query.worker_handle.WorkerHandle`)
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
        """The last started worker's sandbox report (:func:`.query.sandbox.apply`)."""
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

    def ask_exit(self) -> bool:
        """Send the worker its exit frame and return at once (:meth:`close` then waits):
        several workers asked first end side by side, not one after another
        (:func:`.query.worker_handle.close_all`). True when the running worker has been
        asked, now or before."""
        proc = self._proc
        if proc is None or proc.poll() is not None or proc.stdin is None:
            return False
        if proc.stdin.closed:  # asked before (only an exit frame closes it)
            return True
        try:
            write_frame(proc.stdin, None)
            proc.stdin.close()
        except (OSError, ValueError):
            return False
        return True

    def close(self) -> None:
        """Ask the worker to exit, then make sure it has."""
        proc = self._proc
        if self.ask_exit() and proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(2)
        self.kill()


def kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` (a worker started in a session of its own, or a
    ``cmd:`` system's command): the process and whatever it started; nothing when the group
    is gone (PermissionError: macOS, for a group of zombies)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _child_env() -> dict[str, str]:
    """The parent's environment, with the directory holding ``queryeval`` first on
    PYTHONPATH, so the worker imports the same code even when the parent found it through
    a ``sys.path`` edit rather than an installation."""
    root = str(Path(os.path.abspath(__file__)).parents[2])  # the folder holding queryeval
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
