"""Turn texts into (optionally normalised) embeddings, through the on-disk cache.

The :class:`Embedder` owns one encoder (loaded lazily: a corpus found entirely in the cache
never loads the model), one normalisation setting and an optional cache. Each call embeds
only the distinct texts the cache does not hold, in batches, and stores them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cache import EmbeddingCache, text_hash
from .models import Encoder

__all__ = ["EmbedStats", "Embedder", "normalize_rows"]


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (computed in float64, returned as float32).

    A zero row stays zero (its cosine with anything is then 0), rather than becoming NaN.
    """
    x64 = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x64, axis=1, keepdims=True)
    out = np.divide(x64, norms, out=np.zeros_like(x64), where=norms > 0)
    return out.astype(np.float32)


@dataclass
class EmbedStats:
    """Counters over the embedder's lifetime: what the model embedded, what the cache served."""

    texts_requested: int = 0
    texts_embedded: int = 0
    cache_hits: int = 0
    encode_calls: int = 0


class Embedder:
    """Embeds texts with a prefix, normalisation and a cache keyed by content.

    ``encoder`` is an :class:`~queryeval.engines.retrievers.models.Encoder` or a zero-argument
    factory returning one (called on first need). ``fingerprint`` identifies the model for
    the cache; without it the cache is not used.
    """

    def __init__(
        self,
        encoder: Encoder | Callable[[], Encoder],
        *,
        fingerprint: str | None,
        normalize: bool = True,
        batch_size: int = 64,
        cache: EmbeddingCache | None = None,
        extra_key: dict[str, Any] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._encoder = encoder if hasattr(encoder, "encode") else None
        self._factory = None if self._encoder is not None else encoder
        self.fingerprint = fingerprint
        self.normalize = normalize
        self.batch_size = int(batch_size)
        self.cache = cache if fingerprint is not None else None
        self.extra_key = dict(extra_key or {})
        self.stats = EmbedStats()

    @property
    def encoder(self) -> Encoder:
        """The encoder, created on first access when a factory was given."""
        if self._encoder is None:
            if self._factory is None:  # pragma: no cover - constructor guarantees one of them
                raise RuntimeError("Embedder has neither an encoder nor a factory")
            self._encoder = self._factory()
        return self._encoder

    @property
    def loaded(self) -> bool:
        """Whether the encoder exists yet (a fully cached run never loads it)."""
        return self._encoder is not None

    def cache_key(self, prefix: str) -> dict[str, Any]:
        """The cache-space key for texts embedded with ``prefix``."""
        return {
            "format": 1,
            "model": self.fingerprint,
            "prefix": prefix,
            "normalize": self.normalize,
            **self.extra_key,
        }

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.stats.encode_calls += 1
        self.stats.texts_embedded += len(texts)
        out = self.encoder.encode(
            texts,
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=False,
        )
        arr = np.asarray(out, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise ValueError(f"encoder returned shape {arr.shape} for {len(texts)} texts")
        return normalize_rows(arr) if self.normalize else arr

    def embed(self, texts: Sequence[str], *, prefix: str = "", use_cache: bool = True) -> np.ndarray:
        """float32 ``(len(texts), dim)`` embeddings of ``prefix + text`` for each text."""
        texts = list(texts)
        self.stats.texts_requested += len(texts)
        if not texts:
            raise ValueError("embed() needs at least one text (the dimension is unknown)")
        hashes = [text_hash(t) for t in texts]
        first: dict[str, int] = {}
        for i, h in enumerate(hashes):
            first.setdefault(h, i)
        unique = list(first)  # distinct texts, first-occurrence order
        vectors: dict[str, np.ndarray] = {}
        space = self.cache.space(self.cache_key(prefix)) if (self.cache and use_cache) else None
        if space is not None:
            found, got = space.get(unique)
            if got is not None:
                for h, v in zip((h for h, ok in zip(unique, found.tolist(), strict=True) if ok), got, strict=True):
                    vectors[h] = v
            self.stats.cache_hits += len(vectors)
        missing = [h for h in unique if h not in vectors]
        if missing:
            new = self._encode([prefix + texts[first[h]] for h in missing])
            if space is not None:
                space.put(missing, new)
            for h, v in zip(missing, new, strict=True):
                vectors[h] = v
        return np.stack([vectors[h] for h in hashes]).astype(np.float32, copy=False)
