"""BuildingQA-compatible result-table metrics: same names, signatures, argument orders and
figures as the reference's ``metrics.py``, quirks included (see docs/tables.md), computed
by the exact, fast engine in :mod:`queryeval.metrics.tables`.

Note the argument orders, which are the reference's: arity takes ``(predicted, gold)``;
the other two take ``(gold, predicted)``.

Quirks reproduced: columns are the first row's keys; rows and exact match compare
BuildingQA-normalised values while entity sets compare raw strings; arity of query text
counts the tokens between ``SELECT`` and ``WHERE`` other than ``DISTINCT``.

Beyond the reference (no figure the reference produces changes): full SPARQL JSON results
and other table shapes are accepted wherever a bindings list is; the mapping search has a
``budget`` instead of a 1200-second timeout.
"""

from __future__ import annotations

from typing import Any

from queryeval.metrics.tables.arity import arity_f1_from_counts, buildingqa_arity
from queryeval.metrics.tables.model import as_table
from queryeval.metrics.tables.scores import _exact_match, _mapped_scores
from queryeval.metrics.tables.search import Budget

RULES = "buildingqa"


def _arity_count(value: Any) -> int:
    if isinstance(value, str):
        return buildingqa_arity(value)
    if isinstance(value, list):
        return len(value[0]) if value else 0
    return as_table(value, rules=RULES).n_columns


def get_arity_matching_f1(generated_output: Any, gold_input: Any) -> float:
    """Arity F1 of a predicted and a gold query text or bindings list:
    ``2·min/(pred+gold)`` of the column counts, 1.0 when both are 0. A list counts its first
    row's keys (0 when empty); a string counts its projection tokens."""
    return arity_f1_from_counts(_arity_count(generated_output), _arity_count(gold_input))


def get_entity_and_row_matching_f1(gold_rows: Any, pred_rows: Any, *,
                                   budget: Budget | None = None) -> dict[str, float]:
    """``{"entity_set_f1": ..., "row_matching_f1": ...}`` under the column mapping that
    maximises row F1, ties broken by entity F1, exactly as the reference's permutation
    search reports them."""
    scores = _mapped_scores(as_table(pred_rows, rules=RULES), as_table(gold_rows, rules=RULES),
                            RULES, budget)
    return {"entity_set_f1": scores.entity, "row_matching_f1": scores.row}


def get_exact_match_f1(gold_rows: Any, pred_rows: Any) -> float:
    """Row F1 with columns mapped by position (names ignored, order and count must agree)."""
    return _exact_match(as_table(pred_rows, rules=RULES), as_table(gold_rows, rules=RULES), RULES)
