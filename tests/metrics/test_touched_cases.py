"""A newcomer's audit of ``touched``: a correlated subquery's outer column (``e.dept_id``
inside ``EXISTS (...)``) was traced to the unknown table ``?`` and counted as a further
column and filter, so a correlated rewrite of a join lost precision it deserved. Figures
hand-computed; the test failed before the fix (column precision 4/5, not 1)."""

from __future__ import annotations

import pytest

from queryeval.metrics.touched import sql_touched, touched_scores

SCHEMA = {"emp": ["id", "name", "salary", "dept_id"], "dept": ["id", "dname", "city"]}


def t(query):
    return sql_touched(query, schema=SCHEMA, dialect="sqlite")


def test_correlated_exists_resolves_the_outer_column():
    got = t("SELECT e.name FROM emp e WHERE EXISTS "
            "(SELECT 1 FROM dept d WHERE d.id = e.dept_id AND d.city = 'Oslo')")
    assert got == {"tables": ["dept", "emp"],
                   "columns": ["dept.city", "dept.id", "emp.dept_id", "emp.name"],
                   "filters": ["dept.city", "dept.id", "emp.dept_id"]}
    gold = t("SELECT e.name FROM emp e JOIN dept d ON d.id = e.dept_id WHERE d.city = 'Oslo'")
    assert touched_scores(gold, got) == {f"schema_{e}_{m}": 1.0 for e in ("table", "column",
                                         "filter") for m in ("precision", "recall")}


def test_correlated_scalar_subquery_in_select_and_in_where():
    got = t("SELECT name, (SELECT dname FROM dept WHERE dept.id = emp.dept_id) FROM emp")
    assert got["columns"] == ["dept.dname", "dept.id", "emp.dept_id", "emp.name"]
    assert got["filters"] == ["dept.id", "emp.dept_id"]
    # the same table inside and outside: the inner alias i and the outer e are both emp
    got = t("SELECT name FROM emp e WHERE salary > "
            "(SELECT AVG(salary) FROM emp i WHERE i.dept_id = e.dept_id)")
    assert got == {"tables": ["emp"], "columns": ["emp.dept_id", "emp.name", "emp.salary"],
                   "filters": ["emp.dept_id", "emp.salary"]}


def test_an_alias_no_scope_defines_stays_unknown():
    assert "?.x" in t("SELECT name FROM emp WHERE nope.x = 1")["columns"]


@pytest.mark.parametrize("dialect, written", [
    ("sqlite", "main.emp"), ("duckdb", "main.emp"), ("postgres", "public.emp"),
])
def test_the_default_schema_is_the_same_table(dialect, written):
    """``main.emp`` on sqlite is ``emp``: it scored table precision and recall 0 (and every
    column as another table's) against a gold that writes ``emp``."""
    gold = sql_touched("SELECT name FROM emp WHERE salary > 1", schema=SCHEMA, dialect=dialect)
    got = sql_touched(f"SELECT name FROM {written} WHERE salary > 1", schema=SCHEMA,
                      dialect=dialect)
    assert got == gold == {"tables": ["emp"], "columns": ["emp.name", "emp.salary"],
                           "filters": ["emp.salary"]}


def test_another_schema_stays_another_table():
    got = sql_touched("SELECT name FROM other.emp", schema=SCHEMA, dialect="sqlite")
    assert got["tables"] == ["other.emp"]
