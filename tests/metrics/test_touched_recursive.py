"""Schema touched by a recursive CTE (audit leftovers): ``WITH RECURSIVE r(id) AS (...)``
resolved its own columns to ``?.emp_id``/``?.boss`` (sqlglot gives the CTE's reference to
itself a bare scope, and the anchor sees the CTE among its sources), which no gold holds.
Precision and recall are hand-computed; each failed on main."""

from __future__ import annotations

import pytest

from queryeval.metrics.touched import sql_touched, touched_scores

ORG = ("WITH RECURSIVE r(id) AS (SELECT emp_id FROM emp WHERE boss IS NULL "
       "UNION ALL SELECT e.emp_id FROM emp e JOIN r ON e.boss = r.id) SELECT id FROM r")
LEVELS = ("WITH RECURSIVE r(id, lvl) AS (SELECT emp_id, 0 FROM emp WHERE boss IS NULL "
          "UNION ALL SELECT emp.emp_id, r.lvl + 1 FROM emp, r WHERE emp.boss = r.id) "
          "SELECT id, lvl FROM r")
SCHEMAS = [None, {"emp": ["emp_id", "boss", "name"]}]


@pytest.mark.parametrize("schema", SCHEMAS, ids=["no-schema", "schema"])
@pytest.mark.parametrize("query", [ORG, LEVELS], ids=["r(id)", "r(id, lvl)"])
def test_recursive_cte_columns_resolve_to_the_base_table(query, schema):
    # r.id is emp.emp_id (anchor and recursive branch); the join/WHERE reads emp.boss and r.id
    assert sql_touched(query, schema=schema, dialect="sqlite") == {
        "tables": ["emp"], "columns": ["emp.boss", "emp.emp_id"],
        "filters": ["emp.boss", "emp.emp_id"]}


@pytest.mark.parametrize("schema", SCHEMAS, ids=["no-schema", "schema"])
def test_schema_precision_recall_against_a_recursive_gold(schema):
    gold = sql_touched(ORG, schema=schema, dialect="sqlite")
    pred = sql_touched("SELECT emp_id, name FROM emp WHERE boss IS NULL", schema=schema,
                       dialect="sqlite")
    # pred columns {boss, emp_id, name}, gold {boss, emp_id}: P 2/3, R 2/2;
    # pred filters {boss}, gold {boss, emp_id}: P 1/1, R 1/2; tables {emp} both
    assert touched_scores(gold, pred) == pytest.approx({
        "schema_table_precision": 1.0, "schema_table_recall": 1.0,
        "schema_column_precision": 2 / 3, "schema_column_recall": 1.0,
        "schema_filter_precision": 1.0, "schema_filter_recall": 0.5})
    # the recursive query as a prediction against itself: everything 1
    assert set(touched_scores(gold, gold).values()) == {1.0}
