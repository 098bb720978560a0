"""A system from its spec, looked up by the spec's scheme (``python``, ``http``/``https``,
``cmd``, ``object`` or one registered in :data:`queryeval.registry.SYSTEMS`): the built-in
kinds are defined here, so the adapters import :mod:`queryeval.systems.base` and nothing
imports them back."""

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
      (:mod:`queryeval.systems.callable`); ``object:NAME#TOKEN`` names one registered there;
    * ``NAME:...`` — a kind registered with :func:`queryeval.registry.register_system` or an
      entry point of the group ``queryeval.systems``: ``build(spec, *, isolate, concurrency)``.
    """
    if not isinstance(spec, str):
        from queryeval.systems import callable as callable_systems

        return callable_systems.as_system(spec, concurrency=concurrency)
    from queryeval.registry import SYSTEMS

    scheme, sep, _ = spec.partition(":")
    if sep and scheme in SYSTEMS:
        return SYSTEMS.get(scheme)(spec, isolate=isolate, concurrency=concurrency)
    extra = [f"{name}:..." for name in SYSTEMS.in_order() if name not in SYSTEMS.builtins]
    raise ConfigError(
        f"unknown system {spec!r}: use python:MODULE:FUNC, http(s)://URL or cmd:COMMAND"
        + (f" (or {', '.join(extra)})" if extra else "")
    )


# --- the built-in kinds, registered in queryeval.registry.SYSTEMS by their spec's scheme ----
def python_system(spec: str, *, isolate: bool = False, concurrency: int = 4) -> System:
    """``python:pkg.module:func`` or ``python:path/to/file.py:func``."""
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


def http_system(spec: str, *, isolate: bool = False, concurrency: int = 4) -> System:
    """``http://...`` / ``https://...``: POST the request as JSON, read JSON back."""
    from queryeval.systems.http import HttpSystem

    return HttpSystem(spec)


def cmd_system(spec: str, *, isolate: bool = False, concurrency: int = 4) -> System:
    """``cmd:COMMAND ARGS``: a process per call, request JSON on stdin, JSON on stdout."""
    from queryeval.systems.subprocess import SubprocessSystem

    return SubprocessSystem(spec[len("cmd:"):])


def object_system(spec: str, *, isolate: bool = False, concurrency: int = 4) -> System:
    """``object:NAME#TOKEN``: a Python object registered in :mod:`queryeval.systems.callable`."""
    from queryeval.systems import callable as callable_systems

    return callable_systems.lookup(spec)
