"""Seed 002's running figures: per dataset (or the run), and at each smaller k.

Every mean is an exact running sum (:class:`~queryeval.tasks.accum.Values`): nothing is kept
per question and the figures do not depend on the order of the records.
"""

from __future__ import annotations

from typing import Any

from queryeval.tasks.accum import Values

MEAN_METRICS = ("mrr", "ndcg", "hit_rate", "precision", "map")
"""The per-question scores averaged in every dataset's figures, in the order they are
reported (``recall`` is averaged too, and listed where the seed's layout allows)."""


def chunk_scores(chunks: list[dict]) -> list[float]:
    return [c["score"] for c in chunks if isinstance(c.get("score"), (int, float))]


class DatasetAcc:
    """Running figures of one dataset (or of the run): counts and exact means."""

    __slots__ = ("correct", "cols", "missed", "recall", "size", "wrong")

    def __init__(self, n_metrics: int) -> None:
        self.size = self.correct = self.missed = 0
        self.cols = [Values() for _ in range(n_metrics)]
        self.recall = Values()  # share of the question's relevant chunks in the top k
        self.wrong = Values()  # best score of each missed question that returned scores

    def add(self, values: list[float], recall: float, hit: bool, best: float | None) -> None:
        self.size += 1
        for col, v in zip(self.cols, values, strict=True):
            col.add(v)
        self.recall.add(recall)
        if hit:
            self.correct += 1
        else:
            self.missed += 1
            if best is not None:
                self.wrong.add(best)

    def means(self) -> list[float | None]:
        return [c.mean() for c in self.cols]


class AtK:
    """Running recall, MRR and nDCG (and hit rate) at each smaller k, overall, and recall per
    dataset: the figures of the derived batches, so the run's own report shows every k."""

    def __init__(self, ks: list[int]) -> None:
        self.ks = ks
        names = ("recall", "mrr", "ndcg", "hit_rate")
        self.cols = {j: {m: Values() for m in names} for j in ks}
        self.per_ds: dict[Any, dict[int, Values]] = {}

    def add(self, dataset: Any, cuts: list[dict[str, float]]) -> None:
        """``cuts``: the question's scores at each smaller k (``{metric@k: value}``)."""
        per = self.per_ds.setdefault(dataset, {j: Values() for j in self.ks})
        for j, scores in zip(self.ks, cuts, strict=True):
            for name, col in self.cols[j].items():
                col.add(scores[f"{name}@{j}"])
            per[j].add(scores[f"recall@{j}"])

    def overall(self, k: int, recall_k: float | None, several: bool) -> dict:
        out: dict[str, Any] = {}
        for j in self.ks:
            c = self.cols[j]
            out.update({f"recall@{j}": c["recall"].mean(), f"mrr@{j}": c["mrr"].mean(),
                        f"ndcg@{j}": c["ndcg"].mean()})
            if several:  # recall and hit rate differ only with several relevant chunks
                out[f"hit_rate@{j}"] = c["hit_rate"].mean()
        out[f"recall@{k}"] = recall_k
        return out

    def dataset(self, ds: Any, k: int, recall_k: float | None) -> dict:
        out = {f"recall@{j}": v.mean() for j, v in self.per_ds[ds].items()}
        out[f"recall@{k}"] = recall_k
        return out
