"""What a query touched (metrics/touched.py): tables, columns and filter columns of SQL
(joins, subqueries, CTEs, aliases, set operations, ``*``) and classes, predicates and filter
predicates of SPARQL, and their precision/recall against the gold's, all hand-computed; then
through ``queryeval run`` on sqlite and DuckDB (the schema read from the database)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from helpers.query_task import run_records
from queryeval.cli.app import main
from queryeval.metrics.touched import sparql_touched, sql_touched, touched_scores

SCHEMA = {"emp": ["id", "name", "salary", "dept_id"], "dept": ["id", "dname", "city"]}


def t(query, schema=SCHEMA):
    return sql_touched(query, schema=schema, dialect="sqlite")


def test_join_with_aliases_resolves_every_column_to_its_table():
    got = t("SELECT e.name, d.dname FROM emp AS e JOIN dept d ON e.dept_id = d.id "
            "WHERE d.city = 'Oslo'")
    assert got == {"tables": ["dept", "emp"],
                   "columns": ["dept.city", "dept.dname", "dept.id", "emp.dept_id", "emp.name"],
                   "filters": ["dept.city", "dept.id", "emp.dept_id"]}


def test_unqualified_columns_of_a_join_need_the_schema():
    q = "SELECT name FROM emp, dept WHERE dept_id = dept.id AND city = 'Oslo'"
    assert t(q)["columns"] == ["dept.city", "dept.id", "emp.dept_id", "emp.name"]
    # without a schema the unqualified columns of the two-table scope stay unplaced
    assert sql_touched(q)["columns"] == ["?.city", "?.dept_id", "?.name", "dept.id"]


def test_subquery_and_cte_columns_reach_their_base_tables():
    sub = t("SELECT name FROM emp WHERE dept_id IN (SELECT id FROM dept WHERE city = 'Oslo')")
    assert sub == {"tables": ["dept", "emp"],
                   "columns": ["dept.city", "dept.id", "emp.dept_id", "emp.name"],
                   "filters": ["dept.city", "emp.dept_id"]}
    # a CTE's renamed column (salary AS pay) filtered outside it is emp.salary
    cte = t("WITH rich AS (SELECT name, salary AS pay FROM emp) "
            "SELECT r.name FROM rich AS r WHERE r.pay > 100")
    assert cte == {"tables": ["emp"], "columns": ["emp.name", "emp.salary"],
                   "filters": ["emp.salary"]}
    derived = t("SELECT x.n FROM (SELECT name AS n, salary FROM emp) x WHERE x.salary > 1")
    assert derived["filters"] == ["emp.salary"] and derived["tables"] == ["emp"]


def test_set_operations_star_and_unreadable_queries():
    union = t("WITH u AS (SELECT name FROM emp UNION SELECT dname FROM dept) "
              "SELECT name FROM u WHERE name LIKE 'a%'")
    assert union["filters"] == ["dept.dname", "emp.name"]  # by position in each branch
    assert t("SELECT * FROM dept")["columns"] == ["dept.city", "dept.dname", "dept.id"]
    assert t("SELECT count(*) FROM emp") == {"tables": ["emp"], "columns": [], "filters": []}
    assert t("SELEC name FROM emp") is None
    assert t("SELECT 1; SELECT 2") is None


def test_precision_and_recall_hand_computed():
    gold = t("SELECT e.name FROM emp e JOIN dept d ON e.dept_id = d.id WHERE d.city = 'Oslo'")
    # the wrong table: salary filter on emp alone
    pred = t("SELECT name FROM emp WHERE salary > 100")
    # tables: pred {emp}, gold {emp, dept}: P 1/1, R 1/2
    # columns: pred {emp.name, emp.salary}; gold {emp.name, emp.dept_id, dept.id, dept.city}:
    #   both {emp.name}: P 1/2, R 1/4
    # filters: pred {emp.salary}; gold {emp.dept_id, dept.id, dept.city}: P 0/1, R 0/3
    assert touched_scores(gold, pred) == {
        "schema_table_precision": 1.0, "schema_table_recall": 0.5,
        "schema_column_precision": 0.5, "schema_column_recall": 0.25,
        "schema_filter_precision": 0.0, "schema_filter_recall": 0.0}
    # empty sets count 1.0 (entity-set F1's rule); an unreadable prediction 0.0
    none = t("SELECT name FROM emp")
    assert touched_scores(none, none)["schema_filter_precision"] == 1.0
    assert set(touched_scores(gold, None).values()) == {0.0}


def test_sparql_classes_predicates_and_filters():
    gold = sparql_touched(
        "PREFIX b: <https://brickschema.org/schema/Brick#>\n"
        "SELECT ?ahu ?v WHERE { ?ahu a b:AHU ; b:hasPoint ?p . ?p a b:Temperature_Sensor ; "
        "b:value ?v . FILTER(?v > 20) }")
    b = "https://brickschema.org/schema/Brick#"
    assert gold == {"tables": [b + "AHU", b + "Temperature_Sensor"],
                    "columns": [b + "hasPoint", b + "value"], "filters": [b + "value"]}
    # a property path, an undeclared prefix given by the engine, the wrong class
    pred = sparql_touched("SELECT ?ahu WHERE { ?ahu a b:VAV ; b:hasPoint/b:value ?v }",
                          prefixes={"b": b})
    assert pred == {"tables": [b + "VAV"], "columns": [b + "hasPoint", b + "value"],
                    "filters": []}
    # tables: P 0/1, R 0/2; columns: P 2/2, R 2/2; filters: P 1.0 (none), R 0/1
    assert touched_scores(gold, pred) == {
        "schema_table_precision": 0.0, "schema_table_recall": 0.0,
        "schema_column_precision": 1.0, "schema_column_recall": 1.0,
        "schema_filter_precision": 1.0, "schema_filter_recall": 0.0}
    assert sparql_touched("SELECT WHERE {") is None


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_through_a_run_the_schema_comes_from_the_database(tmp_path, engine):
    ddl = ("CREATE TABLE emp(id INTEGER, name TEXT, salary INTEGER, dept_id INTEGER);"
           "CREATE TABLE dept(id INTEGER, dname TEXT, city TEXT);"
           "INSERT INTO emp VALUES (1, 'bob', 150, 1), (2, 'carol', 120, 2), (3, 'dan', 50, 1);"
           "INSERT INTO dept VALUES (1, 'R&D', 'Oslo'), (2, 'Ops', 'Bergen');")
    if engine == "sqlite":
        db = tmp_path / "w.sqlite"
        con = sqlite3.connect(db)
        con.executescript(ddl)
        con.commit()
        con.close()
    else:
        duckdb = pytest.importorskip("duckdb")
        db = tmp_path / "w.duckdb"
        con = duckdb.connect(str(db))
        for stmt in filter(None, ddl.split(";")):
            con.execute(stmt)
        con.close()
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "id: oslo\nconversation:\n- role: user\n  content: who works in Oslo?\n  target:\n"
        "    query:\n      gold: SELECT name FROM emp, dept WHERE dept_id = dept.id AND "
        "city = 'Oslo'\n", encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"case_id": "oslo",
                                 "query": "SELECT name FROM emp WHERE salary > 100"}) + "\n",
                     encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--database", str(db),
                 "--out", str(out), "-q"]) == 0
    metrics, recs = run_records(out)
    rec = recs["oslo"]
    # gold: tables {emp, dept}; columns {emp.name, emp.dept_id, dept.id, dept.city} (the
    # schema places the unqualified ones); filters {emp.dept_id, dept.id, dept.city}
    assert rec["touched"]["gold"]["columns"] == ["dept.city", "dept.id", "emp.dept_id",
                                                 "emp.name"]
    s = rec["scores"]
    assert (s["schema_table_precision"], s["schema_table_recall"]) == (1.0, 0.5)
    assert (s["schema_column_precision"], s["schema_column_recall"]) == (0.5, 0.25)
    assert (s["schema_filter_precision"], s["schema_filter_recall"]) == (0.0, 0.0)
    assert "missed table(s) the gold uses: dept" in rec["touched"]["message"]
    assert metrics["overall_metrics"]["schema_column_recall"] == 0.25


def test_shipped_sparql_example_hand_computed(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "sparql"
    out = tmp_path / "o"
    assert main(["run", str(example / "suite.yaml"), "--responses",
                 str(example / "predictions.jsonl"), "--out", str(out), "-q"]) == 0
    _, recs = run_records(out)
    b = "https://brickschema.org/schema/Brick#"
    # gold: ?ahu a Air_Handling_Unit ; feeds ?vav . ?vav a VAV; predicted drops the AHU class
    rec = recs["ahu-feeds-vav"]
    assert rec["touched"]["gold"] == {"tables": [b + "Air_Handling_Unit", b + "VAV"],
                                      "columns": [b + "feeds"], "filters": []}
    assert rec["touched"]["predicted"]["tables"] == [b + "VAV"]
    s = rec["scores"]
    assert (s["schema_table_precision"], s["schema_table_recall"]) == (1.0, 0.5)
    assert (s["schema_column_precision"], s["schema_column_recall"]) == (1.0, 1.0)
    # zone-temps: the prediction reads two of the gold's three classes and no predicate
    s = recs["zone-temps"]["scores"]
    assert (s["schema_table_precision"], s["schema_table_recall"]) == (1.0, pytest.approx(2 / 3))
    assert (s["schema_column_precision"], s["schema_column_recall"]) == (1.0, 0.0)
    # a refused update: nothing readable, 0 everywhere
    assert recs["dampers-ahu1"]["scores"]["schema_table_recall"] == 0.0
