"""Benchmark: retrieval over 100k and 1M synthetic chunks — time and peak RSS, against anchors.

    python bench/retrieval_scale.py                     # 100k and 1M (minutes; ~5 GB of temp files)
    python bench/retrieval_scale.py --sizes 20000       # a quick look
    python bench/retrieval_scale.py --queries 100 --skip-minilm

Every measurement runs in a fresh subprocess, so its peak RSS (``VmHWM``, which counts the
pages of memory-mapped files it touched) is its own. Per size:

* dense, precomputed vectors (384-d, clustered, unit): ours — ``DenseRetriever.index_corpus``
  on a cold cache (vectors streamed into the memory-mapped matrix file), then a warm start
  (maps the file) and the blocked exact search; anchor — BEIR's ``DenseRetrievalExactSearch``
  shape: the full ``queries x chunks`` score matrix, then a heap top-k per query (at sizes
  where that matrix would pass ``--beir-max-gb`` the anchor runs on a subsample of the
  queries and the full matrix's size is reported as an estimate);
* HNSW: faiss ``IndexHNSWFlat`` and usearch, the same M / ef: build time, ms per query, recall
  against exact; ours (``index="hnsw"``: faiss candidates re-scored and tie-broken) vs raw faiss;
* BM25: ours — ``BM25Retriever.index_corpus`` over the JSONL corpus streamed; anchor — plain
  bm25s with every text in a list (``bm25s.tokenize`` + ``BM25.index`` + ``retrieve``);
* MiniLM (all-MiniLM-L6-v2, offline): encode throughput on CPU, raw ``model.encode`` vs our
  ``Embedder``; on a GPU too when torch sees one (this machine has none: it says so).

Ratios are ours / anchor measured in the same run (time: below 1 is faster; RSS: below 1 is
smaller). The load average is printed before and after: other jobs share the machine.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 384
K = 10
WORDS = [f"w{i}" for i in range(5000)]


# -- data ------------------------------------------------------------------------------------
def make_data(folder: Path, n: int, n_queries: int) -> None:
    """Clustered unit vectors (1,000 centres), queries near random chunks, and a JSONL corpus."""
    rng = np.random.default_rng(n)
    centres = rng.standard_normal((1000, DIM)).astype(np.float32)
    vecs = np.lib.format.open_memmap(folder / "vectors.npy", mode="w+", dtype=np.float32, shape=(n, DIM))
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        block = centres[rng.integers(0, 1000, m)] + 0.6 * rng.standard_normal((m, DIM)).astype(np.float32)
        vecs[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    picks = rng.choice(n, n_queries, replace=False)
    q = vecs[np.sort(picks)] + 0.3 * rng.standard_normal((n_queries, DIM)).astype(np.float32)
    np.save(folder / "queries.npy", (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32))
    vecs.flush()
    del vecs
    zipf = np.minimum(rng.zipf(1.3, size=(n, 24)), len(WORDS)) - 1
    lengths = rng.integers(8, 25, n)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(WORDS[j] for j in zipf[i, : lengths[i]])
            f.write(json.dumps({"chunk_id": f"c{i}", "content": text}) + "\n")
    qz = np.minimum(rng.zipf(1.3, size=(n_queries, 4)), len(WORDS)) - 1
    (folder / "queries.txt").write_text("\n".join(" ".join(WORDS[j] for j in row) for row in qz))


class _IndexCorpus:
    """A corpus whose 'texts' are row numbers of the precomputed matrix."""

    def __init__(self, n: int) -> None:
        self.ids = [f"c{i}" for i in range(n)]
        self.content_fingerprint = f"bench-rows-{n}"

    def text_batches(self, size: int):  # type: ignore[no-untyped-def]
        for start in range(0, len(self.ids), size):
            yield [str(i) for i in range(start, min(start + size, len(self.ids)))]


class _Rows:
    """Encoder returning the precomputed rows named by the texts (no model)."""

    def __init__(self, matrix: np.ndarray, queries: np.ndarray) -> None:
        self.matrix, self.queries = matrix, queries
        self.fingerprint = "bench-precomputed-v1"
        self.prompts: dict[str, str] = {}

    def encode(self, texts, **_):  # type: ignore[no-untyped-def]
        if texts[0].startswith("q"):
            return self.queries[[int(t[1:]) for t in texts]]
        return np.asarray(self.matrix[int(texts[0]) : int(texts[-1]) + 1])


# -- stages (each in its own process) ---------------------------------------------------------
def _dense(folder: Path, cache: Path, index: str = "exact"):  # type: ignore[no-untyped-def]
    from queryeval.engines.retrievers import DenseRetriever

    matrix = np.load(folder / "vectors.npy", mmap_mode="r")
    queries = np.load(folder / "queries.npy")
    r = DenseRetriever(encoder=_Rows(matrix, queries), cache=cache, normalize=False,
                       stream_batch=65536, index=index)
    return r, [f"q{i}" for i in range(len(queries))]


def stage_dense_index(folder: Path, cache: Path) -> dict:
    t = time.perf_counter()
    r, _ = _dense(folder, cache)
    r.index_corpus(_IndexCorpus(np.load(folder / "vectors.npy", mmap_mode="r").shape[0]))
    return {"index_s": time.perf_counter() - t, **_rss_now_mib()}


def stage_dense_search(folder: Path, cache: Path) -> dict:
    t = time.perf_counter()
    r, qs = _dense(folder, cache)
    r.index_corpus(_IndexCorpus(np.load(folder / "vectors.npy", mmap_mode="r").shape[0]))
    warm = time.perf_counter() - t
    t = time.perf_counter()
    idx, _ = r.topk_indices(qs, K)
    search = time.perf_counter() - t
    np.save(folder / "ours_exact.npy", idx)
    qb, db = r.block_plan(len(qs))
    return {"warm_start_s": warm, "search_s": search, "ms_per_query": 1000 * search / len(qs),
            "block": [qb, db], "block_mib": qb * db * 4 / 2**20, **_rss_now_mib()}


def stage_beir(folder: Path, max_gb: float) -> dict:
    """BEIR DenseRetrievalExactSearch's shape: whole score matrix, then a heap per query."""
    corpus = np.load(folder / "vectors.npy")  # BEIR holds the corpus embeddings in memory
    queries = np.load(folder / "queries.npy")
    n = corpus.shape[0]
    full_gb = len(queries) * n * 4 / 1e9
    nq = len(queries) if full_gb <= max_gb else max(1, int(len(queries) * max_gb / full_gb))
    t = time.perf_counter()
    scores = queries[:nq] @ corpus.T
    out = []
    for row in scores:
        top = heapq.nlargest(K, zip(row.tolist(), range(n), strict=True))
        out.append([i for _, i in top])
    took = time.perf_counter() - t
    np.save(folder / "beir.npy", np.array(out))
    return {"queries_run": nq, "search_s": took, "ms_per_query": 1000 * took / nq,
            "full_matrix_gb": full_gb, "estimated": nq < len(queries), **_rss_now_mib()}


