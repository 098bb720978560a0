"""The one small protocol every system under test speaks.

A system receives a *request* (a JSON-able dict built by the task: case id, turn, the
conversation so far, task-specific fields) and returns a JSON-able dict (the task validates
its shape). Adapters turn every failure into :class:`~queryeval.errors.SystemCallError` with
a ``kind`` and whether a retry may help; the runner retries, records, and goes on.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from queryeval.errors import ConfigError


@runtime_checkable
class System(Protocol):
    """What the runner calls. ``timeout`` is the per-call limit in seconds (None: no limit)."""

    name: str

    def call(self, request: dict[str, Any], timeout: float | None) -> Any: ...

    def close(self) -> None: ...


def make_system(spec: str | Any) -> System:
    """Build a system from its command-line spec (or, from Python, an object).

    * ``python:pkg.module:func`` or ``python:path/to/file.py:func`` — a Python callable
      ``func(request: dict) -> dict``;
    * ``http://...`` / ``https://...`` — POST the request as JSON, read JSON back;
    * ``cmd:COMMAND ARGS`` — run a process per call, request JSON on stdin, JSON on stdout.
    * not a string: a callable (sync or ``async def``) or an object with ``.call``
      (:mod:`queryeval.systems.callable`); ``object:NAME#TOKEN`` names one registered there.
    """
    if not isinstance(spec, str) or spec.startswith("object:"):
        from queryeval.systems import callable as callable_systems

        if isinstance(spec, str):
            return callable_systems.lookup(spec)
        return callable_systems.as_system(spec)
    if spec.startswith("python:"):
        from queryeval.systems.python import PythonSystem

        return PythonSystem.from_spec(spec[len("python:"):])
    if spec.startswith(("http://", "https://")):
        from queryeval.systems.http import HttpSystem

        return HttpSystem(spec)
    if spec.startswith("cmd:"):
        from queryeval.systems.subprocess import SubprocessSystem

        return SubprocessSystem(spec[len("cmd:"):])
    raise ConfigError(
        f"unknown system {spec!r}: use python:MODULE:FUNC, http(s)://URL or cmd:COMMAND"
    )
