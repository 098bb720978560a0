"""The built-in retrieval system (seed 002): a corpus of chunks indexed by BM25 or dense
embeddings, answering each question with its top-k chunks and their scores.

The index is built once when the system is created (dense embeddings come from the on-disk
cache when seen before); each call embeds or tokenises one question and takes an exact top-k
(or, with the ``dense-hnsw`` retriever, asks an HNSW graph). Calls are serialised by a lock
(one model, one index), so ``retrieval_time_ms`` is the real latency of one question.

The corpus is either a list of chunks or a streamed corpus
(:class:`~queryeval.suite.corpus_stream.StreamedCorpus`): then the index is built from the
texts streamed in batches and a retrieved chunk is read back from the file.
"""

from __future__ import annotations

import threading
from typing import Any

from queryeval.suite.retrieval import Chunk
from queryeval.systems.base import checked_output


class BuiltinRetrievalSystem:
    def __init__(self, chunks: Any, retriever: str = "bm25", model: str | None = None, *,
                 engine: Any = None) -> None:
        """``engine``: a retriever object (e.g. a configured ``DenseRetriever``) instead of
        the one ``retriever``/``model`` name."""
        from queryeval.engines.retrievers import Doc, make_retriever

        options: dict[str, Any] = {}
        if retriever.startswith("dense") and model:
            options["model"] = model
        self.name = f"builtin:{retriever}" + (f":{model}" if model else "")
        self.chunks = chunks
        self._retriever = engine if engine is not None else make_retriever(retriever, **options)
        self._streamed = hasattr(chunks, "text_batches")
        if self._streamed:
            self._retriever.index_corpus(chunks)
        else:
            self._retriever.index([Doc(str(i), c.content) for i, c in enumerate(chunks)])
        self._lock = threading.Lock()

    def _chunk(self, doc_id: str) -> Chunk:
        if self._streamed:
            return self.chunks.chunk(self.chunks.position(doc_id))
        return self.chunks[int(doc_id)]

    def call(self, request: dict, timeout: float | None) -> dict:
        k = int(request["k"])
        with self._lock:
            (hits,) = self._retriever.search([request["question"]], k)
            found = [(h, self._chunk(h.doc_id)) for h in hits]
        out = [{"chunk_id": c.chunk_id, "score": float(h.score), "content": c.content,
                "content_hash": c.content_hash} for h, c in found]
        return checked_output({"retrieved_chunks": out})  # a NaN score: malformed, not a crash

    def run_info(self, questions: list[str], k: int) -> dict:
        """What the batch file records about this system for the run's questions: with an
        approximate index, ``ann_recall`` (its recall@k against exact search on them)."""
        ann_recall = getattr(self._retriever, "ann_recall", None)
        if getattr(self._retriever, "ann", None) is None or ann_recall is None or not questions:
            return {}
        with self._lock:
            return {"ann_recall": ann_recall(list(questions), k)}

    def close(self) -> None:
        close = getattr(self.chunks, "close", None)
        if close is not None:
            close()