def stage_hnsw(folder: Path, backend: str, m: int, efc: int, efs: int) -> dict:
    from queryeval.engines.retrievers.ann import HNSWIndex, recall_against_exact

    matrix = np.load(folder / "vectors.npy", mmap_mode="r")
    queries = np.load(folder / "queries.npy")
    ann = HNSWIndex(backend, m=m, ef_construction=efc, ef_search=efs)
    t = time.perf_counter()
    ann.build(matrix)
    build = time.perf_counter() - t
    t = time.perf_counter()
    raw = ann.search(queries, K)
    raw_s = time.perf_counter() - t
    exact = np.load(folder / "ours_exact.npy")
    out = {"build_s": build, "ms_per_query": 1000 * raw_s / len(queries),
           "recall": recall_against_exact(raw, exact)}
    if backend == "faiss":  # ours: the same graph, candidates re-scored and tie-broken
        r, qs = _dense(folder, Path(tempfile.mkdtemp()), index="exact")
        r._doc_matrix, r._ids, r.ann = matrix, [f"c{i}" for i in range(matrix.shape[0])], ann
        t = time.perf_counter()
        ours, _ = r.topk_indices(qs, K)
        ours_s = time.perf_counter() - t
        out.update({"ours_ms_per_query": 1000 * ours_s / len(qs),
                    "ours_recall": recall_against_exact(ours, exact)})
    return out


