"""Calling the system for every case: a concurrency limit, a per-call timeout, retries with
exponential backoff for transient failures, and per-case error capture.

Cases run in a thread pool, or for a system with ``acall`` (HTTP) on one asyncio event loop
(``concurrency`` cases in flight); a case's scored turns run in order. Each finished case is
handed to ``on_record`` on the calling thread, which appends it to the run log, so nothing
computed is lost if the run is killed.
"""

from __future__ import annotations

import asyncio
import queue
import random
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from queryeval.errors import SystemCallError
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import format_loc
from queryeval.systems.base import System
from queryeval.tasks.base import Task, TurnOutcome


@dataclass
class RetryPolicy:
    retries: int = 2
    """Extra attempts after the first, for retryable failures only."""
    backoff: float = 0.5
    """First wait in seconds; doubles each attempt (with jitter), capped at ``backoff_max``."""
    backoff_max: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        base = min(self.backoff * (2 ** (attempt - 1)), self.backoff_max)
        return base * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not crypto


def _describe_malformed(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors(include_url=False)[0]
        loc = format_loc(err["loc"])
        msg = err["msg"][:1].lower() + err["msg"][1:]
        return f"{loc}: {msg}" if loc else msg
    return str(exc)


def _success(task: Task, request: dict, raw: Any, attempt: int, t0: float) -> TurnOutcome:
    """The outcome of an answer; ``SystemCallError`` (``malformed``) if the task refuses it."""
    latency = (time.perf_counter() - t0) * 1000
    try:
        output = task.parse_output(raw)
    except (ValidationError, ValueError, TypeError) as exc:
        raise SystemCallError("malformed", _describe_malformed(exc)) from None
    return TurnOutcome(turn=request["turn"], output=output, attempts=attempt, latency_ms=latency)


def _failure(request: dict, exc: Exception, attempt: int, started: float) -> TurnOutcome:
    if isinstance(exc, SystemCallError):
        error = {"kind": exc.kind, "message": exc.message}
    else:  # an adapter bug must not kill the run
        error = {"kind": "exception", "message": f"{type(exc).__name__}: {exc}"}
    return TurnOutcome(turn=request["turn"], error=error, attempts=attempt,
                       latency_ms=(time.perf_counter() - started) * 1000)


def _after_failure(request: dict, exc: Exception, attempt: int, started: float,
                   policy: RetryPolicy) -> TurnOutcome | float:
    """What a failed attempt leads to: the seconds to wait before the next (a retryable
    ``SystemCallError`` with retries left), else the turn's failure."""
    if isinstance(exc, SystemCallError) and exc.retryable and attempt <= policy.retries:
        return policy.delay(attempt, exc.retry_after)
    return _failure(request, exc, attempt, started)


def call_turn(system: System, task: Task, request: dict, *, timeout: float | None,
              policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep) -> TurnOutcome:
    """One scored turn: call, validate the output, retry transient failures."""
    attempt, started = 0, time.perf_counter()
    while True:
        attempt += 1
        t0 = time.perf_counter()
        try:
            return _success(task, request, system.call(request, timeout), attempt, t0)
        except Exception as exc:  # noqa: BLE001 - an adapter bug must not kill the run
            then = _after_failure(request, exc, attempt, started, policy)
        if isinstance(then, TurnOutcome):
            return then
        sleep(then)


async def acall_turn(system: Any, task: Task, request: dict, *, timeout: float | None,
                     policy: RetryPolicy) -> TurnOutcome:
    """:func:`call_turn` on the running event loop, through ``system.acall``."""
    attempt, started = 0, time.perf_counter()
    while True:
        attempt += 1
        t0 = time.perf_counter()
        try:
            return _success(task, request, await system.acall(request, timeout), attempt, t0)
        except Exception as exc:  # noqa: BLE001 - an adapter bug must not kill the run
            then = _after_failure(request, exc, attempt, started, policy)
        if isinstance(then, TurnOutcome):
            return then
        await asyncio.sleep(then)


@dataclass(frozen=True)
class Attempt:
    """One repeat of a case in a run with ``--repeats N``: its requests carry ``repeat``
    (0..N-1) and so does its record, right after ``case_id`` (see run/records.py)."""

    case: Case
    repeat: int


def with_repeat(record: dict, repeat: int) -> dict:
    """``record`` with ``repeat`` as its second key (after ``case_id``)."""
    out = {"case_id": record["case_id"], "repeat": repeat}
    out.update((k, v) for k, v in record.items() if k not in ("case_id", "repeat"))
    return out


def started_now() -> float:
    """The wall clock (epoch seconds, to the microsecond) when a case's first call starts:
    the record's last field, ``started_at``, which places its calls on a timeline
    (integrations/otel.py; ``latency_ms`` gives their lengths)."""
    return round(time.time(), 6)


def with_start(record: dict, started_at: float) -> dict:
    """``record`` with ``started_at`` as its last key."""
    record.pop("started_at", None)
    record["started_at"] = started_at
    return record


def evaluate_case(case: Case | Attempt, system: System, task: Task, *, timeout: float | None,
                  policy: RetryPolicy) -> dict:
    """Call the system for each scored turn of ``case`` (or of one :class:`Attempt`) and score
    the outcomes: the case's result record, ending with ``started_at`` (:func:`started_now`)."""
    started = started_now()
    if isinstance(case, Attempt):
        requests = [{**req, "repeat": case.repeat} for req in task.requests(case.case)]
        outcomes = [call_turn(system, task, req, timeout=timeout, policy=policy)
                    for req in requests]
        return with_start(with_repeat(task.score_case(case.case, outcomes), case.repeat), started)
    outcomes = [call_turn(system, task, req, timeout=timeout, policy=policy)
                for req in task.requests(case)]
    return with_start(task.score_case(case, outcomes), started)


async def aevaluate_case(case: Case | Attempt, system: Any, task: Task, *,
                         timeout: float | None, policy: RetryPolicy) -> dict:
    """:func:`evaluate_case` on the running event loop."""
    attempt = case if isinstance(case, Attempt) else None
    the_case = attempt.case if attempt is not None else case
    outcomes = []
    started = started_now()
    for req in task.requests(the_case):
        if attempt is not None:
            req = {**req, "repeat": attempt.repeat}
        outcomes.append(await acall_turn(system, task, req, timeout=timeout, policy=policy))
    record = task.score_case(the_case, outcomes)
    record = with_repeat(record, attempt.repeat) if attempt is not None else record
    return with_start(record, started)


def uses_event_loop(system: System) -> bool:
    """Whether :func:`run_cases` calls ``system`` on one asyncio event loop: it has
    ``acall`` and says it is ready (``async_ready``), and no loop runs in this thread
    already (a notebook's: then the threads serve it)."""
    if not getattr(system, "async_ready", False) or not callable(getattr(system, "acall", None)):
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


async def _run_on_loop(cases: Iterable[Case | Attempt], system: Any, task: Task, *,
                       on_record: Callable[[dict], Any], concurrency: int,
                       timeout: float | None, policy: RetryPolicy,
                       stop: threading.Event) -> int:
    """``concurrency`` workers on this loop take the next case from one iterator, call and
    score it, and hand its record to ``on_record`` (on this thread, as it finishes)."""
    it = iter(cases)
    done = 0
    failed = False  # on_record raised (a failed write): no later record is handed over

    async def worker() -> None:
        nonlocal done, failed
        while not stop.is_set():
            case = next(it, None)  # no await in between: one worker at a time reads it
            if case is None:
                return
            record = await aevaluate_case(case, system, task, timeout=timeout, policy=policy)
            if failed:  # another worker's write failed while this call was in flight
                return
            try:
                on_record(record)
            except BaseException:
                failed = True
                stop.set()
                raise
            done += 1

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, concurrency))]
    try:
        await asyncio.gather(*workers)
    finally:
        stop.set()
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        aclose = getattr(system, "aclose", None)
        if aclose is not None:
            await aclose()
    return done


