"""Retrieval at scale: blocked exact top-k, the streamed corpus, the corpus-matrix cache, ANN recall.

Vectors here are small integers (``IntEncoder``), so every dot product is exact in float32
whatever the BLAS blocking, and the blocked search must give bit-identical scores to the
one-matrix search; ties are frequent by construction.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.engines.retrievers import DenseRetriever, Doc, rank_rows
from queryeval.engines.retrievers.ann import HNSWIndex, recall_against_exact
from queryeval.engines.retrievers.topk import blocked_topk, plan_blocks
from queryeval.suite.corpus_stream import open_corpus


class IntEncoder:
    """Cheap deterministic vectors of small integers (exact dot products), counting calls."""

    fingerprint = "int-encoder:v1:dim=8"
    name = "int-encoder"
    prompts: dict[str, str] = {}

    def __init__(self, dim: int = 8, levels: int = 3) -> None:
        self.dim, self.levels = dim, levels
        self.calls = 0
        self.texts_encoded = 0

    def encode(self, texts, **_):
        self.calls += 1
        self.texts_encoded += len(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            d = hashlib.md5(t.encode()).digest()  # noqa: S324 - not security
            out[i] = [b % self.levels for b in d[: self.dim]]
        return out


def _write_corpus(path: Path, n: int, *, change: int | None = None) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            text = f"chunk {i} topic {i % 97}" + (" changed" if i == change else "")
            f.write(json.dumps({"chunk_id": f"c{i}", "content": text}) + "\n")
    return path


# -- blocked exact top-k ---------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(1, 4), n=st.integers(1, 60), k=st.integers(0, 70), block=st.integers(1, 70),
    data=st.data(),
)
def test_blocked_topk_equals_full_matrix_ranking(rows, n, k, block, data) -> None:
    # few distinct values (ties everywhere), -inf and NaN included
    values = st.sampled_from([0.0, 1.0, 2.0, -1.0, math.inf, -math.inf, math.nan])
    flat = data.draw(st.lists(values, min_size=rows * n, max_size=rows * n))
    full = np.array(flat, dtype=np.float64).reshape(rows, n)
    calls = []

    def score_range(a: int, b: int) -> np.ndarray:
        calls.append(b - a)
        return full[:, a:b]

    idx, scores = blocked_topk(score_range, rows, n, k, block)
    want = rank_rows(full)[:, : min(k, n)]
    assert idx.tolist() == want.tolist()
    np.testing.assert_array_equal(scores, np.take_along_axis(full, want, axis=1))
    assert max(calls) <= block and sum(calls) == n  # every document scored once, in blocks


def test_plan_blocks_never_exceeds_the_budget() -> None:
    for nq in (1, 7, 300, 10_000):
        for nd in (1, 50, 1_000_003):
            for budget in (1, 1000, 1 << 24):
                qb, db = plan_blocks(nq, nd, budget, max_query_block=256)
                assert 1 <= qb <= min(nq, 256) and 1 <= db <= nd
                assert qb * db <= budget
                qb, db = plan_blocks(nq, nd, budget, max_query_block=256, doc_blocks=False)
                assert db == nd and (qb * db <= budget or qb == 1)
    # 1M chunks, 16M-score budget, 256 queries: 65,536-document blocks, 64 MiB of float32
    assert plan_blocks(1000, 1_000_000, 1 << 24) == (256, 65_536)


class _Recording(DenseRetriever):
    """Records the shape of every score block the search asks for."""

    def _score_range(self, encoded, start, stop):
        out = super()._score_range(encoded, start, stop)
        self.shapes.append(out.shape)
        return out

    def _score_block(self, encoded):
        out = super()._score_block(encoded)
        self.shapes.append(out.shape)
        return out


def test_dense_blocked_search_is_identical_and_bounded(tmp_path: Path) -> None:
    docs = [Doc(f"d{i}", f"text {i} {i % 7}") for i in range(997)]
    queries = [f"query {j}" for j in range(23)]
    whole = DenseRetriever(encoder=IntEncoder(), cache=False, normalize=False)
    whole.index(docs)
    small = _Recording(encoder=IntEncoder(), cache=False, normalize=False, max_block_scores=500,
                       query_block_size=4)
    small.shapes = []
    small.index(docs)
    assert small.block_plan(len(queries)) == (4, 125)
    got = small.search(queries, 10)
    assert got == whole.search(queries, 10)
    assert max(r * c for r, c in small.shapes) <= 500
    # the oracle: the full score matrix, ranked
    full = whole.scores(queries)
    order = rank_rows(full)[:, :10]
    assert [[h.doc_id for h in row] for row in got] == [[f"d{j}" for j in r] for r in order.tolist()]
    assert [[h.score for h in row] for row in got] == np.take_along_axis(full, order, 1).tolist()


# -- streamed corpus and the corpus-matrix cache ---------------------------------------------
def test_matrix_cache_is_reused_and_invalidated_by_a_corpus_change(tmp_path: Path) -> None:
    corpus = open_corpus(_write_corpus(tmp_path / "c.jsonl", 300))
    cache = tmp_path / "cache"
    enc = IntEncoder()
    first = DenseRetriever(encoder=enc, cache=cache, stream_batch=64)
    first.index_corpus(corpus)
    assert (enc.calls, enc.texts_encoded) == (5, 300)  # 300 texts in batches of 64
    hits = first.search(["chunk 5 topic 5"], 5)

    enc2 = IntEncoder()
    again = DenseRetriever(encoder=enc2, cache=cache, stream_batch=64)
    again.index_corpus(open_corpus(tmp_path / "c.jsonl"))
    assert enc2.calls == 0 and isinstance(again.doc_embeddings, np.memmap)
    assert again.search(["chunk 5 topic 5"], 5) == hits
    matrices = sorted((cache / "matrices").glob("*.npy"))
    assert len(matrices) == 1

    changed = open_corpus(_write_corpus(tmp_path / "c2.jsonl", 300, change=7))
    assert changed.content_fingerprint != corpus.content_fingerprint
    enc3 = IntEncoder()
    third = DenseRetriever(encoder=enc3, cache=cache, stream_batch=64)
    third.index_corpus(changed)
    assert enc3.texts_encoded == 1  # only the changed text; the rest from the per-text cache
    assert len(sorted((cache / "matrices").glob("*.npy"))) == 2
    np.testing.assert_array_equal(third.doc_embeddings[8:], first.doc_embeddings[8:])
    assert not np.array_equal(third.doc_embeddings[7], first.doc_embeddings[7])


def test_a_damaged_matrix_file_is_rebuilt(tmp_path: Path) -> None:
    corpus = open_corpus(_write_corpus(tmp_path / "c.jsonl", 50))
    r = DenseRetriever(encoder=IntEncoder(), cache=tmp_path / "cache")
    r.index_corpus(corpus)
    before = np.array(r.doc_embeddings)
    del r
    (path,) = (tmp_path / "cache" / "matrices").glob("*.npy")
    path.write_bytes(b"not a numpy file")
    enc = IntEncoder()
    again = DenseRetriever(encoder=enc, cache=tmp_path / "cache")
    again.index_corpus(corpus)
    np.testing.assert_array_equal(again.doc_embeddings, before)
    assert enc.calls == 0  # rebuilt from the per-text shards, nothing re-encoded


def test_streamed_corpus_reads_chunks_back_and_refuses_duplicates(tmp_path: Path) -> None:
    from queryeval.errors import InputError

    corpus = open_corpus(_write_corpus(tmp_path / "c.jsonl", 20))
    assert corpus.chunk(13).content == "chunk 13 topic 13" and corpus.position("c13") == 13
    assert [len(b) for b in corpus.text_batches(8)] == [8, 8, 4]
    bad = tmp_path / "dup.jsonl"
    bad.write_text('{"chunk_id": "a", "content": "x"}\n{"chunk_id": "a", "content": "y"}\n')
    with pytest.raises(InputError, match="duplicate chunk_id 'a'"):
        open_corpus(bad)


def test_fifty_thousand_chunks_end_to_end(tmp_path: Path) -> None:
    n = 50_000
    corpus = open_corpus(_write_corpus(tmp_path / "big.jsonl", n))
    enc = IntEncoder()
    r = DenseRetriever(encoder=enc, cache=tmp_path / "cache", normalize=False,
                       max_block_scores=1 << 16, stream_batch=8192)
    r.index_corpus(corpus)
    assert r.doc_embeddings.shape == (n, 8) and enc.calls == 7
    queries = [f"chunk {j} topic {j % 97}" for j in range(0, 500, 50)]
    qb, db = r.block_plan(len(queries))
    assert db < n and qb * db <= 1 << 16  # really blocked
    got = r.search(queries, 5)
    full = r.embed_queries(queries) @ np.asarray(r.doc_embeddings).T
    order = rank_rows(full)[:, :5]
    assert [[h.doc_id for h in row] for row in got] == [[f"c{j}" for j in row] for row in order.tolist()]
    assert [[h.score for h in row] for row in got] == np.take_along_axis(full, order, 1).tolist()


# -- ANN ----------------------------------------------------------------------------------
def test_recall_against_exact_by_hand() -> None:
    exact = np.array([[0, 1, 2], [3, 4, 5], [6, -1, -1]])
    approx = np.array([[2, 0, 9], [7, 8, -1], [6, 1, -1]])
    # row 0: {0, 2} of {0, 1, 2} = 2/3; row 1: 0/3; row 2: {6} of {6} = 1
    assert recall_against_exact(approx, exact) == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert recall_against_exact(np.empty((0, 3)), np.empty((0, 3))) == 1.0


@pytest.mark.parametrize("backend", ["faiss", "usearch"])
def test_ann_recall_equals_a_brute_force_computation(tmp_path: Path, backend: str) -> None:
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((2000, 16)).astype(np.float32)

    class Table:
        fingerprint = "table:v1"
        prompts: dict[str, str] = {}

        def encode(self, texts, **_):
            return np.stack([vecs[int(t.split()[-1])] for t in texts])

    docs = [Doc(f"d{i}", f"doc {i}") for i in range(2000)]
    r = DenseRetriever(encoder=Table(), cache=False, index="hnsw", ann_backend=backend,
                       hnsw_m=4, ef_construction=8, ef_search=4)  # a weak graph: recall < 1
    r.index(docs)
    queries = [f"q {i}" for i in range(0, 2000, 37)]
    info = r.ann_recall(queries, 10)
    q = r.embed_queries(queries)
    exact = rank_rows(q @ r.doc_embeddings.T)[:, :10]
    approx, _ = r.topk_indices(queries, 10)
    shares = [len(set(a.tolist()) & set(e.tolist())) / 10 for a, e in zip(approx, exact, strict=True)]
    assert info["recall"] == pytest.approx(sum(shares) / len(shares))
    assert info["recall"] < 1.0 and info["k"] == 10 and info["queries"] == len(queries)
    assert info["backend"] == backend


def test_ann_index_is_cached_on_disk(tmp_path: Path) -> None:
    corpus = open_corpus(_write_corpus(tmp_path / "c.jsonl", 400))
    r = DenseRetriever(encoder=IntEncoder(), cache=tmp_path / "cache", index="hnsw")
    r.index_corpus(corpus)
    (saved,) = (tmp_path / "cache" / "matrices").glob("*.faiss")
    loaded = HNSWIndex("faiss")
    assert loaded.load(saved, 400, 8)
    again = DenseRetriever(encoder=IntEncoder(), cache=tmp_path / "cache", index="hnsw")
    again.index_corpus(corpus)
    assert again.search(["chunk 3 topic 3"], 5) == r.search(["chunk 3 topic 3"], 5)


# -- BM25 over a streamed corpus ----------------------------------------------------------------
@pytest.mark.parametrize("options", [{}, {"method": "bm25+"}, {"method": "robertson"},
                                     {"stopwords": None, "stemmer": lambda ws: [w[:4] for w in ws]}])
def test_bm25_streamed_index_equals_the_in_memory_index(tmp_path: Path, options: dict) -> None:
    from queryeval.engines.retrievers import BM25Retriever

    words = ["fox", "dog", "quick", "lazy", "the", "day", "wörds", "brown", "jumps", "sleeps"]
    rng = np.random.default_rng(3)
    path = tmp_path / "c.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(400):
            text = " ".join(rng.choice(words, size=int(rng.integers(0, 9))))
            f.write(json.dumps({"chunk_id": f"c{i}", "content": text}) + "\n")
    corpus = open_corpus(path)
    whole = BM25Retriever(**options)
    whole.index([Doc(f"c{i}", t) for i, t in enumerate(t for b in corpus.text_batches() for t in b)])
    streamed = BM25Retriever(max_block_scores=1000, **options)
    streamed.index_corpus(corpus, batch_size=37)
    queries = ["quick fox", "lazy dog day", "wörds", "the", "nothing known", "brown brown jumps"]
    assert streamed.block_plan(len(queries)) == (2, 400)  # 1000 // 400 queries per block
    np.testing.assert_array_equal(streamed.scores(queries), whole.scores(queries))
    assert streamed.search(queries, 10) == whole.search(queries, 10)


def test_a_corpus_changed_after_the_scan_is_refused_not_misread(tmp_path: Path) -> None:
    from queryeval.errors import InputError

    path = _write_corpus(tmp_path / "c.jsonl", 30)
    corpus = open_corpus(path)
    text = path.read_text().replace("chunk 12 topic 12", "chunk 12 topic 99")  # same length
    path.write_text(text)
    with pytest.raises(InputError, match="changed while the run was using it"):
        list(corpus.text_batches(8))
    with pytest.raises(InputError, match="changed while the run was using it"):
        corpus.chunk(12)


def test_hash_lookup_finds_the_first_chunk_with_that_content(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rows = [("a", "same text"), ("b", "other"), ("c", "same text")]
    path.write_text("".join(json.dumps({"chunk_id": i, "content": t}) + "\n" for i, t in rows))
    lookup = open_corpus(path).hash_lookup()
    digest = hashlib.md5(b"same text").hexdigest()  # noqa: S324
    assert lookup.get(digest.upper()).chunk_id == "a"
    assert lookup.get(hashlib.md5(b"missing").hexdigest()) is None  # noqa: S324
    assert lookup.get("not hex") is None


def test_the_task_reads_the_expected_chunk_back_from_the_streamed_corpus(tmp_path: Path) -> None:
    from queryeval.tasks.base import get_task

    path = _write_corpus(tmp_path / "c.jsonl", 40)
    task = get_task("retrieval", {"corpus": str(path)})
    text = "chunk 17 topic 17"
    digest = hashlib.md5(text.encode()).hexdigest()  # noqa: S324
    by_id = task.report_record({"expected_chunk": {"chunk_id": "c17", "content_hash": digest}})
    by_hash = task.report_record({"expected_chunk": {"chunk_id": "gone", "content_hash": digest}})
    assert by_id["expected_chunk"]["content"] == by_hash["expected_chunk"]["content"] == text
    assert type(task.corpus()).__name__ == "StreamedCorpus"
