"""Field-value retrieval metrics (seed 004): recall, MRR, depth needed, passed.

A *ranking* is the list of a field's documents (its distinct values) in the order a retriever
ranked them for one question; it is computed once per question and field and serves every
cut-off ``N``. Every metric here works from that ranking and the question's ground truth for
the field, so it is independent of the retriever.

Definitions (all exact, case-sensitive string equality; ground-truth items are de-duplicated):

* ``recall@N``  = distinct ground-truth items among the first N values / distinct items.
* ``MRR``       = sum over ground-truth items of 1/rank / distinct items, over the *full*
  ranking by default (an item absent from the ranking contributes 0); an optional cut-off
  ``n`` counts only items ranked within the first ``n``.
* ``depth``     = the smallest N with recall@N == 1 (the largest rank among the items);
  ``None`` when some item never appears in the ranking.
* ``passed@N``  = recall@N == 1, i.e. ``depth is not None and depth <= N``.

Zero-division rule: an empty ground truth (nothing to find) gives recall 1.0, MRR 1.0,
depth 0 and passed True at every N, including N = 0.

Recall and MRR from ranks are the package's one recall and reciprocal rank,
:func:`queryeval.metrics.ranking.recall_from_ranks` and
:func:`~queryeval.metrics.ranking.mrr_from_ranks` (with :data:`NOT_FOUND`), which this module
reads; the trec_eval engine and the retrieval task are written with the same kernels.
Every public function takes the ground truth first, then the ranking.

The vectorised helpers take the *ranks* of the ground-truth items (1-based positions in the
ranking, :data:`NOT_FOUND` for an item that is absent) and compute recall for every
N = 0..max_n in one pass: ranks are found once, then a histogram and a cumulative sum give the
whole recall curve.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from queryeval.metrics.mean import ExactMean
from queryeval.metrics.ranking import NOT_FOUND, mrr_from_ranks, recall_from_ranks

ESCAPE = "';"
SEPARATOR = ";"


def split_ground_truth(text: str | None) -> list[str]:
    """Split a ground-truth cell into its items.

    Grammar (read left to right):

    * ``;`` separates items;
    * the two characters ``';`` stand for a literal ``;`` inside an item (the escape);
    * any other ``'`` is a literal apostrophe;
    * each item is stripped of surrounding whitespace; items empty after stripping are dropped
      (so ``"a;;b"``, ``"a;"`` and ``" ; "`` hold no empty item);
    * duplicates are dropped, keeping the first occurrence (metrics count distinct items).

    Examples: ``"a';b;c"`` -> ``["a;b", "c"]``; ``"a';"`` -> ``["a;"]``; ``"';"`` -> ``[";"]``;
    ``"O'Neil;x"`` -> ``["O'Neil", "x"]``; ``""`` and ``None`` -> ``[]``.

    Known limit of the grammar: an item cannot *end* with an apostrophe when another item
    follows it (``"O';x"`` reads as the single item ``"O;x"``).
    """
    if text is None:
        return []
    items: list[str] = []
    current: list[str] = []
    i = 0
    length = len(text)
    while i < length:
        if text.startswith(ESCAPE, i):
            current.append(SEPARATOR)
            i += 2
            continue
        ch = text[i]
        if ch == SEPARATOR:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    items.append("".join(current))
    return distinct(item.strip() for item in items if item.strip())


def join_ground_truth(items: Iterable[str]) -> str:
    """Inverse of :func:`split_ground_truth` for items without surrounding whitespace."""
    return SEPARATOR.join(item.replace(SEPARATOR, ESCAPE) for item in items)


def distinct(items: Iterable[str]) -> list[str]:
    """Items without duplicates, first occurrence kept (order matters for reports only)."""
    return list(dict.fromkeys(items))


def _items(ground_truth: Sequence[str] | str) -> list[str]:
    if isinstance(ground_truth, str):
        return split_ground_truth(ground_truth)
    return distinct(ground_truth)


def ground_truth_ranks(
    ground_truth: Sequence[str] | str, ranked_values: Sequence[str], limit: int | None = None
) -> np.ndarray:
    """1-based ranks of the distinct ground-truth items in ``ranked_values``.

    ``ground_truth`` is a list of items or a raw cell (split with :func:`split_ground_truth`).
    A value's rank is its first position. Items absent from the ranking (or ranked beyond
    ``limit`` when given: only the first ``limit`` values are scanned) get :data:`NOT_FOUND`.
    """
    items = _items(ground_truth)
    out = np.full(len(items), NOT_FOUND, dtype=np.int64)
    if not items:
        return out
    wanted = {item: i for i, item in enumerate(items)}
    missing = len(items)
    scan = ranked_values if limit is None else ranked_values[:limit]
    for position, value in enumerate(scan, start=1):
        slot = wanted.get(value)
        if slot is not None and out[slot] == NOT_FOUND:
            out[slot] = position
            missing -= 1
            if missing == 0:
                break
    return out


def ranks_from_order(order: np.ndarray, relevant_ids: np.ndarray, n_docs: int) -> np.ndarray:
    """Ranks of document ids ``relevant_ids`` in ``order`` (a permutation prefix of 0..n_docs-1).

    The numeric counterpart of :func:`ground_truth_ranks` for retrievers that return document
    indices: an inverse permutation gives every rank at once. Ids missing from ``order`` (a
    truncated ranking) get :data:`NOT_FOUND`.
    """
    position = np.full(n_docs, NOT_FOUND, dtype=np.int64)
    position[np.asarray(order, dtype=np.int64)] = np.arange(1, len(order) + 1, dtype=np.int64)
    return position[np.asarray(relevant_ids, dtype=np.int64)]


# ---------------------------------------------------------------- per question, from ranks


def depth_from_ranks(ranks: np.ndarray) -> int | None:
    """Smallest N retrieving every item (0 for empty ground truth); None if one is absent."""
    if len(ranks) == 0:
        return 0
    deepest = int(ranks.max())
    return None if deepest == NOT_FOUND else deepest


def recall_curve(ranks: np.ndarray, max_n: int) -> np.ndarray:
    """recall@N for every N = 0..max_n at once (index N); float64 array of length max_n + 1.

    A histogram of the ranks and a cumulative sum: O(len(ranks) + max_n).
    """
    if max_n < 0:
        raise ValueError(f"max_n must be >= 0, got {max_n}")
    if len(ranks) == 0:
        return np.ones(max_n + 1)
    inside = ranks[ranks <= max_n]
    counts = np.bincount(inside, minlength=max_n + 1)
    return np.cumsum(counts) / len(ranks)


def recall_matrix(ranks_per_question: Sequence[np.ndarray], max_n: int) -> np.ndarray:
    """Recall curves of many questions: shape (questions, max_n + 1), row q = recall_curve(q)."""
    if max_n < 0:
        raise ValueError(f"max_n must be >= 0, got {max_n}")
    n_q = len(ranks_per_question)
    sizes = np.array([len(r) for r in ranks_per_question], dtype=np.int64)
    out = np.zeros((n_q, max_n + 1))
    if n_q == 0:
        return out
    rows = np.repeat(np.arange(n_q), sizes)
    flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in ranks_per_question]) if sizes.sum() else np.zeros(0, np.int64)
    keep = flat <= max_n
    np.add.at(out, (rows[keep], flat[keep]), 1.0)
    np.cumsum(out, axis=1, out=out)
    empty = sizes == 0
    out[~empty] /= sizes[~empty, None]
    out[empty] = 1.0
    return out


def recall_matrix_from_hits(hits: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Recall curves from a hit matrix: ``hits[q, j]`` is True when question q's value at rank
    j + 1 is a ground-truth item; ``sizes[q]`` its number of distinct items. Returns shape
    (questions, hits.shape[1] + 1); a row with size 0 (empty ground truth) is all 1.0.
    """
    hits = np.asarray(hits, dtype=bool)
    sizes = np.asarray(sizes, dtype=np.int64)
    n_q, width = hits.shape
    out = np.zeros((n_q, width + 1))
    np.cumsum(hits, axis=1, out=out[:, 1:])
    empty = sizes == 0
    out[~empty] /= sizes[~empty, None]
    out[empty] = 1.0
    return out


