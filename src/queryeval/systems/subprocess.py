"""A command as the system under test: one process per call, JSON in on stdin, JSON out.

A process that runs past the timeout is killed (retryable); a non-zero exit is retryable
(the process may have crashed transiently); stdout that is not JSON, or larger than
``max_output_bytes`` (default :data:`MAX_OUTPUT_BYTES`, the HTTP adapter's limit), is recorded
as malformed.

Each call's process starts in a session (and process group) of its own, and the whole group
is killed (SIGKILL, :func:`queryeval.engines.worker.kill_group`, the isolated Python
system's kill too) when the call ends: on timeout, once stdout is too large, and once the
command itself has exited. So a grandchild (``sh -c "server & echo {...}"``) neither outlives
the call nor, by holding stdout open, makes the call wait for it; the timeout is a deadline for
the whole call, pipes included. A descendant that leaves the group on purpose (``setsid``)
is out of reach: the call stops reading its pipes :data:`DRAIN_SECONDS` after the command
exits. Standard error is kept up to ``max_stderr_bytes`` (default :data:`MAX_STDERR_BYTES`,
the last bytes written: that is where the error is); the rest is read and dropped, so a
chatty process neither blocks on a full pipe nor fills memory.

POSIX only (process groups, ``selectors`` on pipes).
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from queryeval.engines.worker import kill_group
from queryeval.errors import ConfigError, SystemCallError
from queryeval.systems.base import parse_json

MAX_OUTPUT_BYTES = 64 * 1024 * 1024
"""Largest stdout accepted as an answer, in bytes (per system: ``max_output_bytes``)."""
MAX_STDERR_BYTES = 64 * 1024
"""Standard error kept per call, in bytes (the last ones; per system: ``max_stderr_bytes``)."""
DRAIN_SECONDS = 0.5
"""After the command exits and its group is killed, how long its pipes may stay open."""
_CHUNK = 64 * 1024


@dataclass
class ProcessResult:
    returncode: int | None
    """The exit status (negative: killed by that signal); None if still running when cut off."""
    stdout: bytes
    stderr: bytes
    """The last ``max_stderr`` bytes written to standard error."""
    stderr_total: int
    """Bytes written to standard error in all (read and counted, not kept)."""
    pgid: int
    timed_out: bool = False
    stdout_overflow: bool = False


def run_process(argv: list[str], payload: bytes, timeout: float | None, *,
                max_stdout: int = MAX_OUTPUT_BYTES,
                max_stderr: int = MAX_STDERR_BYTES) -> ProcessResult:
    """Run ``argv`` in a new session with ``payload`` on stdin; read stdout (at most
    ``max_stdout`` bytes) and the tail of stderr until the command exits or ``timeout``
    seconds pass, then kill its process group. Raises ``OSError`` if it cannot start."""
    end = None if timeout is None else time.monotonic() + timeout
    proc = subprocess.Popen(  # noqa: S603 - the user's own command
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    pgid = proc.pid  # a session leader's group id is its pid
    out = bytearray()
    err = bytearray()
    err_total = 0
    timed_out = overflow = False
    sel = selectors.DefaultSelector()
    try:
        if proc.stdin is None or proc.stdout is None or proc.stderr is None:  # pragma: no cover
            raise OSError("no pipes to the process")
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        if payload:
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        view = memoryview(payload)
        drain_end: float | None = None  # set once the command has exited
        while True:
            now = time.monotonic()
            exited = proc.poll() is not None
            if exited and not sel.get_map():
                break
            if end is not None and now >= end:
                timed_out = not exited
                break
            if exited and drain_end is None:
                kill_group(pgid)  # the command is done: end whatever it left behind
                drain_end = now + DRAIN_SECONDS
            if drain_end is not None and now >= drain_end:
                break
            if not sel.get_map():  # pipes closed, the command still running: wait for it
                try:
                    proc.wait(None if end is None else end - now)
                except subprocess.TimeoutExpired:
                    pass
                continue
            wait = 0.05 if drain_end is None else drain_end - now  # poll for the exit
            if end is not None:
                wait = min(wait, end - now)
            for key, _ in sel.select(max(0.0, wait)):
                fobj = key.fileobj
                if fobj is proc.stdin:
                    try:
                        sent = os.write(proc.stdin.fileno(), view[:_CHUNK])
                    except BrokenPipeError:
                        sent = len(view)  # it stopped reading: the rest is not wanted
                    except BlockingIOError:
                        continue
                    view = view[sent:]
                    if not view:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                try:
                    data = os.read(fobj.fileno(), _CHUNK)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(fobj)
                    continue
                if fobj is proc.stdout:
                    out += data
                    if len(out) > max_stdout:
                        overflow = True
                        break
                else:
                    err_total += len(data)
                    if max_stderr:
                        err += data
                    if len(err) > 2 * max_stderr:
                        del err[:-max_stderr]
            if overflow:
                break
    finally:
        sel.close()
        kill_group(pgid)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # unkillable (uninterruptible sleep): leave it
            pass
    kept = bytes(err[-max_stderr:]) if max_stderr else b""
    return ProcessResult(proc.returncode, bytes(out), kept, err_total, pgid, timed_out, overflow)


class SubprocessSystem:
    def __init__(self, command: str, *, max_output_bytes: int | None = None,
                 max_stderr_bytes: int | None = None) -> None:
        self.max_output_bytes = MAX_OUTPUT_BYTES if max_output_bytes is None else max_output_bytes
        self.max_stderr_bytes = MAX_STDERR_BYTES if max_stderr_bytes is None else max_stderr_bytes
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
            proc = run_process(self.argv, payload, timeout, max_stdout=self.max_output_bytes,
                               max_stderr=self.max_stderr_bytes)
        except OSError as exc:
            raise SystemCallError("process", f"cannot start {self.argv[0]!r}: {exc}") from None
        if proc.timed_out:
            raise SystemCallError("timeout", f"process group killed after {timeout:g}s",
                                  retryable=True)
        if proc.stdout_overflow:
            raise SystemCallError("malformed", f"output larger than {self.max_output_bytes} bytes")
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise SystemCallError(
                "process", f"exit code {proc.returncode}: {tail[0][-200:]!r}", retryable=True,
            )
        try:
            return parse_json(proc.stdout)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SystemCallError("malformed", f"stdout is not JSON: {exc}") from None
        except RecursionError:
            raise SystemCallError("malformed", "stdout is not JSON: nested too deeply") from None

    def close(self) -> None:
        pass
