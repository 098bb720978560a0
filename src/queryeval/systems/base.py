"""The one small protocol every system under test speaks.

A system receives a *request* (a JSON-able dict built by the task: case id, turn, the
conversation so far, task-specific fields) and returns a JSON-able dict (the task validates
its shape). Adapters turn every failure into :class:`~queryeval.errors.SystemCallError` with
a ``kind`` and whether a retry may help; the runner retries, records, and goes on.

Every adapter passes what it returns through :func:`checked_output` (or reads JSON text with
:func:`parse_json`, which checks the same at no cost unless needed): a value the run log
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

from queryeval.errors import SystemCallError

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""Largest answer read from a system, in bytes: an HTTP body (per system:
``HttpSystem(max_response_bytes=...)``) or a recorded response line. A larger one is a
``malformed`` error on its case; the run goes on."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DONE = object()  # on the walk's stack: the container whose id is the key is finished
_NEEDS_WALK = re.compile(rb"\\[uU][dD][89a-fA-F]|[eE][+-]?[0-9]{3}|[0-9]{300}")
"""Text that may parse to a lone surrogate (its escape) or to an infinite float (an exponent
of three digits, or a mantissa of 300: ``1e999`` is ``inf`` without ``parse_constant``)."""


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


_SURROGATE = re.compile(rb"\\[uU][dD][89a-fA-F]|\xed[\xa0-\xbf]")
"""A lone surrogate in JSON text: its escape, or its UTF-8 form (read with surrogatepass)."""


def may_hold_surrogate(raw: bytes) -> bool:
    """Whether JSON text ``raw`` (UTF-8 bytes, decoded with ``surrogatepass`` as
    :func:`queryeval.io.numbers.read_json` decodes them) can parse to text holding a lone
    surrogate, which :func:`checked_output` refuses; False is a proof that it cannot."""
    return _SURROGATE.search(raw) is not None


def parse_json(data: bytes | str, root: str = "output") -> Any:
    """JSON text as a system's output, with :func:`checked_output`'s guarantee at no cost in
    the common case: ``NaN``/``Infinity`` are noticed by the parser itself, a lone surrogate
    needs a ``\\uD8xx``-``\\uDFxx`` escape in the text and an overflowing float a long
    exponent or mantissa (:data:`_NEEDS_WALK`), so only an answer holding one is walked.
    Raises ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError``) for text that is
    not JSON, ``RecursionError`` if nested too deeply."""
    flagged = []

    def constant(name: str) -> float:
        flagged.append(name)
        return float(name)

    value = json.loads(data, parse_constant=constant)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if flagged or _NEEDS_WALK.search(raw):
        return checked_output(value, root)
    return value


def _problem(item: Any) -> str | None:
    """What makes a leaf unstorable, or None (the slow path: types other than the JSON ones)."""
    if isinstance(item, str):
        return _bad_text(item)
    if isinstance(item, numbers.Real) and not isinstance(item, numbers.Integral):
        try:
            if not math.isfinite(item):
                return f"{_non_finite(float(item))} is not a finite number"
        except (TypeError, ValueError, OverflowError):
            pass  # an odd Real: the task's validation decides
    return None


def checked_output(value: Any, root: str = "output") -> Any:
    """``value`` itself if the run log can store it; else :class:`SystemCallError`
    (``malformed``, not retried) naming the first bad place, e.g.
    ``output.scores[2]: NaN is not a finite number``.

    Walks dicts, lists and tuples without recursion (no depth limit to hit), building a
    place's path only for the error; types other than JSON's are left to the task's own
    validation. (JSON text is better read with :func:`parse_json`, which needs no walk.)"""
    nodes: list[tuple[int, Any]] = []  # container -> (its parent container, its key there)
    stack: list[tuple[Any, int, Any]] = [(value, -1, None)]  # (item, parent container, key)
    open_ids: set[int] = set()  # containers being walked: one met again holds itself
    isfinite = math.isfinite

    def where(parent: int, key: Any) -> str:
        """The path of the item at ``key`` in container ``parent`` (-1: the root itself)."""
        keys = []
        while parent >= 0:
            keys.append(key)
            parent, key = nodes[parent]
        path = root
        for k in reversed(keys):
            path = _step(path, k)
        return path

    while stack:
        item, parent, key = stack.pop()
        kind = type(item)
        if kind is str:
            if item.isascii() or (problem := _bad_text(item)) is None:
                continue
        elif kind is float:
            if isfinite(item):
                continue
            problem = f"{_non_finite(item)} is not a finite number"
        elif kind is int or kind is bool or item is None:
            continue
        elif item is _DONE:
            open_ids.discard(key)
            continue
        elif isinstance(item, (dict, list, tuple)):
            ident = id(item)
            if ident in open_ids:
                problem = "the value contains itself"
            else:
                open_ids.add(ident)
                stack.append((_DONE, -1, ident))
                nodes.append((parent, key))
                node = len(nodes) - 1
                if isinstance(item, dict):
                    for k, child in item.items():
                        if type(k) is str and not k.isascii() and (bad := _bad_text(k)):
                            raise SystemCallError("malformed", f"{where(node, k)}: key {bad}")
                        stack.append((child, node, k))
                else:
                    stack.extend((child, node, i) for i, child in enumerate(item))
                continue
        else:
            problem = _problem(item)
            if problem is None:
                continue
        raise SystemCallError("malformed", f"{where(parent, key)}: {problem}")
    return value


@runtime_checkable
class System(Protocol):
    """What the runner calls. ``timeout`` is the per-call limit in seconds (None: no limit)."""

    name: str

    def call(self, request: dict[str, Any], timeout: float | None) -> Any: ...

    def close(self) -> None: ...
