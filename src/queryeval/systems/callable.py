"""An in-memory Python object as the system under test (the Python API's ``system=``).

:func:`as_system` accepts

* a plain function ``f(request) -> dict`` (run like ``python:MODULE:FUNC``: in a daemon thread,
  so the per-call timeout holds; a timed-out call is abandoned and recorded as a timeout);
* an ``async def f(request) -> dict`` (run on ONE event loop in a dedicated thread, at most
  ``concurrency`` calls at once through an ``asyncio.Semaphore``; a call past its timeout is
  cancelled and recorded as a timeout);
* an object with a ``.call(request)`` or ``.call(request, timeout)`` method, sync or async
  (its ``close()``, if any, is called when the run ends).

Failures are recorded exactly as for ``python:`` systems: ``TimeoutError`` and
``ConnectionError`` are transient (retried), any other exception is recorded without retry
as ``exception: Type: message``; a :class:`~queryeval.errors.SystemCallError` raised by the
callable is kept as it is (its kind and ``retryable`` flag), so a system can say "retry me".

A run log stores a system as a string. :func:`register` gives a live object an
``object:NAME#TOKEN`` spec that :func:`queryeval.systems.base.make_system` resolves while the
object is registered; resuming such a run in a new process needs the object again
(``queryeval.resume(path, system=obj)``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from queryeval.errors import ConfigError, SystemCallError
from queryeval.systems.base import checked_output
from queryeval.systems.python import PythonSystem

OBJECT_PREFIX = "object:"


def _is_async(func: Any) -> bool:
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(func, "__call__", None)  # noqa: B004 - an async __call__ on an instance
    return call is not None and inspect.iscoroutinefunction(call)


def _takes_timeout(method: Callable) -> bool:
    """Whether ``method`` accepts a second positional argument (the per-call timeout)."""
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


def _describe(obj: Any) -> str:
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name:
        return name
    for attr in ("__qualname__", "__name__"):
        value = getattr(obj, attr, None)
        if isinstance(value, str):
            module = getattr(obj, "__module__", None)
            return f"{module}.{value}" if module else value
    return type(obj).__qualname__


def _transient(exc: BaseException) -> SystemCallError:
    """A callable's exception as the runner records it (the rules of ``python:`` systems)."""
    if isinstance(exc, SystemCallError):
        return exc
    transient = isinstance(exc, (TimeoutError, ConnectionError))
    kind = "timeout" if isinstance(exc, TimeoutError) else "exception"
    return SystemCallError(kind, f"{type(exc).__name__}: {exc}", retryable=transient)


