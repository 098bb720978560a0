"""The one root of every queryeval cache on disk.

``$QUERYEVAL_CACHE_DIR`` when it is set, else ``$XDG_CACHE_HOME/queryeval``, else
``~/.cache/queryeval`` — always absolute and the same from every folder, so a cache filled by
a command run in one folder (a judge-check, embeddings, a SPARQL store, test-suite
neighbours) is found by a command run in another. Each cache is a subfolder named after
what it holds (:data:`NAMES`); ``queryeval cache`` manages the call cache's.

Every cache reads and writes its files through this module: a key is the hex digest of a
canonical JSON (:func:`canonical_json`) and names one file (:class:`CacheFiles`) or one
folder; a file is written with :mod:`queryeval.io.atomic` (temporary file beside it, then
renamed), so a reader sees a whole entry or none; a record that cannot be read (absent,
truncated, not JSON, not a JSON object) is a miss (:func:`read_record`), never an error, and
the next good write replaces it. What is in a key -- a format version, the inputs -- is each
cache's own, so an entry written by an older layout is never read as a newer one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from queryeval.io.atomic import write_bytes_atomic

ENV_DIR = "QUERYEVAL_CACHE_DIR"

NAMES = ("calls", "judge", "judge-checks", "embeddings", "oxigraph", "testsuite", "reformat",
         "audit")
"""The subfolders of the root, one per cache."""


def cache_root() -> Path:
    """The root of queryeval's caches (module docstring), absolute."""
    base = os.environ.get(ENV_DIR)
    if base:
        return Path(base).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache").absolute() / "queryeval"


def cache_dir(name: str) -> Path:
    """The folder of one cache under :func:`cache_root` (``name``: one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"unknown cache {name!r}; one of {', '.join(NAMES)}")
    return cache_root() / name


def canonical_json(obj: Any, *, ensure_ascii: bool = False, allow_nan: bool = True) -> bytes:
    """The JSON of ``obj`` with sorted keys and no spaces, UTF-8: the text a key hashes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=ensure_ascii,
                      allow_nan=allow_nan).encode("utf-8")


def read_record(path: str | Path) -> dict | None:
    """The JSON object stored at ``path``, or None: absent, unreadable, not UTF-8 JSON or not
    an object -- a miss, never an error."""
    try:
        doc = json.loads(Path(path).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


CACHE_FILE_MODE = 0o600
"""Cache files are readable by their owner only: they hold the system's and the judge's
answers, prompts included, which may be private data."""


def write_record(path: str | Path, data: bytes | str, *, fsync: bool = False) -> None:
    """Write one cache file atomically (its folder made if needed), mode
    :data:`CACHE_FILE_MODE`; raises OSError. ``fsync`` False by default: a power cut may lose
    the entry, which is then a miss."""
    write_bytes_atomic(path, data.encode("utf-8") if isinstance(data, str) else data,
                       fsync=fsync, mode=CACHE_FILE_MODE)


class CacheFiles:
    """One file per key under ``root``: ``root/<key><suffix>``, or with ``fan_out``
    ``root/<key[:2]>/<name><suffix>``, ``name`` the key without its first two characters
    when ``strip`` (the call cache's layout) or the whole key (the audit cache's)."""

    def __init__(self, root: Path, *, fan_out: bool = False, strip: bool = False,
                 suffix: str = ".json", fsync: bool = False) -> None:
        self.root = root
        self.fan_out = fan_out
        self.strip = strip
        self.suffix = suffix
        self.fsync = fsync

    def path(self, key: str) -> Path:
        if not self.fan_out:
            return self.root / f"{key}{self.suffix}"
        return self.root / key[:2] / f"{key[2:] if self.strip else key}{self.suffix}"

    def read(self, key: str) -> dict | None:
        """The record of ``key``, or None (:func:`read_record`)."""
        return read_record(self.path(key))

    def write(self, key: str, data: bytes | str) -> None:
        """Store ``data`` under ``key`` atomically; raises OSError."""
        write_record(self.path(key), data, fsync=self.fsync)
