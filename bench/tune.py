"""Cost of field metrics for N = 1..100 from one ranking, against one N and against one
retrieval per N (seed 004's efficiency claim). Synthetic: 200 questions, 3 fields, 5,000 values
per field, 1-5 ground-truth items per question; a "retrieval" is an argsort of random scores,
so no model is needed.

    python bench/tune.py [--repeat 5]
    python bench/tune.py --real [--models bm25,minilm]   # real retrievers, shipped example

Goal: sweep / one-N <= 1.1x (the metrics share one ranking); per-N recomputation ~100x.
``--real`` runs the same comparison with the built-in retrievers on
examples/fields (ingredients x evaluation table): RETRIEVE (index each field once, rank every
question once) + metrics for one N, for every N = 1..values, and one RETRIEVE per N (the
anchor; embeddings come from a warm disk cache, so it is the cheapest honest per-N loop).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from queryeval.metrics.fields import recall_matrix_from_hits

QUESTIONS, FIELDS, VALUES, MAX_N = 200, 3, 5_000, 100


def make_problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    scores = rng.random((FIELDS, QUESTIONS, VALUES))
    truth = [[rng.choice(VALUES, size=int(rng.integers(1, 6)), replace=False)
              for _ in range(QUESTIONS)] for _ in range(FIELDS)]
    return scores, truth


def retrieve(scores_q: np.ndarray) -> np.ndarray:
    """The simulated retriever: every value ranked by descending score (stable)."""
    return np.argsort(-scores_q, kind="stable")


def metrics_one_n(order: np.ndarray, gt: np.ndarray, n: int) -> float:
    return np.count_nonzero(np.isin(order[:n], gt)) / len(gt)


def run_one_n(scores, truth, with_retrieval: bool, orders):
    out = 0.0
    for f in range(FIELDS):
        for q in range(QUESTIONS):
            order = retrieve(scores[f, q]) if with_retrieval else orders[f][q]
            out += metrics_one_n(order, truth[f][q], MAX_N)
    return out


def run_sweep(scores, truth, with_retrieval: bool, orders):
    out = 0.0
    for f in range(FIELDS):
        hits = np.empty((QUESTIONS, MAX_N), dtype=bool)
        for q in range(QUESTIONS):
            order = retrieve(scores[f, q]) if with_retrieval else orders[f][q]
            hits[q] = np.isin(order[:MAX_N], truth[f][q])
        sizes = np.array([len(g) for g in truth[f]])
        curves = recall_matrix_from_hits(hits, sizes)  # recall at every N = 0..MAX_N
        out += curves[:, MAX_N].sum()
    return out


PER_N_STRIDE = 10  # the anchor is measured on every 10th N and scaled by 10 (it is ~100x)


def run_per_n(scores, truth):
    out = 0.0
    for n in range(1, MAX_N + 1, PER_N_STRIDE):
        for f in range(FIELDS):
            for q in range(QUESTIONS):
                out += metrics_one_n(retrieve(scores[f, q]), truth[f][q], n)
    return out


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def real(models: list[str], repeat: int) -> None:
    """The comparison with real retrievers on the shipped example."""
    import os
    import tempfile
    from pathlib import Path

    from queryeval.metrics.fields import recall_matrix
    from queryeval.metrics.ranking import recall_from_ranks
    from queryeval.suite.fields import load_data_table, load_evaluation_table
    from queryeval.tune.retrieve import default_factory, rank_fields, ranks_for

    ex = Path(__file__).resolve().parents[1] / "examples" / "fields"
    os.environ.setdefault("QUERYEVAL_CACHE_DIR", tempfile.mkdtemp(prefix="qe-bench-"))
    table = load_data_table(ex / "ingredients.csv")
    ev = load_evaluation_table(ex / "evaluation.csv")
    factory = default_factory(cache=True, device="cpu")
    max_n = max(len(table.fields[f].values) for f in ev.fields)
    rank_fields(table, ev.questions, ev.fields, models, factory=factory)  # warm model + cache

    def retrieve():
        return rank_fields(table, ev.questions, ev.fields, models, factory=factory)

    def one_n(n: int) -> float:
        ranked, out = retrieve(), 0.0
        for f in ev.fields:
            for m in models:
                for r in ranks_for(ranked[f].orders[m], ranked[f].values, ev.ground_truth[f]):
                    out += recall_from_ranks(r, n)
        return out

    def sweep() -> float:
        ranked, out = retrieve(), 0.0
        for f in ev.fields:
            for m in models:
                ranks = ranks_for(ranked[f].orders[m], ranked[f].values, ev.ground_truth[f])
                out += recall_matrix(ranks, max_n).sum()
        return out

    t_one = t_sweep = float("inf")
    for _ in range(repeat):  # interleaved, so load changes hit both alike
        t_one = min(t_one, best_of(lambda: one_n(max_n), 1))
        t_sweep = min(t_sweep, best_of(sweep, 1))
    t_per_n = best_of(lambda: [one_n(n) for n in range(1, max_n + 1)], 1)
    print(f"real retrievers {models}: {len(ev.questions)} questions x {len(ev.fields)} fields, "
          f"N = 1..{max_n}")
    print(f"retrieve + metrics: one N {t_one * 1e3:8.1f} ms | all N {t_sweep * 1e3:8.1f} ms | "
          f"ratio {t_sweep / t_one:.2f}x")
    print(f"one retrieval per N (anchor): {t_per_n * 1e3:8.1f} ms | all N from one ranking is "
          f"{t_per_n / t_sweep:.0f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--real", action="store_true", help="real retrievers on examples/fields")
    parser.add_argument("--models", default="bm25,minilm", help="with --real: comma-separated")
    args = parser.parse_args()
    if args.real:
        real([m.strip() for m in args.models.split(",") if m.strip()], args.repeat)
        return
    scores, truth = make_problem()
    orders = [[retrieve(scores[f, q]) for q in range(QUESTIONS)] for f in range(FIELDS)]
    # same answers at N = MAX_N from both paths
    assert abs(run_one_n(scores, truth, False, orders) - run_sweep(scores, truth, False, orders)) < 1e-9

    one = best_of(lambda: run_one_n(scores, truth, False, orders), args.repeat)
    sweep = best_of(lambda: run_sweep(scores, truth, False, orders), args.repeat)
    one_r = best_of(lambda: run_one_n(scores, truth, True, orders), args.repeat)
    sweep_r = best_of(lambda: run_sweep(scores, truth, True, orders), args.repeat)
    per_n = best_of(lambda: run_per_n(scores, truth), 1) * PER_N_STRIDE
    print(f"{QUESTIONS} questions x {FIELDS} fields x {VALUES} values, N = 1..{MAX_N}")
    print(f"metrics only     : one N {one * 1e3:8.1f} ms | all N {sweep * 1e3:8.1f} ms | "
          f"ratio {sweep / one:.2f}x")
    print(f"with retrieval   : one N {one_r * 1e3:8.1f} ms | all N {sweep_r * 1e3:8.1f} ms | "
          f"ratio {sweep_r / one_r:.2f}x")
    print(f"one retrieval per N (anchor, {MAX_N // PER_N_STRIDE} N measured x{PER_N_STRIDE}): "
          f"{per_n * 1e3:8.1f} ms | all N from one ranking is "
          f"{per_n / sweep_r:.0f}x faster")


if __name__ == "__main__":
    main()
