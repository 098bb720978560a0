"""A Python callable as the system under test: ``python:pkg.module:func``.

By default (:class:`PythonSystem`) the callable runs in this process, in a daemon thread so
the per-call timeout holds even for code that never returns (Python cannot kill a thread: a
timed-out call is abandoned, recorded as a timeout, and the run goes on). In-process code can
end or derail the whole run: ``os._exit`` or a crash in a C extension ends it, ``os.chdir``
changes the run's current directory.

With isolation (``--isolate``, :class:`IsolatedPythonSystem`) the callable runs in worker
processes (a fresh interpreter each, started like ``multiprocessing``'s *spawn* but without
re-running the parent's ``__main__``; a session of its own, so Ctrl-C is the parent's to
handle and a kill takes the worker's own children too), one per call in flight, reused from
call to call. Each is a :class:`queryeval.engines.worker.WorkerProcess` (the
one worker base; not sandboxed: it runs the user's own code). Requests and outputs travel
pickled over its stdin and stdout (the worker's own ``sys.stdin`` reads nothing, its
``print`` goes to stderr). A worker that dies
during a call (``os._exit``, a segfault, the OOM killer) is recorded on that case as a
retryable ``process`` error naming its exit status, and the next call starts a fresh worker;
a call past its timeout kills its worker (the deadline holds, unlike a thread) and is a
``timeout``. Each call starts in the run's starting directory; the worker's directory,
signal handlers and globals are its own, so the run's are untouched.

The callable may be an ``async def``: :func:`queryeval.systems.factory.make_system` then
runs it as :mod:`queryeval.systems.callable` runs one (one event loop, at most
``concurrency`` calls at once, a call past its timeout cancelled); an isolated worker awaits
it on its own loop. A ``path/file.py`` spec puts the file's own folder first on the import
path, in the workers too, so the file imports the modules beside it.

``TimeoutError``/``ConnectionError`` raised by the callable are treated as transient and
retried; any other exception is recorded without retry.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import inspect
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from queryeval.engines.query.base import QueryFailed, QueryTimeout
from queryeval.engines.worker import (
    WorkerProcess,
    kill_group,
    open_channel,
    read_frame,
    write_frame,
)
from queryeval.errors import ConfigError, SystemCallError
from queryeval.systems.base import checked_output

WORKER_START_TIMEOUT = 120.0
"""Seconds an isolated worker may take to start and import the callable (not counted in a
call's timeout: a model loaded at import would otherwise time out every fresh worker)."""


def _importable(folder: str, *, first: bool = False) -> None:
    """Put ``folder`` on the import path (first, as Python does for a script's own folder,
    or last), unless it is there already."""
    if folder not in sys.path:
        if first:
            sys.path.insert(0, folder)
        else:
            sys.path.append(folder)


def is_async_callable(func: Any) -> bool:
    """Whether calling ``func`` gives a coroutine: an ``async def`` function (also behind
    ``functools.partial``) or an object whose ``__call__`` is one."""
    while isinstance(func, functools.partial):
        func = func.func
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(func, "__call__", None)  # noqa: B004 - an async __call__ on an instance
    return call is not None and inspect.iscoroutinefunction(call)


def load_callable(spec: str) -> Callable[[dict], Any]:
    """The callable named by ``MODULE:FUNC`` or ``path/file.py:FUNC`` (after ``python:``).
    A file's own folder goes first on the import path, so it imports the modules beside it
    (as ``python path/file.py`` would); the current directory is importable too. (Built by
    :func:`queryeval.systems.factory.make_system`, which also routes an ``async def``.)"""
    target, sep, func_name = spec.rpartition(":")
    if not sep or not target or not func_name:
        raise ConfigError(f"python system must be python:MODULE:FUNC, got python:{spec}")
    try:
        if target.endswith(".py") or os.sep in target or "/" in target:
            path = Path(target).resolve()
            if not path.is_file():
                raise ConfigError(f"python system file not found: {target}")
            _importable(str(path.parent), first=True)  # ``from patterns import A`` beside it
            _importable(os.getcwd())
            mod_name = f"_queryeval_system_{abs(hash(str(path)))}"
            module_spec = importlib.util.spec_from_file_location(mod_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ConfigError(f"cannot import {target}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[mod_name] = module
            module_spec.loader.exec_module(module)
        else:
            _importable(os.getcwd(), first=True)
            module = importlib.import_module(target)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code: report, don't crash
        raise ConfigError(f"cannot import python system {target!r}: {type(exc).__name__}: {exc}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ConfigError(f"python system {target!r} has no callable {func_name!r}")
    return func


class PythonSystem:
    def __init__(self, func: Callable[[dict], Any], name: str | None = None) -> None:
        self.func = func
        self.name = name or f"python:{getattr(func, '__module__', '?')}:{getattr(func, '__name__', '?')}"

    def call(self, request: dict, timeout: float | None) -> Any:
        return checked_output(self._call(request, timeout))

    def _call(self, request: dict, timeout: float | None) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = self.func(request)
            except BaseException as exc:  # noqa: BLE001 - recorded on the case
                box["error"] = exc

        thread = threading.Thread(target=target, daemon=True, name="queryeval-system-call")
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            raise SystemCallError("timeout", f"no answer within {timeout:g}s", retryable=True)
        if "error" in box:
            raise _call_error(box["error"])
        return box.get("value")

    def close(self) -> None:
        pass


def _call_error(exc: BaseException) -> SystemCallError:
    transient = isinstance(exc, (TimeoutError, ConnectionError))
    kind = "timeout" if isinstance(exc, TimeoutError) else "exception"
    return SystemCallError(kind, f"{type(exc).__name__}: {exc}", retryable=transient)


def _absolute_spec(spec: str) -> str:
    """``spec`` with a file path made absolute, so a worker finds it whatever its directory."""
    target, sep, func_name = spec.rpartition(":")
    if sep and target and (target.endswith(".py") or os.sep in target or "/" in target):
        return f"{Path(target).resolve()}:{func_name}"
    return spec


_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from queryeval.systems.python import _worker_main; _worker_main()")
"""A worker's command line: the parent's import path, then the worker loop. (Not
``multiprocessing``'s spawn, which re-runs the parent's ``__main__`` in every worker.)"""


def _worker_main() -> None:
    """An isolated worker (``argv``: import path, spec, directory): load the callable, then
    answer requests from the channel until told to stop or the parent is gone."""
    channel_in = os.fdopen(os.dup(0), "rb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the callable's stdin: not the channel
    channel_out = open_channel()[1]
    cwd = sys.argv[3]
    os.chdir(cwd)
    try:
        func = load_callable(sys.argv[2])
    except ConfigError as exc:
        write_frame(channel_out, ("fatal", str(exc)))
        return
    write_frame(channel_out, ("ready", None))
    loop: asyncio.AbstractEventLoop | None = None  # one per worker, for async callables
    while True:
        try:
            request = read_frame(channel_in, pickle.Unpickler)
        except (OSError, EOFError, pickle.UnpicklingError):
            return  # the parent is gone
        if request is None or not isinstance(request, dict):
            return  # None: told to stop; _EOF: the parent is gone
        try:
            os.chdir(cwd)  # every call starts where the run started, whatever the last did
            value = func(request)
            if inspect.isawaitable(value):  # async def: awaited on this worker's one loop
                if loop is None:
                    loop = asyncio.new_event_loop()
                value = loop.run_until_complete(value)
            answer: tuple = ("ok", value)
        except BaseException as exc:  # noqa: BLE001 - recorded on the case
            err = _call_error(exc)
            answer = ("error", (err.kind, err.message, err.retryable))
        try:
            try:
                write_frame(channel_out, answer)  # pickled whole before a byte is written
            except OSError:
                raise
            except Exception as exc:  # noqa: BLE001 - an output that cannot be pickled
                write_frame(channel_out, ("error", (
                    "malformed", "output cannot be sent back from the worker: "
                    f"{type(exc).__name__}: {exc}", False)))
        except OSError:
            return  # the parent is gone


class _Worker(WorkerProcess):
    """One isolated worker: ``python -c _BOOT`` in the run's directory, a session of its own
    (a kill takes its process group), outputs read as the callable made them."""

    start_timeout_s = WORKER_START_TIMEOUT
    unpickler = pickle.Unpickler  # the user's own code, not a hostile query

    def __init__(self, name: str, spec: str, cwd: str) -> None:
        super().__init__("", [])
        self.name, self.spec, self.cwd = name, spec, cwd

    def _popen(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(  # noqa: S603 - this interpreter, our own module
            [sys.executable, "-c", _BOOT, json.dumps(sys.path), self.spec, self.cwd],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)

    def _signal(self, proc: subprocess.Popen[bytes]) -> None:
        """End the worker and anything it started (its process group)."""
        kill_group(proc.pid)  # a session leader's group id is its pid


def _exit_text(code: int | None) -> str:
    if code is None:
        return "it did not stop"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class IsolatedPythonSystem:
    """``python:MODULE:FUNC`` run in worker processes (see the module docstring)."""

    def __init__(self, spec: str) -> None:
        self.name = f"python:{spec}"
        self.spec = _absolute_spec(spec)
        self.cwd = os.getcwd()
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._closed = False
        self._idle.append(self._start(config_errors=True))  # a bad spec fails the run up front

    def _start(self, *, config_errors: bool = False) -> _Worker:
        worker = _Worker(self.name, self.spec, self.cwd)
        with self._lock:
            self._all.add(worker)
        try:
            worker.start()
        except OSError as exc:
            self._discard(worker)
            raise SystemCallError("process", f"cannot start a worker: {exc}") from None
        except QueryFailed:
            self._discard(worker)
            if worker.last_fatal is not None:  # the callable could not be loaded
                text = worker.last_fatal
            elif worker.exit_code is None:
                text = f"{self.name}: worker did not start within {WORKER_START_TIMEOUT:g}s"
            else:
                text = f"{self.name}: worker ended while importing " \
                       f"({_exit_text(worker.exit_code)})"
            if config_errors:
                raise ConfigError(text) from None
            raise SystemCallError("process", text, retryable=True) from None
        return worker

    def _discard(self, worker: _Worker) -> int | None:
        with self._lock:
            self._all.discard(worker)
        worker.kill()
        return worker.exit_code

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise SystemCallError("process", "the system is closed")
            if self._idle:
                return self._idle.pop()
        return self._start()

    def call(self, request: dict, timeout: float | None) -> Any:
        worker = self._take()
        t0 = time.monotonic()
        try:
            status, payload = worker.request(request, timeout)  # type: ignore[arg-type]
        except QueryTimeout:  # the worker was killed
            self._discard(worker)
            raise SystemCallError("timeout", f"no answer within {timeout:g}s (worker killed)",
                                  retryable=True) from None
        except QueryFailed:
            code = self._discard(worker)
            raise SystemCallError(
                "process", f"the worker process died during the call ({_exit_text(code)}, "
                f"after {time.monotonic() - t0:.1f}s); a fresh worker takes the next call",
                retryable=True) from None
        with self._lock:
            if self._closed:
                worker.kill()
            else:
                self._idle.append(worker)
        if status == "error":
            kind, message, retryable = payload
            raise SystemCallError(kind, message, retryable=retryable)
        return checked_output(payload)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._all, self._idle = list(self._all), set(), []
        for worker in workers:
            worker.close()
