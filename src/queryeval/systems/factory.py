"""A system from its spec: the one place that knows every kind of system (so the adapters
import :mod:`queryeval.systems.base` and nothing imports them back)."""

from __future__ import annotations

from typing import Any

from queryeval.errors import ConfigError
from queryeval.systems.base import System


def make_system(spec: str | Any, *, isolate: bool = False, concurrency: int = 4) -> System:
    """Build a system from its command-line spec (or, from Python, an object).

    * ``python:pkg.module:func`` or ``python:path/to/file.py:func`` — a Python callable
      ``func(request: dict) -> dict``, in this process, or with ``isolate`` in worker
      processes (:class:`~queryeval.systems.python.IsolatedPythonSystem`); an ``async def``
      callable is awaited on one event loop, at most ``concurrency`` calls at once (in a
      worker: on the worker's own loop); a file's own folder is importable;
    * ``http://...`` / ``https://...`` — POST the request as JSON, read JSON back;
    * ``cmd:COMMAND ARGS`` — run a process per call, request JSON on stdin, JSON on stdout.
    * not a string: a callable (sync or ``async def``) or an object with ``.call``
      (:mod:`queryeval.systems.callable`); ``object:NAME#TOKEN`` names one registered there.
    """
    if not isinstance(spec, str) or spec.startswith("object:"):
        from queryeval.systems import callable as callable_systems

        if isinstance(spec, str):
            return callable_systems.lookup(spec)
        return callable_systems.as_system(spec, concurrency=concurrency)
    if spec.startswith("python:"):
        from queryeval.systems.python import (
            IsolatedPythonSystem,
            PythonSystem,
            is_async_callable,
            load_callable,
        )

        target = spec[len("python:"):]
        if isolate:
            return IsolatedPythonSystem(target)
        func = load_callable(target)
        if is_async_callable(func):  # a coroutine function: one loop, the limit, timeouts
            from queryeval.systems.callable import CallableSystem

            return CallableSystem(func, name=spec, concurrency=concurrency)
        return PythonSystem(func, name=spec)
    if spec.startswith(("http://", "https://")):
        from queryeval.systems.http import HttpSystem

        return HttpSystem(spec)
    if spec.startswith("cmd:"):
        from queryeval.systems.subprocess import SubprocessSystem

        return SubprocessSystem(spec[len("cmd:"):])
    raise ConfigError(
        f"unknown system {spec!r}: use python:MODULE:FUNC, http(s)://URL or cmd:COMMAND"
    )