def _run_interruptible(make: Callable[[], Any]) -> int:
    """``asyncio.run(make())`` with Ctrl-C turned into a clean stop: the first SIGINT cancels
    the run's task on the loop (its workers are cancelled and awaited, the system closed),
    then the SIGINT handler that was in place is called outside the loop, so its
    ``KeyboardInterrupt`` (the CLI's: exit 130 and the resume line) is raised where nothing
    is half done. A handler raising inside the loop could leave the task pending when
    ``asyncio.run`` closed the loop ("Event loop is closed" printed at exit)."""
    previous = (signal.getsignal(signal.SIGINT)
                if threading.current_thread() is threading.main_thread() else None)
    if not callable(previous):  # not the main thread, or SIGINT ignored / default
        return asyncio.run(make())
    hit: list[bool] = []

    async def main() -> int:
        loop, me = asyncio.get_running_loop(), asyncio.current_task()

        def on_sigint() -> None:
            hit.append(True)
            loop.remove_signal_handler(signal.SIGINT)
            signal.signal(signal.SIGINT, previous)  # a second Ctrl-C: the handler at once
            if me is not None:
                me.cancel()

        loop.add_signal_handler(signal.SIGINT, on_sigint)
        return await make()

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if not hit:
            raise
    finally:
        signal.signal(signal.SIGINT, previous)
    previous(signal.SIGINT, None)  # the CLI's handler (or Python's) raises KeyboardInterrupt
    raise KeyboardInterrupt


