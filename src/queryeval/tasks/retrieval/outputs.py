"""Seed 002's flat outputs and report records: the results CSV (one row per retrieved chunk,
the seed's columns) and the record as the HTML report, the xlsx and the viewer show it (each
retrieved chunk marked ``relevant`` by the task's rule, the expected chunk's text).

With several relevant chunks, the seed's ``expected_chunk_*`` columns hold every relevant
chunk's value joined by ``|`` (in the order listed), and ``is_correct_chunk`` says whether the
retrieved chunk is one of them (docs/retrieval.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from queryeval.tasks.retrieval.scoring import Matcher, is_identity, record_identity, relevant_chunks


class RetrievalOutputs:
    """Mixed into :class:`~queryeval.tasks.retrieval.task.RetrievalTask` (it gives ``options``,
    ``corpus()``, ``_by_id``, ``_by_hash``, ``_corpus`` and ``matcher``)."""

    options: Any
    _by_id: dict[str, Any]
    _by_hash: dict[str, Any] | None
    _corpus: Any

    def matcher(self, record: dict) -> Matcher:  # pragma: no cover - the task's own
        raise NotImplementedError

    def corpus(self) -> Any:  # pragma: no cover - the task's own
        raise NotImplementedError

    # --- flat outputs ----------------------------------------------------------------------------
    csv_columns = [
        "qa_pair_id", "question", "rank", "similarity_score", "retrieved_chunk_id",
        "retrieved_content", "retrieved_content_hash", "expected_chunk_content_hash",
        "expected_chunk_name", "expected_chunk_source", "expected_chunk_id", "is_correct_chunk",
        "evaluation_result_correct_chunk_retrieved", "evaluation_result_rank_if_found",
        "evaluation_result_retrieval_time_ms",
    ]

    def csv_rows(self, record: dict) -> Iterable[dict]:
        exp = record["expected_chunk"]
        ev = record["evaluation_result"]
        base = {
            "qa_pair_id": record["qa_pair_id"], "question": record["question"],
            "expected_chunk_content_hash": exp["content_hash"], "expected_chunk_name": exp["name"],
            "expected_chunk_source": exp["source"], "expected_chunk_id": exp["chunk_id"],
            "evaluation_result_correct_chunk_retrieved": ev["correct_chunk_retrieved"],
            "evaluation_result_rank_if_found": ev["rank_if_found"],
            "evaluation_result_retrieval_time_ms": ev["retrieval_time_ms"],
        }
        if not record["retrieved_chunks"]:
            yield base
        exact = self.options.hash_case == "exact"
        identity = record_identity(record, exact)  # the seed's shape: no Matcher to build
        matcher = self.matcher(record) if identity is None else None
        for i, c in enumerate(record["retrieved_chunks"], start=1):
            yield {**base, "rank": i, "similarity_score": c["score"], "retrieved_chunk_id": c["chunk_id"],
                   "retrieved_content": c["content"], "retrieved_content_hash": c["content_hash"],
                   "is_correct_chunk": (is_identity(c, identity, exact) if matcher is None
                                        else matcher.is_relevant(c))}

    def report_record(self, record: dict) -> dict:
        """The record with its expected chunk's text for the report: from a retrieved chunk
        with its content hash (one dropped by ``min_score`` too), else from ``--corpus``."""
        try:  # the mark of each relevant chunk, by the task's rule (a hostile log: no mark)
            matcher = self.matcher(record)
            record = {**record, "retrieved_chunks": [{**c, "relevant": matcher.is_relevant(c)}
                                                     for c in record["retrieved_chunks"]]}
        except (AttributeError, KeyError, TypeError, ValueError):
            pass
        expected = record.get("expected_chunk") or {}
        if expected.get("content") is not None:
            return record
        first = relevant_chunks(record)[0] if expected else {}  # several: the first one's text
        want = str(first.get("content_hash")).lower()
        for c in (record.get("all_retrieved_chunks") or []) + (record.get("retrieved_chunks") or []):
            same = (str(c.get("content_hash")).lower() == want if first.get("content_hash")
                    else str(c.get("chunk_id")) == str(first.get("chunk_id")))
            if same and c.get("content") is not None:
                return {**record, "expected_chunk": {**expected, "content": c["content"]}}
        if not self.options.corpus:
            return record
        try:
            self.corpus()
        except Exception:  # noqa: BLE001 - a moved or broken corpus: the report goes without
            return record
        chunk = self._by_id.get(str(first.get("chunk_id")))
        if chunk is not None and not first.get("content_hash"):  # identified by its id
            return {**record, "expected_chunk": {**expected, "content": chunk.content}}
        if chunk is None or chunk.content_hash.lower() != want:
            if self._by_hash is None:
                self._by_hash = self._corpus.hash_lookup()  # first chunk with that hash
            chunk = self._by_hash.get(want)
        if chunk is None:
            return record
        return {**record, "expected_chunk": {**expected, "content": chunk.content}}

