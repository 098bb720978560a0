"""What the tests of trec measures share with other test files: ``QRELS``, ``RUN``, ``_random_pair``, ``_ranked`` (moved here from test_trec_measures.py)."""

from __future__ import annotations

import numpy as np

NONPOOL, UNJUDGED = -1, -2  # trec_eval's RELVALUE_NONPOOL / RELVALUE_UNJUDGED


def _random_pair(seed: int, n_queries: int = 40):
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    docs = [f"d{j}" for j in range(40)]
    for i in range(n_queries):
        q = f"q{i}"
        if rng.random() < 0.9:
            judged = rng.choice(40, rng.integers(1, 25), replace=False)
            levels = rng.choice([-1, 0, 0, 0, 1, 1, 2, 3], judged.size)
            levels[0] = max(levels[0], 0)  # pytrec_eval can hang on all-negative queries
            qrels[q] = {docs[j]: int(v) for j, v in zip(judged, levels, strict=True)}
        if rng.random() < 0.85:
            got = rng.choice(40, rng.integers(0, 30), replace=False)
            scores = rng.integers(0, 6, got.size) / 2  # heavy ties
            run[q] = {docs[j]: float(s) for j, s in zip(got, scores, strict=True)}
    return qrels, run


def _ranked(qrels_q: dict[str, int], run_q: dict[str, float], judged_only: bool) -> list[int]:
    """trec_eval's relevance list for one query: score desc, docid desc; -J drops unjudged."""
    order = sorted(run_q.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    rels = []
    for doc, _ in order:
        r = qrels_q.get(doc)
        rels.append(NONPOOL if r is None else (UNJUDGED if r < 0 else r))
    if judged_only:
        rels = [r for r in rels if r >= 0]
    return rels


# Ranking of the hand example: d (3.0, judged -1: pooled, unjudged), c (2.0, judged 0),
# then e, b, a tie at 1.0 -> docid descending: e (not judged), b (2), a (1).
QRELS = {"q1": {"a": 1, "b": 2, "c": 0, "d": -1, "f": 1}}


RUN = {"q1": {"a": 1.0, "b": 1.0, "c": 2.0, "d": 3.0, "e": 1.0}}