def run_cases(cases: Iterable[Case | Attempt], system: System, task: Task, *,
              on_record: Callable[[dict], Any], concurrency: int = 4,
              timeout: float | None = 60.0, policy: RetryPolicy | None = None,
              stop: threading.Event | None = None) -> int:
    """Evaluate ``cases`` with at most ``concurrency`` in flight; returns the number done.

    A system with ``inline = True`` (recorded outputs: nothing to wait for) is run on the
    calling thread, one case after another. A system with ``acall`` that is
    ``async_ready`` (an HTTP endpoint) is run on one asyncio event loop in the calling thread
    (:func:`uses_event_loop`): ``concurrency`` calls in flight, each record handed to
    ``on_record`` as its case finishes, no thread hand-offs.

    Submission is bounded (never more than ``2 * concurrency`` cases pending), so a suite of
    a million cases does not create a million futures up front. Finished cases arrive on a
    queue (one ``put`` per case) rather than through ``concurrent.futures.wait``, which locks
    every pending future on each call: at concurrency 64 that cost the calling thread more
    than the records it writes (see docs/reliability.md, "Load").
    """
    policy = policy or RetryPolicy()
    stop = stop or threading.Event()
    if getattr(system, "inline", False):  # answers at hand (recorded): threads only add GIL contention
        done = 0
        for case in cases:
            if stop.is_set():
                break
            on_record(evaluate_case(case, system, task, timeout=timeout, policy=policy))
            done += 1
        return done
    if uses_event_loop(system):  # HTTP: one loop, no thread hand-offs (docs/scale.md)
        return _run_interruptible(lambda: _run_on_loop(
            cases, system, task, on_record=on_record, concurrency=concurrency,
            timeout=timeout, policy=policy, stop=stop))
    window = 2 * max(1, concurrency)
    done = 0
    pending = 0
    it = iter(cases)
    finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="queryeval-case")
    submitted: list[Future] = []
    try:
        exhausted = False
        while True:
            while not exhausted and pending < window and not stop.is_set():
                case = next(it, None)
                if case is None:
                    exhausted = True
                    break
                fut = pool.submit(evaluate_case, case, system, task, timeout=timeout, policy=policy)
                fut.add_done_callback(finished.put)
                submitted.append(fut)
                pending += 1
            if not pending:
                break
            fut = finished.get()
            pending -= 1
            if len(submitted) > 4 * window:  # forget finished futures now and then
                submitted = [f for f in submitted if not f.done()]
            on_record(fut.result())
            done += 1
    finally:
        stop.set()
        for fut in submitted:
            fut.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
    return done
