"""A Python callable as the system under test: ``python:pkg.module:func``.

The callable runs in a daemon thread so the per-call timeout holds even for code that never
returns (Python cannot kill a thread: a timed-out call is abandoned, recorded as a timeout,
and the run goes on). ``TimeoutError``/``ConnectionError`` raised by the callable are treated
as transient and retried; any other exception is recorded without retry.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError, SystemCallError


def _load_callable(spec: str) -> Callable[[dict], Any]:
    target, sep, func_name = spec.rpartition(":")
    if not sep or not target or not func_name:
        raise ConfigError(f"python system must be python:MODULE:FUNC, got python:{spec}")
    try:
        if target.endswith(".py") or os.sep in target or "/" in target:
            path = Path(target).resolve()
            if not path.is_file():
                raise ConfigError(f"python system file not found: {target}")
            mod_name = f"_queryeval_system_{abs(hash(str(path)))}"
            module_spec = importlib.util.spec_from_file_location(mod_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ConfigError(f"cannot import {target}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[mod_name] = module
            module_spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
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

    @classmethod
    def from_spec(cls, spec: str) -> PythonSystem:
        return cls(_load_callable(spec), name=f"python:{spec}")

    def call(self, request: dict, timeout: float | None) -> Any:
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
            exc = box["error"]
            transient = isinstance(exc, (TimeoutError, ConnectionError))
            kind = "timeout" if isinstance(exc, TimeoutError) else "exception"
            raise SystemCallError(kind, f"{type(exc).__name__}: {exc}", retryable=transient)
        return box.get("value")

    def close(self) -> None:
        pass
