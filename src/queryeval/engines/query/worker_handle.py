"""The one base of every object that holds a sandboxed worker process: the SQL engines
(:mod:`.sql`, PostgreSQL's included), the SPARQL engine (:mod:`.sparql_local`) and the test
suite's neighbour runners (:mod:`.neighbours.runner`, :mod:`.neighbours.pg`).

It owns the :class:`..worker.WorkerProcess`, exposes it (``worker``) and its sandbox
report (``sandbox``), closes it when the holder is closed, left as a context manager or
collected (a :func:`weakref.finalize`, so a forgotten holder leaves no process behind), and
(re)starts it with a settings frame: a worker whose settings differ from the ones asked
for -- a test switched the query checks, a runner was allowed other folders -- is killed
and started again, as is one that died (a deadline kill, the memory cap, a crash).
:class:`WorkerBacked` is the face it shares with the engines that borrow a runner's worker
for one neighbour (``worker``, ``sandbox``, closing).

The settings also say what the worker may read: the sandbox (:mod:`.sandbox`) is applied
once, at start, with the files and folders they name, so a worker allowed other ones is a
new worker. A PostgreSQL worker whose connection was lost answers ``"restart"``
(:meth:`WorkerHandle._ask`): a sandboxed process cannot open a new socket, so a fresh one
connects again.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from queryeval.io.closing import Closing


class WorkerBacked(Closing):
    """What every object whose queries run in a worker shows: the worker (``worker``), its
    sandbox report (``sandbox``), and closing as a context manager. :class:`WorkerHandle`
    owns its worker; a neighbour's lent engine (:mod:`.neighbours.runner`) borrows one."""

    @property
    def worker(self) -> Any:
        raise NotImplementedError

    @property
    def sandbox(self) -> dict[str, str] | None:
        """The worker's sandbox report (:func:`.sandbox.apply`); None before it started."""
        return self.worker.sandbox


class WorkerHandle(WorkerBacked):
    """Holds one worker process; use as a context manager."""

    def _hold(self, worker: Any, cleanup: Callable[..., None] | None = None,
              *cleanup_args: Any) -> None:
        """Hold ``worker`` (a not yet started :class:`..worker.WorkerProcess`);
        ``cleanup(*cleanup_args)`` replaces the default ``worker.close()`` at close (it must
        close the worker too)."""
        self._worker = worker
        self._finalizer = weakref.finalize(self, cleanup or self._worker.close, *cleanup_args)

    @property
    def worker(self) -> Any:
        """The worker handle (exposed for tests and diagnostics)."""
        return self._worker

    def close(self) -> None:
        """Stop the worker. Idempotent."""
        self._finalizer()

    def _ensure_started(self, init: Any) -> bool:
        """Start the worker unless it is alive with settings ``init``; True when it was
        (re)started now."""
        if self._worker.alive() and self._worker.init == init:
            return False
        self._worker.kill()
        self._worker.init = init
        self._worker.start()
        return True

    def _ask(self, init: Any, request: dict[str, Any], timeout_s: float, *,
             retry_lost: bool = True) -> tuple[str, Any, float]:
        """Send ``request`` to the worker (started with settings ``init``) with a deadline of
        ``timeout_s``: (status, payload, milliseconds the last request took). A reply of kind
        ``"restart"`` (the worker's connection is gone and it cannot open another) kills the
        worker and, with ``retry_lost``, asks a fresh one once more; one that still says so
        comes back as a failure."""
        for attempt in (1, 2):
            self._ensure_started(init)
            start = time.perf_counter()
            status, payload = self._worker.request(request, timeout_s)
            elapsed = (time.perf_counter() - start) * 1000.0
            if status == "ok" or not isinstance(payload, dict) \
                    or payload.get("kind") != "restart":
                return status, payload, elapsed
            self._worker.kill()  # a fresh worker connects again
            if not retry_lost or attempt == 2:
                break
        return status, {**payload, "kind": "failed"}, elapsed


def close_all(holders: Iterable[Any]) -> None:
    """Close several holders (:class:`WorkerHandle`, an engine holding one) side by side:
    every worker is first sent its exit frame (:meth:`..worker.WorkerProcess.ask_exit`),
    then each holder is closed, which waits for its worker to have ended. Closing them one
    after another waits for each worker's exit in turn (tens of milliseconds each)."""
    holders = list(holders)
    for holder in holders:
        ask = getattr(getattr(holder, "worker", None), "ask_exit", None)
        if callable(ask):
            ask()
    for holder in holders:
        holder.close()
