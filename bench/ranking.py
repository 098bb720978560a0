"""Ranking engine benchmark: queryeval vs pytrec_eval vs ranx, from dicts and from TREC files.

    python bench/ranking.py                 # 100k queries x 100 docs
    python bench/ranking.py --queries 10000

Synthetic, seeded: each query retrieves 100 of 1,000 documents with random float scores and
has 5 judgements (relevance 0-2). Metrics: ndcg@10, recall@100, mrr@10, map@100. pytrec_eval
has no recip_rank cutoff, so it computes recip_rank in place of mrr@10 (same cost).
Goals: >= 5x pytrec_eval from dicts, >= 20x from files. Timings are wall-clock, one run each.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

METRICS = ["ndcg@10", "recall@100", "mrr@10", "map@100"]
PYTREC = {"ndcg_cut.10", "recall.100", "recip_rank", "map_cut.100"}


def make_data(n_queries: int, depth: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(1000)]
    scores = rng.random((n_queries, depth)).tolist()
    run, qrels = {}, {}
    for i in range(n_queries):
        got = rng.choice(1000, depth, replace=False).tolist()
        run[f"q{i}"] = {docs[j]: s for j, s in zip(got, scores[i], strict=False)}
        judged = rng.choice(1000, 5, replace=False).tolist()
        qrels[f"q{i}"] = {docs[j]: int(g) for j, g in zip(judged, rng.integers(0, 3, 5).tolist(), strict=False)}
    return qrels, run


def write_files(qrels, run, folder: Path) -> tuple[Path, Path]:
    q, r = folder / "qrels.txt", folder / "run.txt"
    with open(q, "w") as fh:
        for qid, judged in qrels.items():
            fh.write("".join(f"{qid} 0 {d} {g}\n" for d, g in judged.items()))
    with open(r, "w") as fh:
        for qid, ranked in run.items():
            items = sorted(ranked.items(), key=lambda kv: -kv[1])
            fh.write("".join(f"{qid} Q0 {d} {i + 1} {s!r} bench\n"
                             for i, (d, s) in enumerate(items)))
    return q, r


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--no-ranx", action="store_true", help="skip ranx (its JIT takes ~20 s)")
    args = ap.parse_args()

    from queryeval.metrics.ranking import evaluate
    from queryeval.suite.trec import evaluate_files

    print(f"{args.queries:,} queries x {args.depth} docs; metrics {', '.join(METRICS)}")
    qrels, run = make_data(args.queries, args.depth)
    rows: list[tuple[str, str, float]] = []

    t_ours, ours = timed(lambda: evaluate(qrels, run, METRICS))
    rows.append(("dicts", "queryeval", t_ours))
    import pytrec_eval

    t_py, ref = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(run))
    rows.append(("dicts", "pytrec_eval", t_py))
    ndcg = float(np.mean([v["ndcg_cut_10"] for v in ref.values()]))
    assert abs(ndcg - ours["ndcg@10"]) < 1e-9, (ndcg, ours["ndcg@10"])
    if not args.no_ranx:
        import ranx

        def _ranx():
            return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), METRICS)

        t1, _ = timed(_ranx)
        t2, _ = timed(_ranx)
        rows.append(("dicts", "ranx (1st call, incl. JIT)", t1))
        rows.append(("dicts", "ranx (2nd call, no JIT)", t2))

    with tempfile.TemporaryDirectory() as tmp:
        qpath, rpath = write_files(qrels, run, Path(tmp))
        t_f, ours_f = timed(lambda: evaluate_files(qpath, rpath, METRICS))
        rows.append(("files", "queryeval", t_f))
        assert abs(ours_f["ndcg@10"] - ours["ndcg@10"]) < 1e-9

        def _pytrec_files():
            with open(qpath) as fq, open(rpath) as fr:
                q, r = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
            return pytrec_eval.RelevanceEvaluator(q, PYTREC).evaluate(r)

        t_pf, _ = timed(_pytrec_files)
        rows.append(("files", "pytrec_eval (parse_qrel/parse_run)", t_pf))
        if not args.no_ranx:
            def _ranx_files():
                return ranx.evaluate(ranx.Qrels.from_file(str(qpath), kind="trec"),
                                     ranx.Run.from_file(str(rpath), kind="trec"), METRICS)

            t_rf, _ = timed(_ranx_files)
            rows.append(("files", "ranx (JIT already warm)", t_rf))

    base = {src: t for src, name, t in rows if name == "queryeval"}
    print(f"{'input':6} {'tool':38} {'seconds':>9} {'x queryeval':>12}")
    for src, name, t in rows:
        print(f"{src:6} {name:38} {t:9.2f} {t / base[src]:12.1f}")
    print(f"speed-up vs pytrec_eval: dicts {t_py / t_ours:.1f}x (goal 5x), "
          f"files {t_pf / t_f:.1f}x (goal 20x)")


if __name__ == "__main__":
    main()