class _EventLoop:
    """One asyncio loop in a daemon thread; started on first use, stopped by :meth:`stop`."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sem: asyncio.Semaphore | None = None

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    self._sem = asyncio.Semaphore(self.concurrency)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=run, daemon=True, name="queryeval-async-system")
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, make: Callable[[], Any], timeout: float | None) -> Any:
        """Run the coroutine ``make()`` on the loop; cancel it past ``timeout`` seconds."""
        loop = self._ensure()

        async def bounded() -> Any:
            assert self._sem is not None  # set before the loop ran anything
            async with self._sem:
                task = asyncio.ensure_future(make())
                try:
                    done, _ = await asyncio.wait({task}, timeout=timeout)
                except asyncio.CancelledError:  # given up from outside: stop the call too
                    task.cancel()
                    raise
                if not done:
                    task.cancel()
                    raise SystemCallError("timeout", f"no answer within {timeout:g}s",
                                          retryable=True)
                return task.result()

        fut = asyncio.run_coroutine_threadsafe(bounded(), loop)
        # a coroutine that blocks the loop (time.sleep in async code) cannot be cancelled:
        # give up waiting a little after the deadline, as for a sync callable
        limit = None if timeout is None else timeout + max(1.0, timeout)
        try:
            return fut.result(limit)
        except concurrent.futures.TimeoutError:  # TimeoutError itself from Python 3.11 on
            if fut.done():  # the call itself raised TimeoutError
                raise
            fut.cancel()
            raise SystemCallError("timeout", f"no answer within {timeout:g}s",
                                  retryable=True) from None

    def stop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = self._sem = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        if not thread.is_alive():
            loop.close()


class CallableSystem:
    """A Python callable, or an object with ``.call``, as a system under test
    (:class:`~queryeval.systems.base.System`)."""

    def __init__(self, target: Any, *, name: str | None = None, concurrency: int = 4) -> None:
        method = getattr(target, "call", None)
        if callable(method) and not inspect.isfunction(target):
            func, self._owner = method, target
        elif callable(target):
            func, self._owner = target, None
        else:
            raise ConfigError(
                f"system must be a callable, an object with .call, or a spec string "
                f"(python:…, http(s)://…, cmd:…), got {type(target).__name__}")
        self.func = func
        self.name = name or _describe(target)
        self.is_async = _is_async(func)
        self._with_timeout = self._owner is not None and _takes_timeout(func)
        self._loop = _EventLoop(concurrency)  # started only if a call needs it

    def _args(self, request: dict, timeout: float | None) -> tuple:
        return (request, timeout) if self._with_timeout else (request,)

    def call(self, request: dict, timeout: float | None) -> Any:
        if self.is_async:  # the sync path is checked by PythonSystem
            return checked_output(
                self._await(lambda: self.func(*self._args(request, timeout)), timeout))
        started = time.monotonic()
        value = self._call_sync(request, timeout)
        if inspect.isawaitable(value):  # a plain function that returned a coroutine
            left = None if timeout is None else max(0.001, timeout - (time.monotonic() - started))
            return checked_output(self._await(lambda: value, left))
        return value

    def _await(self, make: Callable[[], Any], timeout: float | None) -> Any:
        try:
            return self._loop.run(make, timeout)
        except SystemCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - user code: recorded on the case
            raise _transient(exc) from None

    def _call_sync(self, request: dict, timeout: float | None) -> Any:
        raised: list[SystemCallError] = []

        def guarded(req: dict) -> Any:
            try:
                return self.func(*self._args(req, timeout))
            except SystemCallError as err:  # the callable's own verdict: keep it as it is
                raised.append(err)
                raise

        try:
            return PythonSystem(guarded, name=self.name).call(request, timeout)
        except SystemCallError:
            if raised:
                raise raised[0] from None
            raise

    def close(self) -> None:
        self._loop.stop()
        close = getattr(self._owner, "close", None)
        if callable(close):
            close()


def as_system(target: Any, *, concurrency: int = 4) -> Any:
    """``target`` as a system: a :class:`CallableSystem`, or ``target`` itself when it already
    is one (a CallableSystem, HttpSystem, … built by the caller)."""
    if isinstance(target, CallableSystem):
        return target
    return CallableSystem(target, concurrency=concurrency)


# --- live objects behind a spec string ------------------------------------------------------
_LIVE: dict[str, Any] = {}
_LIVE_LOCK = threading.Lock()


def register(system: Any, spec: str | None = None) -> str:
    """Keep ``system`` reachable as ``object:NAME#TOKEN`` (or the given ``spec``) until
    :func:`unregister`; returns the spec."""
    if spec is None:
        name = "".join(c if c.isprintable() and c not in "#" else "_"
                       for c in getattr(system, "name", "system"))[:120]
        spec = f"{OBJECT_PREFIX}{name}#{uuid.uuid4().hex[:12]}"
    with _LIVE_LOCK:
        _LIVE[spec] = system
    return spec


def unregister(spec: str) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(spec, None)


def lookup(spec: str) -> Any:
    with _LIVE_LOCK:
        system = _LIVE.get(spec)
    if system is None:
        raise ConfigError(
            f"system {spec!r} was a Python object of another session; pass it again "
            "(queryeval.resume(RUN, system=obj) or evaluate(..., system=obj, resume=True))")
    return system
