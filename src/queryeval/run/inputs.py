"""The input files of a run, pinned by content hash when it starts and checked on resume.

A resumed run must read what the interrupted one read: the suite, the recorded responses,
the labels, the database or graph (given as an option or named by the cases), the corpus, the
data table, the tuning file, the answers' table folder. Each is hashed (BLAKE2b, streamed in 1 MiB blocks, so memory stays flat) into
the batch's ``inputs``; on resume a changed or missing file is named in one line.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

BLOCK = 1 << 20

PATH_OPTIONS = ("tables", "corpus", "source", "data", "tuning")
"""Task options naming input files or folders (``source`` may list several, comma-separated,
or be an endpoint URL, which has no file to pin). Models are not pinned: a local model folder
is large and read-only in practice; caches (``cache_dir``, ``store_dir``) are outputs."""

DIR_OPTIONS = ("store_dir", "cache_dir")
"""Task options naming folders a run writes to."""


def hash_file(path: str | Path) -> str:
    """``blake2b:<hex>`` of the file's bytes, read in blocks."""
    h = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            h.update(block)
    return "blake2b:" + h.hexdigest()


def _expand(path: Path) -> Iterator[Path]:
    if path.is_dir():
        yield from sorted(p for p in path.rglob("*") if p.is_file())
    elif path.is_file():
        yield path


def input_paths(suite_files: Iterable[str | Path], responses: str | None, labels: str | None,
                task_options: dict[str, Any], extra: Iterable[str] = ()) -> list[Path]:
    """Every input file of a run, absolute, each once, in a stable order; ``extra``: files the
    task itself read (the graphs and databases a query suite's cases name)."""
    named: list[str] = [str(p) for p in suite_files]
    named += [p for p in (responses, labels) if p]
    for key in PATH_OPTIONS:
        value = task_options.get(key)
        if isinstance(value, str) and value:
            named += [part for part in value.split(",") if part and "://" not in part]
    named += list(extra)
    seen: dict[Path, None] = {}
    for name in named:
        for p in _expand(Path(name)):
            seen.setdefault(p.resolve(), None)
    return list(seen)


def pin(paths: Iterable[Path]) -> dict[str, dict]:
    """``{path: {"hash": ..., "size": ...}}`` for the batch file."""
    return {str(p): {"hash": hash_file(p), "size": p.stat().st_size} for p in paths}


def changed(pins: dict[str, dict]) -> list[tuple[str, str, str | None]]:
    """The pinned files that differ now: ``(path, pinned hash, current hash or None if gone)``.

    A file whose size changed is reported without reading it; otherwise it is hashed again."""
    out = []
    for name, info in pins.items():
        try:
            size = os.stat(name).st_size
            now = hash_file(name) if size == info.get("size") else f"size {size}"
        except OSError:
            now = None
        if now != info.get("hash"):
            out.append((name, str(info.get("hash")), now))
    return out
