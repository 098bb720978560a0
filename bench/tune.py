"""Cost of field metrics for N = 1..100 from one ranking, against one N and against one
retrieval per N (seed 004's efficiency claim). Synthetic: 200 questions, 3 fields, 5,000 values
per field, 1-5 ground-truth items per question; a "retrieval" is an argsort of random scores,
so no model is needed.

    python bench/tune.py [--repeat 5]

Goal: sweep / one-N <= 1.1x (the metrics share one ranking); per-N recomputation ~100x.
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
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