def stage_bm25_ours(folder: Path) -> dict:
    import bm25s  # noqa: F401 - imported before the clock starts, as in the anchor

    from queryeval.engines.retrievers import BM25Retriever
    from queryeval.suite.corpus_stream import open_corpus

    queries = (folder / "queries.txt").read_text().splitlines()
    t = time.perf_counter()
    corpus = open_corpus(folder / "corpus.jsonl")
    r = BM25Retriever(stopwords=None)
    r.index_corpus(corpus)
    index = time.perf_counter() - t
    t = time.perf_counter()
    idx, scores = r.topk_indices(queries, K)
    search = time.perf_counter() - t
    np.save(folder / "bm25_ours.npy", idx)
    np.save(folder / "bm25_ours_scores.npy", scores)
    return {"index_s": index, "search_s": search, "ms_per_query": 1000 * search / len(queries)}


def stage_bm25_anchor(folder: Path) -> dict:
    import bm25s

    queries = (folder / "queries.txt").read_text().splitlines()
    t = time.perf_counter()
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        texts = [json.loads(line)["content"] for line in f]
    engine = bm25s.BM25()
    engine.index(bm25s.tokenize(texts, stopwords=[], show_progress=False), show_progress=False)
    index = time.perf_counter() - t
    t = time.perf_counter()
    docs, scores = engine.retrieve(bm25s.tokenize(queries, stopwords=[], show_progress=False), k=K,
                                   show_progress=False, n_threads=1)
    search = time.perf_counter() - t
    np.save(folder / "bm25_anchor.npy", np.asarray(docs))
    np.save(folder / "bm25_anchor_scores.npy", np.asarray(scores))
    return {"index_s": index, "search_s": search, "ms_per_query": 1000 * search / len(queries)}


def stage_minilm(n_texts: int) -> dict:
    import torch

    from queryeval.engines.retrievers import Embedder, load_sentence_transformer

    texts = [" ".join(WORDS[(i * 7 + j * 13) % 5000] for j in range(20)) + f" {i}" for i in range(n_texts)]
    out: dict = {"gpu": torch.cuda.is_available(), "torch_threads": torch.get_num_threads()}
    for device in ["cpu"] + (["cuda"] if out["gpu"] else []):
        model = load_sentence_transformer(None, device=device)
        model.encode(texts[:16], batch_size=16)  # warm-up
        t = time.perf_counter()
        model.encode(texts, batch_size=64, convert_to_numpy=True)
        raw = n_texts / (time.perf_counter() - t)
        emb = Embedder(model, fingerprint="bench", batch_size=64, cache=None)
        t = time.perf_counter()
        emb.embed(texts)
        ours = n_texts / (time.perf_counter() - t)
        out[device] = {"raw_texts_per_s": raw, "ours_texts_per_s": ours,
                       "1M_minutes_at_raw": 1e6 / raw / 60}
    return out


