"""Tune a set of fields: pick each field's model, then the exact N per field.

Input per field: its token cost, its number of values, and per model the ground-truth ranks of
every question (from one full ranking per question; see
:func:`queryeval.metrics.fields.ground_truth_ranks`). Output: one row per field
(``Field Name, N, Model, recall, passed, tokens``) and the plan's totals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from queryeval.tune.exact import DEFAULT_NODE_LIMIT, Plan, solve_exact
from queryeval.tune.greedy import greedy_reference_plan
from queryeval.tune.models import choose_model, mean_mrr
from queryeval.tune.problem import FieldProblem, Objective, evaluate_plan, field_summary


@dataclass(frozen=True)
class FieldInput:
    """One field with its candidate models (mapping order = listing order, first wins ties)."""

    name: str
    cost: int
    max_n: int
    ranks_by_model: Mapping[str, Sequence[np.ndarray]]


@dataclass(frozen=True)
class TuneRow:
    """One output row. ``recall``: mean recall@N over questions on this field; ``passed``:
    questions whose ground truth for this field is all within N; ``tokens``: N x cost."""

    field: str
    n: int
    model: str
    recall: float
    passed: int
    tokens: int

    def as_record(self) -> dict:
        return {
            "Field Name": self.field,
            "N": self.n,
            "Model": self.model,
            "recall": self.recall,
            "passed": self.passed,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class TuneResult:
    """Rows, totals (questions passing every field, mean recall, tokens) and search facts."""

    rows: list[TuneRow]
    questions: int
    objective: Objective
    budget: int | None
    optimal: bool
    nodes: int
    mrr_by_field: dict[str, dict[str, float]]
    greedy: tuple[tuple[int, ...], Objective] | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> int:
        return self.objective.passed

    @property
    def recall(self) -> float:
        return float(self.objective.recall)

    @property
    def tokens(self) -> int:
        return self.objective.tokens

    def summary(self) -> dict:
        """Totals as plain JSON-ready values."""
        out: dict = {
            "questions": self.questions,
            "passed": self.passed,
            "pass_rate": self.passed / self.questions if self.questions else None,
            "recall": self.recall,
            "tokens": self.tokens,
            "budget": self.budget,
            "optimal": self.optimal,
            "nodes": self.nodes,
            "mrr": self.mrr_by_field,
            "notes": list(self.notes),
        }
        if self.greedy is not None:
            ns, obj = self.greedy
            out["greedy_reference"] = {
                "N": list(ns),
                "passed": obj.passed,
                "recall": float(obj.recall),
                "tokens": obj.tokens,
            }
        return out


def tune(
    fields: Sequence[FieldInput],
    budget: int | None = None,
    min_n: int = 1,
    node_limit: int = DEFAULT_NODE_LIMIT,
    compare_greedy: bool = True,
) -> TuneResult:
    """Choose the model (highest mean MRR) then N (exact) for every field."""
    if not fields:
        raise ValueError("tuning needs at least one field")
    mrr_by_field: dict[str, dict[str, float]] = {}
    problems: list[FieldProblem] = []
    models: list[str] = []
    for f in fields:
        if not f.ranks_by_model:
            raise ValueError(f"{f.name}: no model rankings")
        scores = {m: mean_mrr(list(r)) for m, r in f.ranks_by_model.items()}
        model = choose_model(scores)
        mrr_by_field[f.name] = scores
        models.append(model)
        problems.append(
            FieldProblem(
                name=f.name,
                cost=int(f.cost),
                max_n=int(f.max_n),
                ranks=tuple(np.asarray(r, dtype=np.int64) for r in f.ranks_by_model[model]),
            )
        )
    plan: Plan = solve_exact(problems, budget=budget, min_n=min_n, node_limit=node_limit)
    rows = []
    for problem, model, n in zip(problems, models, plan.ns, strict=True):
        recall, passing = field_summary(problem, n)
        rows.append(
            TuneRow(field=problem.name, n=n, model=model, recall=recall, passed=passing,
                    tokens=n * problem.cost)
        )
    greedy = None
    if compare_greedy and budget is not None:
        g_ns = greedy_reference_plan(problems, budget)
        greedy = (g_ns, evaluate_plan(problems, g_ns))
    return TuneResult(
        rows=rows,
        questions=problems[0].questions,
        objective=plan.objective,
        budget=budget,
        optimal=plan.optimal,
        nodes=plan.nodes,
        mrr_by_field=mrr_by_field,
        greedy=greedy,
        notes=plan.notes,
    )
