"""Writing output files: an ``OSError`` becomes one :class:`OutputError` line naming the file,
and what the failed writer left open is released in silence."""

from __future__ import annotations

import contextlib
import gc
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from queryeval.errors import OutputError


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn an ``OSError`` raised while writing ``path`` into one :class:`OutputError` line."""
    try:
        yield
    except OSError as exc:
        error = OutputError.from_os(path, exc)
        release_quietly(exc)
        raise error from None


def release_quietly(exc: BaseException) -> None:
    """Free what a failed writer left open, now and in silence.

    A full disk makes openpyxl's ``save`` fail with its ``ZipFile`` still open; when the
    traceback that holds it is freed, ``ZipFile.__del__`` flushes into the same full disk and
    Python prints "Exception ignored in ..." with a traceback after the one clean line. The
    traceback's frames are cleared here (running those finalizers at once) with OS errors in
    finalizers ignored; any other unraisable error still reaches the usual hook."""
    hook = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, OSError):
            hook(unraisable)

    sys.unraisablehook = quiet
    try:
        tb = exc.__traceback__
        exc.__traceback__ = None
        if tb is not None:
            traceback.clear_frames(tb)
        del tb
        gc.collect()
    finally:
        sys.unraisablehook = hook
