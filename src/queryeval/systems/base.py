"""The one small protocol every system under test speaks.

A system receives a *request* (a JSON-able dict built by the task: case id, turn, the
conversation so far, task-specific fields) and returns a JSON-able dict (the task validates
its shape). Adapters turn every failure into :class:`~queryeval.errors.SystemCallError` with
a ``kind`` and whether a retry may help; the runner retries, records, and goes on.

Every adapter passes what it returns through :func:`checked_output`: a value the run log
cannot store as JSON (a NaN or infinite number, which Python's ``json.loads`` accepts and a
Python callable can return; text holding a lone surrogate; a container that holds itself) is
a ``malformed`` output of that case, never written to the log.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any, Protocol, runtime_checkable

from queryeval.errors import ConfigError, SystemCallError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _step(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if isinstance(key, str) and _NAME.match(key):
        return f"{path}.{key}"
    text = json.dumps(key if isinstance(key, str) else repr(key))  # ASCII, quoted: printable
    return f"{path}[{text[:40] + '...' if len(text) > 40 else text}]"


def _bad_text(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"text holds a lone surrogate {text[exc.start]!a}, which is not a character"
    return None


def _non_finite(x: float) -> str:
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def checked_output(value: Any, root: str = "output") -> Any:
    """``value`` itself if the run log can store it; else :class:`SystemCallError`
    (``malformed``, not retried) naming the first bad place, e.g.
    ``output.scores[2]: NaN is not a finite number``.

    Walks dicts, lists and tuples without recursion (no depth limit to hit); other types are
    left to the task's own output validation."""
    stack: list[tuple[Any, str | None]] = [(value, root)]
    open_ids: set[int] = set()  # containers being walked: one met again holds itself
    while stack:
        item, path = stack.pop()
        if path is None:  # done with this container
            open_ids.discard(item)
            continue
        problem = None
        if isinstance(item, float) or (isinstance(item, numbers.Real)
                                       and not isinstance(item, numbers.Integral)):
            try:
                if not math.isfinite(item):
                    problem = f"{_non_finite(float(item))} is not a finite number"
            except (TypeError, ValueError, OverflowError):
                pass  # an odd Real: the task's validation decides
        elif isinstance(item, str):
            problem = _bad_text(item)
        elif isinstance(item, (dict, list, tuple)):
            if id(item) in open_ids:
                problem = "the value contains itself"
            else:
                open_ids.add(id(item))
                stack.append((id(item), None))
                pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
                for key, _ in pairs:
                    if isinstance(key, str) and (bad := _bad_text(key)):
                        raise SystemCallError("malformed", f"{_step(path, key)}: key {bad}")
                stack.extend((child, _step(path, key)) for key, child in reversed(pairs))
        if problem:
            raise SystemCallError("malformed", f"{path}: {problem}")
    return value


@runtime_checkable
class System(Protocol):
    """What the runner calls. ``timeout`` is the per-call limit in seconds (None: no limit)."""

    name: str

    def call(self, request: dict[str, Any], timeout: float | None) -> Any: ...

    def close(self) -> None: ...


def make_system(spec: str, *, isolate: bool = False) -> System:
    """Build a system from its command-line spec.

    * ``python:pkg.module:func`` or ``python:path/to/file.py:func`` — a Python callable
      ``func(request: dict) -> dict``, in this process, or with ``isolate`` in worker
      processes (:class:`~queryeval.systems.python.IsolatedPythonSystem`);
    * ``http://...`` / ``https://...`` — POST the request as JSON, read JSON back;
    * ``cmd:COMMAND ARGS`` — run a process per call, request JSON on stdin, JSON on stdout.
    """
    if spec.startswith("python:"):
        from queryeval.systems.python import IsolatedPythonSystem, PythonSystem

        if isolate:
            return IsolatedPythonSystem(spec[len("python:"):])
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
