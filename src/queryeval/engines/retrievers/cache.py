"""On-disk cache of text embeddings, keyed by model, prefix, normalisation and content.

Layout (under the cache root, by default ``embeddings`` under
:func:`queryeval.io.caches.cache_root`)::

    <root>/<space>/space.json                    the key of this space, human-readable
    <root>/<space>/<shard>.vectors.npy           float32 (rows, dim)
    <root>/<space>/<shard>.hashes.npy            |S64 (rows,) sha256 hex of each text

A *space* is one (model fingerprint, prefix, normalisation, ...) combination; its folder
name is the sha256 of the canonical JSON of that key, so changing any of them starts from
an empty space and never mixes vectors. Within a space a text is found by the sha256 of its
UTF-8 content (without the prefix, which is part of the space key).

Writes never modify a file: every ``put`` writes a new shard, vectors first and the hashes
file last, each to a temporary name and then ``os.replace``-d into place
(:mod:`queryeval.io.atomic`; atomic on POSIX and Windows). A shard exists for readers only once its hashes file does, so a reader never
sees a partial shard. Two processes sharing the folder may both embed the same new text and
write it twice (harmless: the first shard found wins). When a space holds more than
``max_shards`` shards, ``put`` merges them into one new shard and then deletes the old ones;
a reader that listed a shard deleted meanwhile treats its texts as misses (they are embedded
again), so concurrent use costs at worst duplicate work, never a wrong or corrupt read. A
file that cannot be read (truncated by a crash of something else, foreign) is skipped the
same way.

Whole-corpus matrices (:func:`write_matrix`, :func:`load_matrix`)::

    <root>/matrices/<key id>.npy                  float32 (n_chunks, dim), memory-mapped
    <root>/matrices/<key id>.json                 its key: the space key + corpus fingerprint

A streamed index (``DenseRetriever.index_corpus``) stores the corpus's vectors in corpus
order under a key that adds the corpus's content fingerprint to the space key, so a rerun on
the same corpus maps the file and encodes nothing (the model is not even loaded), and a
changed corpus gets a new matrix whose unchanged texts still come from the per-text shards.
"""


from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from queryeval.io.atomic import atomic_path
from queryeval.io.caches import canonical_json, write_record

__all__ = ["CacheSpace", "EmbeddingCache", "default_cache_dir", "load_matrix", "matrix_path",
           "text_hash", "write_matrix"]

_HASHES = ".hashes.npy"
_VECTORS = ".vectors.npy"


def default_cache_dir() -> Path:
    """``embeddings`` under the root of every queryeval cache
    (:func:`queryeval.io.caches.cache_root`)."""
    from queryeval.io.caches import cache_dir

    return cache_dir("embeddings")


