"""Result-table metrics (seed 003): arity, entity-set, row-matching and exact-match F1.

Every function takes the ground truth first, then the prediction
(:mod:`queryeval.metrics.protocol`). Tables in the common shapes (SPARQL JSON, bindings lists, header + rows, pandas DataFrames)
are read into :class:`Table`; :func:`table_scores` computes all four figures with one exact
branch-and-bound search over column mappings. ``rules="clean"`` (default) or
``rules="buildingqa"`` (the reference's quirks). See docs/tables.md.
"""

from queryeval.metrics.tables.arity import buildingqa_arity, sparql_arity
from queryeval.metrics.tables.model import (
    RULES,
    Table,
    as_table,
    buildingqa_normalize,
    canonical_number,
    clean_normalize,
)
from queryeval.metrics.tables.modes import lcs_length, query_is_ordered, tolerance_classes
from queryeval.metrics.tables.scores import (
    TableScores,
    arity_f1,
    best_of_golds,
    entity_set_f1,
    exact_match_f1,
    row_matching_f1,
    table_scores,
)
from queryeval.metrics.tables.search import Budget

__all__ = [
    "RULES",
    "Budget",
    "Table",
    "TableScores",
    "arity_f1",
    "as_table",
    "best_of_golds",
    "buildingqa_arity",
    "buildingqa_normalize",
    "canonical_number",
    "clean_normalize",
    "entity_set_f1",
    "exact_match_f1",
    "lcs_length",
    "query_is_ordered",
    "row_matching_f1",
    "sparql_arity",
    "table_scores",
    "tolerance_classes",
]


score = table_scores
"""``score(gold, pred, rules=..., gold_query=..., pred_query=...)``: :func:`table_scores`
under the name every family uses."""
__all__.append("score")
