"""One process per batch: an OS file lock (``fcntl.flock``) on ``.batch_<id>.lock`` beside
the batch file, held from the start (or resume) of a run until its reports are written.

The kernel drops the lock when its holder exits, however it exits (kill -9 included), so a
stale lock file never blocks a resume; the file's text (pid, host, start time) only names the
holder in the error a second process gets.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError, OutputError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking
    fcntl = None  # type: ignore[assignment]


class BatchLock:
    def __init__(self, batch_file: Path) -> None:
        self.batch_file = batch_file
        self.path = batch_file.with_name(f".{batch_file.stem}.lock")
        self._fd: int | None = None

    def acquire(self) -> BatchLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)  # less the umask, like every run file
        except OSError as exc:
            raise OutputError.from_os(self.path, exc) from None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise ConfigError(f"{self.batch_file}: in use by another queryeval run "
                                  f"({holder}); wait for it to end") from None
            except OSError as exc:
                os.close(fd)
                raise OutputError.from_os(self.path, exc, action="lock") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": dt.datetime.now().isoformat(timespec="seconds")}
        with contextlib.suppress(OSError):  # the lock holds even if its label cannot be written
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> BatchLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "holder unknown"
    return f"pid {info.get('pid')} on {info.get('host')}, started {info.get('started')}"
