"""Atomic file writes: write a temporary file beside the target, fsync, then rename.

A reader never sees a half-written file, and a crash leaves the previous version intact.
The file gets the mode a plain ``open(path, "w")`` would give it, ``0o666 & ~umask``
(``mkstemp`` alone would leave it ``0o600``, unreadable to the user's group).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux ``/proc``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere: set and restore it (the lock keeps our threads consistent)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path, *, fsync: bool = True,
                mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path`` atomically. The file
    gets ``mode``, or by default what ``open(path, "w")`` would give it.

    ``fsync`` False skips flushing the file to disk before the rename: for a cache entry,
    whose loss or truncation by a power cut is a miss (:mod:`queryeval.io.caches`), never a
    wrong read, and which is written once per call."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, (0o666 & ~current_umask()) if mode is None else mode)
    finally:
        os.close(fd)
    tmp_path = Path(tmp)
    replaced = False
    try:
        yield tmp_path
        if fsync:
            with open(tmp_path, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp_path, path)
        replaced = True
    finally:
        if not replaced:
            with contextlib.suppress(FileNotFoundError):
                tmp_path.unlink()


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open a temporary file for writing; it replaces ``path`` when the block succeeds."""
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_open(path, "w", newline="") as fh:
        fh.write(text)


def write_bytes_atomic(path: str | Path, data: bytes, *, fsync: bool = True,
                       mode: int | None = None) -> None:
    with atomic_path(path, fsync=fsync, mode=mode) as tmp:
        tmp.write_bytes(data)
