"""A command as the system under test: one process per call, JSON in on stdin, JSON out.

A process that runs past the timeout is killed (retryable); a non-zero exit is retryable
(the process may have crashed transiently); stdout that is not JSON, or larger than
``max_output_bytes`` (default :data:`MAX_OUTPUT_BYTES`, the HTTP adapter's limit), is recorded
as malformed.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

from queryeval.errors import ConfigError, SystemCallError

MAX_OUTPUT_BYTES = 64 * 1024 * 1024
"""Largest stdout accepted as an answer, in bytes (per system: ``max_output_bytes``)."""


class SubprocessSystem:
    def __init__(self, command: str, *, max_output_bytes: int | None = None) -> None:
        self.max_output_bytes = MAX_OUTPUT_BYTES if max_output_bytes is None else max_output_bytes
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"cannot parse system command {command!r}: {exc}") from None
        if not self.argv:
            raise ConfigError("cmd: system needs a command")
        self.name = f"cmd:{command}"

    def call(self, request: dict, timeout: float | None) -> Any:
        payload = json.dumps(request, ensure_ascii=False).encode("utf-8")
        try:
            proc = subprocess.run(  # noqa: S603 - the user's own command
                self.argv, input=payload, capture_output=True, timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            raise SystemCallError("timeout", f"process killed after {timeout:g}s", retryable=True) from None
        except OSError as exc:
            raise SystemCallError("process", f"cannot start {self.argv[0]!r}: {exc}") from None
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise SystemCallError(
                "process", f"exit code {proc.returncode}: {tail[0][:200]}", retryable=True,
            )
        if len(proc.stdout) > self.max_output_bytes:
            raise SystemCallError("malformed", f"output larger than {self.max_output_bytes} bytes")
        try:
            return json.loads(proc.stdout)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SystemCallError("malformed", f"stdout is not JSON: {exc}") from None

    def close(self) -> None:
        pass