def depths(ranks_per_question: Sequence[np.ndarray]) -> list[int | None]:
    """:func:`depth_from_ranks` for each question."""
    return [depth_from_ranks(r) for r in ranks_per_question]


# ---------------------------------------------------------------- per question, from values


def recall(ground_truth: Sequence[str] | str, ranked_values: Sequence[str], n: int | None = None) -> float:
    """Distinct ground-truth items among the first ``n`` values / distinct items.

    ``n`` defaults to the number of distinct ground-truth items (the seed's RECALL default).
    Empty ground truth -> 1.0.
    """
    items = _items(ground_truth)
    if n is None:
        n = len(items)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return recall_from_ranks(ground_truth_ranks(items, ranked_values, limit=n), n)


def mrr(ground_truth: Sequence[str] | str, ranked_values: Sequence[str], n: int | None = None) -> float:
    """Seed 004's MRR for one question: sum of 1/rank over ground-truth items / distinct items.

    Over the full ranking unless ``n`` is given. Items at ranks 1, 2, 3, 4 contribute
    1, 0.5, 0.(3), 0.25. Absent items contribute 0; empty ground truth -> 1.0.
    """
    return mrr_from_ranks(ground_truth_ranks(ground_truth, ranked_values, limit=n), n)


def depth_needed(ground_truth: Sequence[str] | str, ranked_values: Sequence[str]) -> int | None:
    """The smallest N whose top N holds every ground-truth item; None if one never appears."""
    return depth_from_ranks(ground_truth_ranks(ground_truth, ranked_values))