# -- driver ----------------------------------------------------------------------------------
def _peak_rss_mib() -> float:
    """This process's peak RSS: ``VmHWM`` (``ru_maxrss`` is inherited across fork + exec on
    Linux, so a stage would report its parent's peak if that was higher)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_now_mib() -> dict:
    """Current anonymous and file-backed resident memory (a memory-mapped matrix is the
    latter: page cache the kernel can drop, not heap)."""
    out = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(("RssAnon:", "RssFile:")):
                out[line.split(":")[0].lower()] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


def run_stage(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--stage", *args], capture_output=True, text=True,
                          check=False)
    if proc.returncode:
        raise SystemExit(f"stage {args[0]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _agree(folder: Path, a: str, b: str, rows: int | None = None) -> str:
    x, y = np.load(folder / a), np.load(folder / b)
    rows = rows or len(x)
    same = sum(list(p) == list(q) for p, q in zip(x[:rows], y[:rows], strict=True))
    return f"{same}/{rows}"


def _same_scores(folder: Path) -> str:
    a = np.load(folder / "bm25_ours_scores.npy").astype(np.float32)
    b = np.load(folder / "bm25_anchor_scores.npy").astype(np.float32)
    same = sum(np.allclose(x, y, rtol=1e-6, atol=1e-6) for x, y in zip(a, b, strict=True))
    return f"{same}/{len(a)}"


def bench_size(n: int, args: argparse.Namespace, tmp: Path) -> None:
    folder = tmp / f"n{n}"
    folder.mkdir()
    t = time.perf_counter()
    make_data(folder, n, args.queries)
    print(f"\n== {n:,} chunks, {args.queries} queries, k={K} (data written in {time.perf_counter() - t:.0f} s;"
          f" load {_load()})")
    cache = folder / "cache"
    s = str(folder)
    idx = run_stage("dense_index", s, str(cache))
    ours = run_stage("dense_search", s, str(cache))
    beir = run_stage("beir", s, str(args.beir_max_gb))
    print(f"dense exact  ours: index (cold, vectors -> mmap file) {idx['index_s']:.1f} s, "
          f"rss {idx['rss_mib']:.0f} MiB [after: anon {idx.get('rssanon', 0):.0f}, file "
          f"{idx.get('rssfile', 0):.0f} MiB: the source and the written matrix are file pages]; "
          f"warm start {ours['warm_start_s']:.2f} s; "
          f"search {ours['ms_per_query']:.2f} ms/query, rss {ours['rss_mib']:.0f} MiB "
          f"[after the search: anon {ours.get('rssanon', 0):.0f}, file {ours.get('rssfile', 0):.0f} MiB] "
          f"(blocks {ours['block'][0]}x{ours['block'][1]} = {ours['block_mib']:.0f} MiB of scores)")
    est = (f" (ESTIMATE: ran {beir['queries_run']} queries; the full matrix would be "
           f"{beir['full_matrix_gb']:.1f} GB)") if beir["estimated"] else ""
    print(f"dense exact  BEIR-style anchor: {beir['ms_per_query']:.2f} ms/query, rss "
          f"{beir['rss_mib']:.0f} MiB [after the search: anon {beir.get('rssanon', 0):.0f}, file "
          f"{beir.get('rssfile', 0):.0f} MiB], score matrix {beir['full_matrix_gb']:.2f} GB{est}")
    print(f"             ratio ours/anchor: time {ours['ms_per_query'] / beir['ms_per_query']:.3f}x, "
          f"rss {ours['rss_mib'] / beir['rss_mib']:.2f}x; same top-{K} ids: "
          f"{_agree(folder, 'ours_exact.npy', 'beir.npy', beir['queries_run'])} queries")
    for backend in args.hnsw_backends.split(","):
        if n > args.hnsw_max:
            print(f"hnsw {backend}: skipped above --hnsw-max {args.hnsw_max:,}")
            continue
        h = run_stage("hnsw", s, backend, str(args.m), str(args.efc), str(args.efs))
        line = (f"hnsw {backend:7s} (M={args.m}, efC={args.efc}, efS={args.efs}): build {h['build_s']:.1f} s, "
                f"{h['ms_per_query']:.3f} ms/query, recall@{K} {h['recall']:.4f}, rss {h['rss_mib']:.0f} MiB")
        if backend == "faiss":
            line += (f"; ours on this graph {h['ours_ms_per_query']:.3f} ms/query "
                     f"(ratio {h['ours_ms_per_query'] / h['ms_per_query']:.2f}x), recall {h['ours_recall']:.4f};"
                     f" exact ours/hnsw time {ours['ms_per_query'] / h['ms_per_query']:.1f}x")
        print(line)
    if args.skip_bm25:
        return
    bo = run_stage("bm25_ours", s)
    ba = run_stage("bm25_anchor", s)
    print(f"bm25   ours (streamed): index {bo['index_s']:.1f} s, {bo['ms_per_query']:.2f} ms/query, "
          f"rss {bo['rss_mib']:.0f} MiB")
    print(f"bm25   anchor (bm25s, texts in a list): index {ba['index_s']:.1f} s, "
          f"{ba['ms_per_query']:.2f} ms/query, rss {ba['rss_mib']:.0f} MiB")
    print(f"       ratio ours/anchor: index {bo['index_s'] / ba['index_s']:.2f}x, search "
          f"{bo['ms_per_query'] / ba['ms_per_query']:.2f}x, rss {bo['rss_mib'] / ba['rss_mib']:.2f}x; "
          f"same top-{K} ids: {_agree(folder, 'bm25_ours.npy', 'bm25_anchor.npy')} queries, same "
          f"top-{K} scores: {_same_scores(folder)} (ids differ only in the order of tied scores: "
          "bm25s does not break ties by corpus order)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--beir-max-gb", type=float, default=2.0)
    ap.add_argument("--hnsw-max", type=int, default=200_000,
                    help="skip the HNSW builds above this many chunks (a 1M build takes long on 2 cores)")
    ap.add_argument("--hnsw-backends", default="faiss,usearch")
    ap.add_argument("--m", type=int, default=32)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--efs", type=int, default=128)
    ap.add_argument("--minilm-texts", type=int, default=1000)
    ap.add_argument("--skip-minilm", action="store_true")
    ap.add_argument("--skip-bm25", action="store_true")
    ap.add_argument("--stage", nargs="+")
    args = ap.parse_args()
    if args.stage:
        name, *rest = args.stage
        fn = {"dense_index": lambda: stage_dense_index(Path(rest[0]), Path(rest[1])),
              "dense_search": lambda: stage_dense_search(Path(rest[0]), Path(rest[1])),
              "beir": lambda: stage_beir(Path(rest[0]), float(rest[1])),
              "hnsw": lambda: stage_hnsw(Path(rest[0]), rest[1], *map(int, rest[2:5])),
              "bm25_ours": lambda: stage_bm25_ours(Path(rest[0])),
              "bm25_anchor": lambda: stage_bm25_anchor(Path(rest[0])),
              "minilm": lambda: stage_minilm(int(rest[0]))}[name]
        out = fn()
        out["rss_mib"] = _peak_rss_mib()
        print(json.dumps(out))
        return
    print(f"python {' '.join(sys.argv)}\nload average before: {_load()}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="qe-retrieval-scale-") as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            bench_size(n, args, Path(tmp))
    if not args.skip_minilm:
        mm = run_stage("minilm", str(args.minilm_texts))
        cpu = mm["cpu"]
        print(f"\nMiniLM on CPU ({mm['torch_threads']} torch threads, {args.minilm_texts} texts of ~20 words): "
              f"raw encode {cpu['raw_texts_per_s']:.0f} texts/s, ours (Embedder) {cpu['ours_texts_per_s']:.0f} "
              f"texts/s (ratio {cpu['ours_texts_per_s'] / cpu['raw_texts_per_s']:.2f}x); 1M chunks ≈ "
              f"{cpu['1M_minutes_at_raw']:.0f} min")
        if mm["gpu"]:
            g = mm["cuda"]
            print(f"MiniLM on GPU: raw {g['raw_texts_per_s']:.0f} texts/s, ours {g['ours_texts_per_s']:.0f} texts/s")
        else:
            print("MiniLM on GPU: not measured: no GPU on this machine (torch.cuda.is_available() is False)")
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
