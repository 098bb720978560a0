"""A content-addressed cache of system outputs, shared across runs and suites.

Key: BLAKE2b of the canonical JSON (sorted keys, no spaces, UTF-8) of ``[KEY_FORMAT,
[system name, version], request without "repeat", repeat index]``. The *identity* is explicit (see
docs/repeats.md): ``--system`` plus ``--system-version``, or for a Python callable its
qualified name plus the version the caller gives. A request is everything the system is sent
(task, case id, turn, the conversation so far), so a changed case gets a new key and is
called again; an unchanged one is not.

One file per entry, ``DIR/ab/<hex>.json`` holding ``{"raw": output}``, written to a temporary
file beside it and renamed (:class:`queryeval.io.caches.CacheFiles`, atomic on POSIX): concurrent runs sharing the folder see a whole
entry or none, and two runs writing the same key write the same bytes. Only outputs that the
task accepted are stored: a failed call (an exception, a timeout) or a malformed output is
never cached. A hit refreshes the entry's mtime; :meth:`CallCache.evict` deletes the oldest
entries (LRU by mtime) until the folder is under ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError
from queryeval.io.caches import CacheFiles, canonical_json, read_record, write_record

MARKER = "CACHEDIR.TAG"
"""The file that makes a folder a call cache (the Cache Directory Tagging standard, so backup
tools skip it, plus a queryeval line): written when the cache is created; ``clear``, eviction
and ``info`` refuse a folder without it (docs/repeats.md)."""
MARKER_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
               "# This file marks a queryeval call cache (queryeval run --cache).\n")
_SUBDIR = re.compile(r"[0-9a-f]{2}")
_ENTRY = re.compile(r"[0-9a-f]{62}\.json")
DEFAULT_MAX_MB = 1024.0
_MISS = object()


def default_dir() -> Path:
    """``$QUERYEVAL_CACHE_DIR/calls``, else ``$XDG_CACHE_HOME/queryeval/calls``, else
    ``~/.cache/queryeval/calls``. The variable names the root of every queryeval cache (the
    judge's, the test suite's, embeddings, ... each in its subfolder), so the call cache
    takes a subfolder too: in the root itself, it refused the root once another cache had
    written there (not empty, no marker)."""
    from queryeval.io.caches import cache_dir

    return cache_dir("calls")


def canonical(obj: Any) -> bytes:
    return canonical_json(obj, allow_nan=False)


KEY_FORMAT = "queryeval-call-cache/2"
"""The first item of every key's JSON: keys of another layout never meet these."""


def call_key(identity: str | Sequence[str], request: dict) -> str:
    """The cache key of one call: hex BLAKE2b-256 of the canonical JSON array
    ``[KEY_FORMAT, [name, version], request without "repeat", repeat]``. The identity is a
    structured pair (``system_identity``), never a joined string, so ``("a@b", "c")`` and
    ``("a", "b@c")`` differ."""
    ident = [identity] if isinstance(identity, str) else list(identity)
    body = {k: v for k, v in request.items() if k != "repeat"}
    repeat = request.get("repeat", 0)
    return hashlib.blake2b(canonical([KEY_FORMAT, ident, body, repeat]),
                           digest_size=32).hexdigest()