def passed(ground_truth: Sequence[str] | str, ranked_values: Sequence[str], n: int) -> bool:
    """True when every ground-truth item is among the first ``n`` values (recall@n == 1)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    depth = depth_from_ranks(ground_truth_ranks(ground_truth, ranked_values, limit=n))
    return depth is not None and depth <= n


# ---------------------------------------------------------------- aggregates


@dataclass(frozen=True)
class FieldScore:
    """One question's scores on one field at a chosen N."""

    field: str
    recall: float
    mrr: float
    passed: bool


@dataclass(frozen=True)
class QuestionScore:
    """One question over all its evaluated fields: recall and MRR are means over fields,
    passed requires every field to pass (the seed: ``[Passed] = [Avg Recall] = 1``)."""

    recall: float
    mrr: float
    passed: bool


@dataclass(frozen=True)
class Aggregate:
    """Suite-level figures. With no questions the rates are None (nothing was measured)."""

    passed: int
    questions: int
    pass_rate: float | None
    avg_recall: float | None
    mrr: float | None


def question_score(fields: Sequence[FieldScore]) -> QuestionScore:
    """Combine a question's field scores; a question with no evaluated field is an error."""
    if not fields:
        raise ValueError("a question needs at least one evaluated field")
    return QuestionScore(
        recall=math.fsum(f.recall for f in fields) / len(fields),
        mrr=math.fsum(f.mrr for f in fields) / len(fields),
        passed=all(f.passed for f in fields),
    )


class AggregateAccumulator:
    """:func:`aggregate` one question at a time, for a stream of questions: :meth:`add`
    each, then :meth:`result`. Recall and MRR are exact running means
    (:class:`~queryeval.metrics.mean.ExactMean`: correctly rounded, order-independent,
    constant memory)."""

    __slots__ = ("_mrrs", "_passed", "_recalls")

    def __init__(self) -> None:
        self._recalls = ExactMean()
        self._mrrs = ExactMean()
        self._passed = 0

    def add(self, recall: float, mrr: float, passed: bool) -> None:
        """One question's recall, MRR and whether it passed."""
        self._recalls.add(recall)
        self._mrrs.add(mrr)
        if passed:
            self._passed += 1

    def __len__(self) -> int:
        return len(self._recalls)

    def result(self) -> Aggregate:
        count = len(self._recalls)
        if count == 0:
            return Aggregate(passed=0, questions=0, pass_rate=None, avg_recall=None, mrr=None)
        return Aggregate(
            passed=self._passed,
            questions=count,
            pass_rate=self._passed / count,
            avg_recall=self._recalls.mean(),
            mrr=self._mrrs.mean(),
        )


def aggregate(questions: Sequence[QuestionScore]) -> Aggregate:
    """``passed`` (count), ``pass_rate``, ``avg_recall`` and ``mrr`` (means over questions).

    A thin wrapper over :class:`AggregateAccumulator`."""
    acc = AggregateAccumulator()
    for q in questions:
        acc.add(q.recall, q.mrr, q.passed)
    return acc.result()


def score(target: Sequence[str] | str, ranked_values: Sequence[str], *, n: int | None = None,
          field: str = "") -> FieldScore:
    """One field of one question in the uniform order of every family's ``score`` (ground
    truth first): recall and MRR of ``ranked_values`` within the top ``n`` (all when None),
    passed when every ground-truth value is found there."""
    top = len(ranked_values) if n is None else n
    return FieldScore(field=field, recall=recall(target, ranked_values, top),
                      mrr=mrr(target, ranked_values, top), passed=passed(target, ranked_values, top))