def text_hash(text: str) -> str:
    """sha256 hex digest of the UTF-8 text (surrogates escaped rather than failing)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _atomic_save(path: Path, array: np.ndarray) -> None:
    with atomic_path(path) as tmp, tmp.open("wb") as f:
        np.save(f, array, allow_pickle=False)


def _write_key(path: Path, key: Mapping[str, Any]) -> None:
    """A key beside its data, readable (indented JSON)."""
    write_record(path, json.dumps(dict(key), indent=2, sort_keys=True))


class CacheSpace:
    """The vectors of one model/prefix/normalisation combination."""

    def __init__(self, path: Path, key: Mapping[str, Any], *, max_shards: int = 32) -> None:
        self.path = path
        self.key = dict(key)
        self.max_shards = max_shards
        self._index: dict[str, tuple[str, int]] = {}
        self._shards: set[str] = set()
        self._bad: set[str] = set()  # shards whose files could not be read: skipped
        self._dim: int | None = None

    # -- reading -----------------------------------------------------------------------
    def _shard_names(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(p.name[: -len(_HASHES)] for p in self.path.glob(f"*{_HASHES}")
                      if not p.name.startswith("."))

    def refresh(self) -> None:
        """Pick up shards written since the last look (by this or another process)."""
        names = self._shard_names()
        current = set(names)
        gone = self._shards - current
        if gone:
            self._index = {h: loc for h, loc in self._index.items() if loc[0] not in gone}
            self._shards -= gone
        for name in names:
            if name in self._shards or name in self._bad:
                continue
            try:
                hashes = np.load(self.path / f"{name}{_HASHES}", allow_pickle=False)
            except FileNotFoundError:
                continue  # deleted meanwhile by a compaction
            except (OSError, ValueError, EOFError):
                self._bad.add(name)  # not a file we wrote: ignore it
                continue
            if hashes.ndim != 1 or hashes.dtype != np.dtype("S64"):
                self._bad.add(name)
                continue
            self._shards.add(name)
            for row, h in enumerate(hashes.tolist()):
                self._index.setdefault(h.decode("ascii"), (name, row))

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, h: str) -> bool:
        return h in self._index

    def _read_rows(self, name: str, rows: list[int]) -> np.ndarray | None:
        try:
            vecs = np.load(self.path / f"{name}{_VECTORS}", mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        if vecs.ndim != 2 or vecs.dtype != np.float32 or max(rows) >= vecs.shape[0]:
            return None
        if self._dim is not None and vecs.shape[1] != self._dim:
            return None
        return np.array(vecs[rows], dtype=np.float32)

    def get(self, hashes: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """``(found, vectors)``: a bool mask over ``hashes`` and the found rows, in order.

        ``vectors`` is ``None`` when nothing was found.
        """
        found = np.zeros(len(hashes), dtype=bool)
        if not hashes:
            return found, None
        rows: dict[int, np.ndarray] = {}
        for attempt in range(2):
            self.refresh()
            by_shard: dict[str, list[tuple[int, int]]] = {}
            for i, h in enumerate(hashes):
                if i not in rows and h in self._index:
                    name, row = self._index[h]
                    by_shard.setdefault(name, []).append((i, row))
            failed = False
            for name, pairs in by_shard.items():
                vecs = self._read_rows(name, [r for _, r in pairs])
                if vecs is None:
                    failed = True
                    self._shards.discard(name)
                    if (self.path / f"{name}{_HASHES}").exists():
                        self._bad.add(name)
                    self._index = {h: loc for h, loc in self._index.items() if loc[0] != name}
                    continue
                if self._dim is None:
                    self._dim = vecs.shape[1]
                for (i, _), v in zip(pairs, vecs, strict=True):
                    rows[i] = v
            if not failed or attempt == 1:
                break
        if not rows:
            return found, None
        idx = sorted(rows)
        found[idx] = True
        return found, np.stack([rows[i] for i in idx])

    # -- writing -----------------------------------------------------------------------
    def _write_shard(self, hashes: Sequence[str], vectors: np.ndarray) -> str:
        self.path.mkdir(parents=True, exist_ok=True)
        meta = self.path / "space.json"
        if not meta.exists():
            _write_key(meta, self.key)
        name = f"shard-{uuid.uuid4().hex}"
        _atomic_save(self.path / f"{name}{_VECTORS}", np.ascontiguousarray(vectors, dtype=np.float32))
        # The hashes file is the commit marker: it appears only after the vectors exist.
        _atomic_save(self.path / f"{name}{_HASHES}", np.asarray(list(hashes), dtype="S64"))
        return name

    def put(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` under ``hashes[i]`` (one new shard; compacts if needed)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(hashes):
            raise ValueError(f"expected {len(hashes)} rows of vectors, got shape {vectors.shape}")
        if not hashes:
            return
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise ValueError(f"vectors have dim {vectors.shape[1]}, this space holds {self._dim}")
        self._dim = vectors.shape[1]
        self._write_shard(hashes, vectors)
        self.refresh()
        if len(self._shards) > self.max_shards:
            self.compact()

    def compact(self) -> None:
        """Merge every readable shard into one new shard, then delete the merged ones.

        A shard is deleted only when all of its rows were read into the merged shard, which is
        committed first: with other processes compacting at the same time a row may end up in
        two shards, never in none.
        """
        self.refresh()
        names = sorted(self._shards)
        if len(names) < 2:
            return
        merged_hashes: list[str] = []
        merged_rows: list[np.ndarray] = []
        seen: set[str] = set()
        copied: list[str] = []
        for name in names:
            try:
                hashes = np.load(self.path / f"{name}{_HASHES}", allow_pickle=False)
            except (OSError, ValueError, EOFError):
                continue  # gone (another compaction has its rows) or unreadable: keep it
            if hashes.ndim != 1 or hashes.dtype != np.dtype("S64") or not len(hashes):
                continue
            vecs = self._read_rows(name, list(range(len(hashes))))
            if vecs is None or len(vecs) != len(hashes):
                continue
            for h, v in zip(hashes.tolist(), vecs, strict=True):
                key = h.decode("ascii")
                if key not in seen:
                    seen.add(key)
                    merged_hashes.append(key)
                    merged_rows.append(v)
            copied.append(name)
        if len(copied) < 2:
            return
        self._write_shard(merged_hashes, np.stack(merged_rows))
        for name in copied:
            for suffix in (_HASHES, _VECTORS):  # commit marker first
                try:
                    (self.path / f"{name}{suffix}").unlink()
                except FileNotFoundError:
                    pass
        self.refresh()

    @property
    def shard_count(self) -> int:
        """Shards currently visible (after a refresh)."""
        self.refresh()
        return len(self._shards)


class EmbeddingCache:
    """A folder of :class:`CacheSpace` s, one per embedding configuration."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *, max_shards: int = 32) -> None:
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        if max_shards < 1:
            raise ValueError(f"max_shards must be >= 1, got {max_shards}")
        self.max_shards = max_shards
        self._spaces: dict[str, CacheSpace] = {}

    @staticmethod
    def space_id(key: Mapping[str, Any]) -> str:
        """Folder name of the space for ``key`` (sha256 of its canonical JSON, 32 hex)."""
        return hashlib.sha256(canonical_json(dict(key), ensure_ascii=True)).hexdigest()[:32]

    def space(self, key: Mapping[str, Any]) -> CacheSpace:
        """The space for ``key`` (JSON-serialisable), created lazily on first write."""
        sid = self.space_id(key)
        if sid not in self._spaces:
            self._spaces[sid] = CacheSpace(self.root / sid, key, max_shards=self.max_shards)
        return self._spaces[sid]


