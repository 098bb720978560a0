"""The built-in retrieval system (seed 002): a corpus of chunks indexed by BM25 or dense
embeddings, answering each question with its top-k chunks and their scores.

The index is built once when the system is created (dense embeddings come from the on-disk
cache when seen before); each call embeds or tokenises one question and takes an exact top-k.
Calls are serialised by a lock (one model, one index), so ``retrieval_time_ms`` is the real
latency of one question.
"""

from __future__ import annotations

import threading
from typing import Any

from queryeval.suite.retrieval import Chunk
from queryeval.systems.base import checked_output


class BuiltinRetrievalSystem:
    def __init__(self, chunks: list[Chunk], retriever: str = "bm25", model: str | None = None) -> None:
        from queryeval.systems.retrievers import Doc, make_retriever

        options: dict[str, Any] = {}
        if retriever == "dense" and model:
            options["model"] = model
        self.name = f"builtin:{retriever}" + (f":{model}" if model else "")
        self.chunks = chunks
        self._retriever = make_retriever(retriever, **options)
        self._retriever.index([Doc(str(i), c.content) for i, c in enumerate(chunks)])
        self._lock = threading.Lock()

    def call(self, request: dict, timeout: float | None) -> dict:
        k = int(request["k"])
        with self._lock:
            (hits,) = self._retriever.search([request["question"]], k)
        out = []
        for h in hits:
            c = self.chunks[int(h.doc_id)]
            out.append({"chunk_id": c.chunk_id, "score": float(h.score), "content": c.content,
                        "content_hash": c.content_hash})
        return checked_output({"retrieved_chunks": out})  # a NaN score: malformed, not a crash

    def close(self) -> None:
        pass
