"""The tuning problem: per field, the ranks of each question's ground truth and a token cost.

A plan gives every field a cut-off N_f. Its value is the lexicographic objective

1. ``passed``: questions with N_f >= depth(f, q) for every field f (a question whose ground
   truth is missing from some field's ranking, or ranked beyond that field's last value, can
   never pass);
2. ``recall``: mean over questions and fields of recall@N_f;
3. ``tokens``: sum of N_f x cost_f, smaller is better;

subject to an optional budget ``tokens <= B``. Recall is kept as an exact fraction so that
ties are ties (plans are compared on exact rationals, never on rounded floats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from queryeval.metrics.fields import depth_from_ranks, ground_truth_ranks
from queryeval.metrics.ranking import NOT_FOUND


@dataclass(frozen=True)
class FieldProblem:
    """One field as the tuner sees it (its model already chosen).

    ``ranks[q]`` holds the 1-based ranks of question q's distinct ground-truth items in that
    question's ranking of the field (:data:`~queryeval.metrics.ranking.NOT_FOUND` for an absent
    item; an empty array for an empty ground truth). ``max_n`` is the number of values the
    field has (N never exceeds it); ``cost`` is the tokens one retrieved value costs.
    """

    name: str
    cost: int
    max_n: int
    ranks: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if self.cost < 0:
            raise ValueError(f"{self.name}: token cost must be >= 0, got {self.cost}")
        if self.max_n < 0:
            raise ValueError(f"{self.name}: max_n must be >= 0, got {self.max_n}")

    @classmethod
    def from_rankings(
        cls,
        name: str,
        rankings: Sequence[Sequence[str]],
        ground_truths: Sequence[Sequence[str] | str],
        cost: int,
        max_n: int | None = None,
    ) -> FieldProblem:
        """Build from per-question ranked values and ground truth (lists or raw cells).

        ``max_n`` defaults to the longest ranking.
        """
        if len(rankings) != len(ground_truths):
            raise ValueError(
                f"{name}: {len(rankings)} rankings for {len(ground_truths)} questions"
            )
        ranks = tuple(ground_truth_ranks(g, r) for r, g in zip(rankings, ground_truths, strict=True))
        if max_n is None:
            max_n = max((len(r) for r in rankings), default=0)
        return cls(name=name, cost=int(cost), max_n=int(max_n), ranks=ranks)

    @property
    def questions(self) -> int:
        return len(self.ranks)

    def depth(self, q: int) -> int | None:
        """Depth needed for question q within this field's ``max_n`` values (None: never)."""
        d = depth_from_ranks(self.ranks[q])
        return d if d is not None and d <= self.max_n else None

    def found(self, q: int, n: int) -> int:
        """Ground-truth items of question q within the first n values."""
        n = min(n, self.max_n)
        return int(np.count_nonzero(self.ranks[q] <= n))


@dataclass(frozen=True, order=True)
class Objective:
    """A plan's value; ``key()`` orders plans (larger is better)."""

    passed: int
    recall: Fraction
    tokens: int

    def key(self) -> tuple[int, Fraction, int]:
        return (self.passed, self.recall, -self.tokens)


def check_fields(fields: Sequence[FieldProblem]) -> int:
    """Validate that every field has the same questions; return the question count."""
    if not fields:
        raise ValueError("tuning needs at least one field")
    counts = {f.questions for f in fields}
    if len(counts) != 1:
        raise ValueError(f"fields disagree on the number of questions: {sorted(counts)}")
    return counts.pop()


def field_recall(field: FieldProblem, q: int, n: int) -> Fraction:
    """Exact recall@n of question q on ``field`` (1 for an empty ground truth)."""
    k = len(field.ranks[q])
    return Fraction(1) if k == 0 else Fraction(field.found(q, n), k)


def evaluate_plan(fields: Sequence[FieldProblem], ns: Sequence[int]) -> Objective:
    """The exact objective of any plan ``ns`` (N_f >= 0; N beyond max_n retrieves max_n)."""
    n_q = check_fields(fields)
    if len(ns) != len(fields):
        raise ValueError(f"{len(ns)} values of N for {len(fields)} fields")
    if any(n < 0 for n in ns):
        raise ValueError(f"N must be >= 0: {list(ns)}")
    passed = 0
    for q in range(n_q):
        ok = True
        for f, n in zip(fields, ns, strict=True):
            d = f.depth(q)
            if d is None or d > n:
                ok = False
                break
        passed += ok
    total = sum(
        (field_recall(f, q, n) for f, n in zip(fields, ns, strict=True) for q in range(n_q)), Fraction(0)
    )
    recall = total / (n_q * len(fields)) if n_q else Fraction(1)
    tokens = sum(int(n) * f.cost for f, n in zip(fields, ns, strict=True))
    return Objective(passed=passed, recall=recall, tokens=tokens)


def field_summary(field: FieldProblem, n: int) -> tuple[float, int]:
    """(mean recall@n over questions, questions passing this field at n) for one field."""
    n_q = field.questions
    if n_q == 0:
        return 1.0, 0
    total = sum((field_recall(field, q, n) for q in range(n_q)), Fraction(0))
    passing = 0
    for q in range(n_q):
        d = field.depth(q)
        passing += d is not None and d <= n
    return float(total / n_q), passing


__all__ = [
    "NOT_FOUND",
    "FieldProblem",
    "Objective",
    "check_fields",
    "evaluate_plan",
    "field_recall",
    "field_summary",
]