def matrix_path(cache: EmbeddingCache, key: Mapping[str, Any]) -> Path:
    """Where the whole-corpus matrix for ``key`` lives: ``<root>/matrices/<space id>.npy``."""
    return cache.root / "matrices" / f"{EmbeddingCache.space_id(key)}.npy"


def load_matrix(cache: EmbeddingCache, key: Mapping[str, Any], rows: int) -> np.ndarray | None:
    """The cached corpus matrix for ``key``, memory-mapped read-only, or ``None``.

    A file that is missing, unreadable, or not a float32 ``(rows, dim)`` array is a miss
    (it is rebuilt), never an error.
    """
    path = matrix_path(cache, key)
    try:
        m = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if m.ndim != 2 or m.dtype != np.float32 or m.shape[0] != rows:
        return None
    return m


def write_matrix(cache: EmbeddingCache, key: Mapping[str, Any], rows: int,
                 batches: Iterable[np.ndarray]) -> np.ndarray:
    """Write the corpus matrix batch by batch and return it memory-mapped (read-only).

    The rows go to a temporary ``.npy`` (``np.lib.format.open_memmap``: never the whole
    matrix in memory), which is flushed, fsync-ed and ``os.replace``-d into place, so a
    reader sees either no file or a complete one; ``space.json`` beside it records the key.
    """
    path = matrix_path(cache, key)
    out: np.ndarray | None = None
    done = 0
    with atomic_path(path) as tmp:  # flushed, fsync-ed and renamed when the block succeeds
        for batch in batches:
            batch = np.asarray(batch, dtype=np.float32)
            if out is None:
                out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32,
                                                shape=(rows, batch.shape[1]))
            if done + len(batch) > rows:
                raise ValueError(f"more than the {rows} rows announced")
            out[done : done + len(batch)] = batch
            done += len(batch)
        if out is None or done != rows:
            raise ValueError(f"{done} rows written of the {rows} announced")
        out.flush()
        del out
        _write_key(path.with_suffix(".json"), key)
    m = load_matrix(cache, key, rows)
    if m is None:  # pragma: no cover - just written
        raise OSError(f"could not read back {path}")
    return m
