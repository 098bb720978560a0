"""Benchmark: corpus embedding throughput (cold vs warm cache) and exact top-k search.

    python bench/embed.py                      # all-MiniLM-L6-v2 on CPU, 2,000 short texts
    python bench/embed.py --device cuda        # the same on a GPU
    python bench/embed.py --docs 500 --queries 200 --model /path/to/local/model

Prints, from one run:
* embedding: raw ``SentenceTransformer.encode`` (anchor) vs our ``DenseRetriever.index``
  with a cold cache (embeds and writes everything) and with a warm cache (embeds nothing);
* search: our blocked matrix product + argpartition top-k (through ``DenseRetriever.search``,
  Hit objects included) vs a naive Python loop (one ``np.dot`` per document, ``sorted``) and
  vs a per-query full ``np.argsort``. The model load is excluded from every timing.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from queryeval.engines.retrievers import DenseRetriever, Doc, load_sentence_transformer, topk_rows

WORDS = (
    "carrot potato onion garlic olive oil salt pepper rice bean lentil milk egg butter flour "
    "sugar apple banana cherry lemon tomato cheese bread pasta chicken beef fish soup salad "
    "cheap expensive fresh frozen organic local imported spicy sweet sour bitter green red "
    "price store market kitchen recipe dinner lunch breakfast vegetable fruit grain protein"
).split()


def synthetic_texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        f"{i}: " + " ".join(rng.choice(WORDS, size=int(rng.integers(6, 16)))) for i in range(n)
    ]


class Precomputed:
    """Encoder returning stored query vectors, so the search timing excludes the model."""

    fingerprint = "bench-precomputed"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def encode(self, sentences, **_):  # type: ignore[no-untyped-def]
        return np.stack([self.vectors[s] for s in sentences])


def timed(fn, repeat: int = 1) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--anchor-queries", type=int, default=100,
                    help="queries timed with the naive loop (scaled per query)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--model", default=None, help="local model directory (default: bundled MiniLM)")
    args = ap.parse_args()

    texts = synthetic_texts(args.docs, seed=1)
    docs = [Doc(str(i), t) for i, t in enumerate(texts)]
    queries = synthetic_texts(args.queries, seed=2)

    t = time.perf_counter()
    model = load_sentence_transformer(args.model, device=args.device)
    model.encode(["warm up"], batch_size=1)
    print(f"model load + warm-up (excluded below): {time.perf_counter() - t:.2f}s on {args.device}")

    print(f"\n== embedding {args.docs} texts (batch size {args.batch_size}) ==")
    raw = timed(lambda: model.encode(texts, batch_size=args.batch_size, show_progress_bar=False))
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        cold_r = DenseRetriever(args.model, device=args.device, cache=cache, batch_size=args.batch_size)
        cold = timed(lambda: cold_r.index(docs))
        warm_r = DenseRetriever(args.model, device=args.device, cache=cache, batch_size=args.batch_size)
        warm = timed(lambda: warm_r.index(docs))
        assert warm_r.embedder.stats.texts_embedded == 0
        assert np.array_equal(warm_r.doc_embeddings, cold_r.doc_embeddings)
        changed = list(docs)
        changed[0] = Doc("0", "a changed document")
        one_r = DenseRetriever(args.model, device=args.device, cache=cache, batch_size=args.batch_size)
        one = timed(lambda: one_r.index(changed))
        print(f"anchor  raw model.encode      {raw:8.3f}s  {args.docs / raw:9.0f} docs/s")
        print(f"ours    index, cold cache     {cold:8.3f}s  {args.docs / cold:9.0f} docs/s"
              f"  ({cold / raw:.2f}x the anchor's time: hashing + cache write)")
        print(f"ours    index, warm cache     {warm:8.3f}s  {args.docs / warm:9.0f} docs/s"
              f"  ({raw / warm:.1f}x faster than the anchor, {cold / warm:.1f}x faster than cold)")
        print(f"ours    index, 1 doc changed  {one:8.3f}s  (embedded {one_r.embedder.stats.texts_embedded})")
        doc_matrix = cold_r.doc_embeddings

    print(f"\n== exact top-{args.k}: {args.queries} queries x {args.docs} docs ==")
    qvecs = cold_r.embed_queries(queries)
    stored = dict(zip(texts, doc_matrix, strict=True)) | dict(zip(queries, qvecs, strict=True))
    search_r = DenseRetriever(encoder=Precomputed(stored), cache=False)
    search_r.index(docs)  # the same vectors as above, without the model
    ours = timed(lambda: search_r.search(queries, args.k), repeat=5)

    def core() -> None:  # what search() does per block, without building Hit objects
        for start in range(0, len(qvecs), 256):
            topk_rows(qvecs[start : start + 256] @ doc_matrix.T, args.k)

    core_t = timed(core, repeat=5)

    sub = qvecs[: args.anchor_queries]
    doc_rows = list(doc_matrix)

    def naive() -> list[list[int]]:
        out = []
        for q in sub:
            scores = [float(np.dot(q, d)) for d in doc_rows]
            out.append(sorted(range(len(scores)), key=lambda i: (-scores[i], i))[: args.k])
        return out

    def full_sort() -> list[np.ndarray]:
        return [np.argsort(-(doc_matrix @ q), kind="stable")[: args.k] for q in qvecs]

    naive_t = timed(naive) * len(queries) / len(sub)
    sort_t = timed(full_sort, repeat=3)
    ours_ids = [[int(h.doc_id) for h in row] for row in search_r.search(queries[: len(sub)], args.k)]
    agree = sum(a == b for a, b in zip(ours_ids, naive(), strict=True))
    print(f"ours    matmul + argpartition {core_t * 1e3:9.2f} ms  ({core_t / len(queries) * 1e6:.1f} us/query)")
    print(f"ours    search() with Hits    {ours * 1e3:9.2f} ms  ({ours / len(queries) * 1e6:.1f} us/query)")
    print(f"anchor  python loop + sorted  {naive_t * 1e3:9.2f} ms  (scaled from {len(sub)} queries)"
          f"  -> ours is {naive_t / core_t:.0f}x faster ({naive_t / ours:.0f}x with Hits)")
    print(f"anchor  per-query np.argsort  {sort_t * 1e3:9.2f} ms  -> ours is {sort_t / core_t:.1f}x faster ({sort_t / ours:.1f}x with Hits)")
    print(f"top-{args.k} lists identical to the naive loop: {agree}/{len(sub)} "
          "(a difference can only be a float near-tie)")


if __name__ == "__main__":
    main()
