"""Seed 002's running figures: per dataset (or the run), and at each smaller k.

Every mean is an exact running sum (:class:`~queryeval.tasks.accum.Values`): nothing is kept
per question and the figures do not depend on the order of the records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from queryeval.metrics.mean import _SHIFT, ExactMean
from queryeval.tasks.accum import Values
from queryeval.tasks.retrieval.scoring import record_identity, single_figures, single_rank

_exact_add = ExactMean.add

MEAN_METRICS = ("mrr", "ndcg", "hit_rate", "precision", "map")
"""The per-question scores averaged in every dataset's figures, in the order they are
reported (``recall`` is averaged too, and listed where the seed's layout allows)."""


class _Binaryish(Values):
    """:class:`Values` whose :meth:`add` takes 0.0 and 1.0 (most of a question's figures: a
    missed question scores 0 everywhere, a hit at rank 1 scores 1) without the general
    float decomposition; the ones are counted apart and folded into the exact sum when it is
    read, so every mean and sum is the one ``Values`` gives, to the last bit
    (tests/tasks/test_retrieval_aggregate_fast.py)."""

    __slots__ = ("_ones",)

    def __init__(self) -> None:
        super().__init__()
        self._ones = 0

    def add(self, value: float) -> None:
        if value == 0.0:  # 0.0, -0.0, 0, False: adds nothing to the exact sum
            self._count += 1
        elif value == 1.0:
            self._count += 1
            self._ones += 1
        else:
            _exact_add(self, value)

    def merge(self, other: ExactMean) -> None:
        """Add ``other``'s values (an ``ExactMean``, or another ``_Binaryish``) as if each had
        been added here: the exact sums add, so every mean is the one adding them one by one
        gives (the non-finite values' IEEE sum keeps its value in any grouping)."""
        self._count += other._count
        self._total += other._total
        self._ones += getattr(other, "_ones", 0)
        if other._special is not None:
            self._special = other._special if self._special is None else self._special + other._special

    def _fold(self) -> None:
        if self._ones:
            self._total += self._ones << _SHIFT  # 1.0 as ExactMean keeps it: 1 * 2**1074
            self._ones = 0

    def sum(self) -> float:
        self._fold()
        return super().sum()

    def mean(self) -> float | None:
        self._fold()
        return super().mean()


def chunk_scores(chunks: list[dict]) -> list[float]:
    return [c["score"] for c in chunks if isinstance(c.get("score"), (int, float))]


class DatasetAcc:
    """Running figures of one dataset (or of the run): counts and exact means."""

    __slots__ = ("correct", "cols", "missed", "recall", "size", "wrong")

    def __init__(self, n_metrics: int) -> None:
        self.size = self.correct = self.missed = 0
        self.cols = [_Binaryish() for _ in range(n_metrics)]
        self.recall = _Binaryish()  # share of the question's relevant chunks in the top k
        self.wrong = _Binaryish()  # best score of each missed question that returned scores

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

    @classmethod
    def merged(cls, parts: Iterable[DatasetAcc], n_metrics: int) -> DatasetAcc:
        """The figures of every question of ``parts`` (e.g. the run's, from its datasets'):
        counts and exact sums added, so each is what adding the questions one by one gives
        (tests/tasks/test_retrieval_aggregate_fast.py)."""
        out = cls(n_metrics)
        for p in parts:
            out.size += p.size
            out.correct += p.correct
            out.missed += p.missed
            for a, b in zip(out.cols, p.cols, strict=True):
                a.merge(b)
            out.recall.merge(p.recall)
            out.wrong.merge(p.wrong)
        return out


class AtK:
    """Running recall, MRR and nDCG (and hit rate) at each smaller k, overall, and recall per
    dataset: the figures of the derived batches, so the run's own report shows every k."""

    def __init__(self, ks: list[int]) -> None:
        self.ks = ks
        names = ("recall", "mrr", "ndcg", "hit_rate")
        self.cols = {j: {m: _Binaryish() for m in names} for j in ks}
        self.per_ds: dict[Any, dict[int, Values]] = {}
        # per k: (its columns with their score keys, the recall key, k)
        self._plan = [(j, [(col, f"{name}@{j}") for name, col in self.cols[j].items()],
                       f"recall@{j}") for j in ks]

    def add(self, dataset: Any, cuts: list[dict[str, float]]) -> None:
        """``cuts``: the question's scores at each smaller k (``{metric@k: value}``)."""
        per = self.per_ds.get(dataset)
        if per is None:
            per = self.per_ds[dataset] = {j: _Binaryish() for j in self.ks}
        for (j, cols, recall_key), scores in zip(self._plan, cuts, strict=True):
            for col, key in cols:
                col.add(scores[key])
            per[j].add(scores[recall_key])

    def add_block(self, records: list[dict], cuts: Callable[[list[dict], int], list[Any]],
                  exact: bool, direct: bool) -> None:
        """Add ``records``' figures at each smaller k, in order: a record with one relevant
        chunk of relevance 1 from its rank in its first max-k chunks (:meth:`add_rank`, when
        ``direct``: the cut at k is the first k chunks, no ``min_score``), the others from
        ``cuts(records, k)`` (the task's cuts, one engine pass per k)."""
        ranks: list[tuple[int | None] | None] = [None] * len(records)
        rest = []
        top = max(self.ks)
        for i, r in enumerate(records):
            identity = record_identity(r, exact) if direct else None
            if identity is None:
                rest.append(r)
            else:
                source = r.get("all_retrieved_chunks") or r["retrieved_chunks"]
                ranks[i] = (single_rank(source[:top], identity, exact),)
        per_k = [cuts(rest, j) for j in self.ks] if rest else []
        n = 0
        for r, rank in zip(records, ranks, strict=True):
            if rank is None:
                self.add(r["dataset"], [c[n].scores for c in per_k])
                n += 1
            else:
                self.add_rank(r["dataset"], rank[0])

    def add_rank(self, dataset: Any, rank: int | None) -> None:
        """A question with one relevant chunk of relevance 1, first matched at the 1-based
        ``rank`` of its uncut ranking (None: not there): its figures at each smaller k are
        those of :func:`~queryeval.tasks.retrieval.scoring.single_figures`, added as
        :meth:`add` adds them."""
        per = self.per_ds.get(dataset)
        if per is None:
            per = self.per_ds[dataset] = {j: _Binaryish() for j in self.ks}
        for j in self.ks:  # single_figures' order: recall, hit_rate, mrr, ndcg, map, precision
            recall, hit_rate, mrr, ndcg = single_figures(rank, j)[:4]
            c = self.cols[j]
            c["recall"].add(recall)
            c["mrr"].add(mrr)
            c["ndcg"].add(ndcg)
            c["hit_rate"].add(hit_rate)
            per[j].add(recall)

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
