"""A command as the system under test: one process per call, JSON in on stdin, JSON out.

A process that runs past the timeout is killed (retryable); a non-zero exit is retryable
(the process may have crashed transiently); stdout that is not JSON is recorded as malformed.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

from queryeval.errors import ConfigError, SystemCallError


class SubprocessSystem:
    def __init__(self, command: str) -> None:
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
        try:
            return json.loads(proc.stdout)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SystemCallError("malformed", f"stdout is not JSON: {exc}") from None

    def close(self) -> None:
        pass