class CallCache:
    """The cache folder. Thread-safe (entries are whole files); see the module docstring."""

    def __init__(self, folder: str | Path | None = None, *, max_mb: float = DEFAULT_MAX_MB) -> None:
        self.folder = Path(folder).expanduser() if folder else default_dir()
        if self.folder.exists() and not self.folder.is_dir():
            raise ConfigError(f"--cache-dir {self.folder}: a file, not a folder")
        if not max_mb > 0:
            raise ConfigError(f"--cache-max-mb: must be greater than 0, got {max_mb!r}")
        self.max_bytes = int(max_mb * 1024 * 1024)
        self.hits = 0
        self.misses = 0
        self.stored = 0
        self.rejected = 0
        self._lock = threading.Lock()
        self._files = CacheFiles(self.folder, fan_out=True, strip=True)

    def _path(self, key: str) -> Path:
        return self._files.path(key)

    def get(self, key: str) -> Any:
        """The cached output, or :data:`_MISS` (an unreadable entry is a miss)."""
        path = self._path(key)
        doc = read_record(path)
        if doc is None or "raw" not in doc:
            with self._lock:
                self.misses += 1
            return _MISS
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: evicted last
        with self._lock:
            self.hits += 1
        return doc["raw"]

    def reject(self, key: str) -> None:
        """A hit whose output failed the checks: counted as a miss, its file deleted."""
        with contextlib.suppress(OSError):
            self._path(key).unlink()
        with self._lock:
            self.hits -= 1
            self.misses += 1
            self.rejected += 1

    def put(self, key: str, raw: Any) -> bool:
        """Store ``raw`` (atomically); False when it is not JSON or cannot be written (the
        run goes on without caching it)."""
        try:
            data = canonical({"raw": raw})
        except (TypeError, ValueError, RecursionError):
            return False
        try:
            self._files.write(key, data)
        except OSError:
            return False
        with self._lock:
            self.stored += 1
        return True

    def has_marker(self) -> bool:
        """Whether the folder is a call cache: it holds our marker, a regular file (not a
        link) with the queryeval line."""
        path = self.folder / MARKER
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return False
            with path.open("rb") as fh:
                return MARKER_TEXT.encode() in fh.read(4096)
        except OSError:
            return False

    def create(self) -> None:
        """Make the folder a call cache (for a run with ``--cache``): a new or empty folder
        gets the marker; an existing cache is kept; any other folder is refused (ConfigError),
        so that eviction never deletes files of a folder that is not a cache."""
        if self.has_marker():
            return
        if self.folder.is_dir() and any(not (p.name.startswith(".") and p.name.endswith(".tmp"))
                                        for p in self.folder.iterdir()):
            if self.has_marker():  # another run made the cache since the first look (a cache
                return  # writes its marker before any entry: entries seen, its marker is there)
            raise ConfigError(f"--cache-dir {self.folder}: not a queryeval call cache (no "
                              f"{MARKER} marker) and not empty; give a new or empty folder")
        try:
            write_record(self.folder / MARKER, MARKER_TEXT)
        except OSError as exc:
            if self.has_marker():  # another run made it at the same time
                return
            raise ConfigError(f"--cache-dir {self.folder}: cannot create the cache "
                              f"({exc.strerror or exc})") from None

    def require_marker(self) -> None:
        """ConfigError (one line) unless the folder is a call cache; nothing to check when it
        does not exist."""
        if self.folder.exists() and not self.has_marker():
            raise ConfigError(f"--cache-dir {self.folder}: not a queryeval call cache (no "
                              f"{MARKER} marker); nothing was read or deleted")

    def entries(self) -> Iterator[tuple[Path, int, float]]:
        """(path, size, mtime) of every entry: regular files named ``<62 hex>.json`` in
        subfolders named ``<2 hex>``, in a folder carrying the marker; links are never
        followed, other names never touched."""
        if not self.folder.is_dir() or not self.has_marker():
            return
        with contextlib.suppress(OSError), os.scandir(self.folder) as top:
            for sub in top:
                if not _SUBDIR.fullmatch(sub.name) or not sub.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError), os.scandir(sub.path) as files:
                    for f in files:
                        if not _ENTRY.fullmatch(f.name) or not f.is_file(follow_symlinks=False):
                            continue
                        with contextlib.suppress(OSError):
                            st = f.stat(follow_symlinks=False)
                            yield Path(f.path), st.st_size, st.st_mtime

    def info(self) -> dict:
        sizes = [size for _, size, _ in self.entries()]
        return {"folder": str(self.folder), "entries": len(sizes), "bytes": sum(sizes),
                "max_bytes": self.max_bytes}

    def evict(self, max_bytes: int | None = None) -> int:
        """Delete the least recently used entries until the total is at most ``max_bytes``
        (default: the cache's limit); returns the number deleted."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        entries = list(self.entries())
        total = sum(size for _, size, _ in entries)
        deleted = 0
        for path, size, _ in sorted(entries, key=lambda e: e[2]):
            if total <= limit:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                deleted += 1
            total -= size
        return deleted

    def clear(self) -> int:
        """Delete every entry (refused in a folder that is not a call cache)."""
        self.require_marker()
        return self.evict(0)


class CachedSystem:
    """A system behind the cache: a hit returns the stored output without calling it; a miss
    calls it and stores the output once the task accepts it (``task.parse_output``)."""

    def __init__(self, system: Any, cache: CallCache, identity: str | Sequence[str],
                 task: Any) -> None:
        self.system = system
        self.cache = cache
        self.identity = identity
        self.task = task
        self.name = getattr(system, "name", "system")
        cache.create()

    def call(self, request: dict, timeout: float | None) -> Any:
        try:
            key = call_key(self.identity, request)
        except (TypeError, ValueError):
            return self.system.call(request, timeout)
        raw = self.cache.get(key)
        if raw is not _MISS:
            if self._acceptable(raw):
                return raw
            self.cache.reject(key)  # a poisoned or stale entry: deleted, the system called
        raw = self.system.call(request, timeout)  # an error raises: nothing is stored
        try:
            self.task.parse_output(raw)
        except Exception:  # noqa: BLE001 - malformed: the runner reports it; not cached
            return raw
        self.cache.put(key, raw)
        return raw

    def _acceptable(self, raw: Any) -> bool:
        """A cached output passes the checks a fresh one does: the log can store it
        (:func:`queryeval.systems.base.checked_output`: no NaN, no lone surrogate, ...) and
        the task can parse it."""
        from queryeval.systems.base import checked_output

        try:
            checked_output(raw)
            self.task.parse_output(raw)
        except Exception:  # noqa: BLE001 - any refusal makes the entry a miss
            return False
        return True

    def close(self) -> None:
        try:
            self.system.close()
        finally:
            self.cache.evict()
