"""``--test-suite N`` on a PostgreSQL source (docs/test-suite.md, "PostgreSQL").

The neighbours run on PostgreSQL itself, as temporary tables of a sandboxed worker's
connection: the example's classic accident (``name IN ('bob', 'carol')`` for
``salary > 100``) is refuted there with the distinguishing rows recorded -- and those rows,
loaded by hand into a fresh database of the same server, give the two queries different
results --; the equivalent rewrites stay equal; PostgreSQL-only constructs work; the real
tables are unchanged (row counts and a checksum) and no temporary table outlives the run;
what would read the real tables (a schema-qualified name, a view, a function outside
pg_catalog) is unknown with its reason, never run there; a role without TEMPORARY gets one
line and the run goes on; the same seed gives the same neighbours. A real server per pytest
process (``pg_server`` in conftest.py); skipped with the reason where it is absent."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import queryeval as qe  # noqa: E402
from helpers.sql_parses import record_parses  # noqa: E402
from helpers.testsuite_pg import (  # noqa: E402,F401
    EXAMPLE,
    GRANTS,
    fingerprint,
    psycopg,
    records,
    suite_for,
    temp_storage,
    temp_tables,
)
from queryeval.engines.query import QueryRefused  # noqa: E402
from queryeval.engines.query.neighbours import database_rows, pg_neighbours  # noqa: E402
from queryeval.engines.query.neighbours.pg import PgFileEngine, PgRunner, query_names  # noqa: E402

EXTRAS = """
CREATE VIEW rich AS SELECT name FROM emp WHERE salary > 100;
CREATE FUNCTION headcount() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM public.emp';
CREATE SCHEMA other;
CREATE TABLE other.emp (id int PRIMARY KEY, name text);
INSERT INTO other.emp VALUES (1, 'zed');
GRANT USAGE ON SCHEMA other TO reader;
GRANT SELECT ON ALL TABLES IN SCHEMA other TO reader;
CREATE TABLE audit (id int PRIMARY KEY, note text);
"""
# The example's verdicts (docs/test-suite.md; the same on sqlite, tests/matrix/test_matrix_testsuite.py)
EXPECTED = {"high-earners": 0.0, "not-at-most-100": 1.0, "staff-and-departments": 1.0,
            "sales-staff": 1.0, "count-at-least-120": 0.0}


@pytest.fixture(scope="module")
def emp(pg_server):
    setup = (EXAMPLE / "emp.sql").read_text(encoding="utf-8") + EXTRAS + GRANTS
    return pg_server.database("tspg_emp", setup)


def one_case(url: str, gold: str, pred: str, tmp_path: Path, n: int = 6, **more) -> dict:
    cases = [{"id": "c", "conversation": [{"role": "user", "content": "c", "target": {
        "query": {"gold": gold, **more}}}]}]
    run = qe.evaluate(cases, responses=[{"case_id": "c", "query": pred}], task="query",
                      out=tmp_path / "runs", test_suite=n, source=url)
    return records(run)["c"]


# ------------------------------------------------------------------ the server's rules


def test_temp_tables_shadow_unqualified_names_and_read_only_reads_them(emp):
    """The assumptions the design rests on, on the real server: the session's temporary
    schema comes first for relation names (before public); a READ ONLY transaction reads
    the temporary tables (and may write only them); it cannot create one; a schema-qualified
    name still reaches the real table."""
    with psycopg.connect(emp["reader"]) as con:
        con.execute("CREATE TEMPORARY TABLE emp (id int, name text, salary int)")
        con.execute("INSERT INTO emp VALUES (1, 'temp-only', 5)")
        con.commit()
        con.read_only = True
        assert con.execute("SELECT name FROM emp").fetchall() == [("temp-only",)]
        assert con.execute("SELECT current_schemas(true)").fetchone()[0][0].startswith("pg_temp")
        assert con.execute("SELECT count(*) FROM public.emp").fetchone()[0] == 5
        con.execute("INSERT INTO emp VALUES (2, 'x', 1)")  # a temporary table: allowed
        con.rollback()
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            con.execute("CREATE TEMPORARY TABLE t2 (a int)")
        con.rollback()
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            con.execute("INSERT INTO public.dept VALUES (9, 'x')")
        con.rollback()


# ------------------------------------------------------------------ verdicts


def test_the_classic_accident_is_refuted_on_postgres(emp, tmp_path):
    """The example on PostgreSQL: the same verdicts as on sqlite; the refuting neighbour's
    rows are recorded, and loaded by hand into a fresh database they tell the two queries
    apart there (the server's own answer, not the neighbour loader's)."""
    run = qe.evaluate(suite_for(emp["reader"], tmp_path), task="query", test_suite=6,
                      responses=EXAMPLE / "predictions.jsonl", out=tmp_path / "runs")
    recs = records(run)
    assert {k: r["scores"]["test_suite_match"] for k, r in recs.items()} == EXPECTED
    assert all(r["scores"]["exact_match_f1"] == 1.0 for r in recs.values())
    assert run.overall["test_suite_accuracy"] == pytest.approx(0.6)
    assert run.overall["test_suite_refuted"] == 2 and run.overall["test_suite_unknown"] == 0
    ts = recs["high-earners"]["test_suite"]
    assert ts["reason"].startswith("refuted by neighbour")
    database = ts["refuted_by"]["database"]
    assert set(database) == {"emp", "dept"}
    gold, pred = "SELECT name FROM emp WHERE salary > 100", \
        "SELECT name FROM emp WHERE name IN ('bob', 'carol')"
    got = {}
    with psycopg.connect(emp["admin"].rsplit("/", 1)[0] + "/postgres", autocommit=True) as con:
        con.execute("DROP DATABASE IF EXISTS tspg_check")
        con.execute("CREATE DATABASE tspg_check")
    with psycopg.connect(emp["admin"].rsplit("/", 1)[0] + "/tspg_check") as con:
        con.execute((EXAMPLE / "emp.sql").read_text().split("INSERT INTO dept")[0])
        con.execute("CREATE TABLE emp (id int PRIMARY KEY, name text NOT NULL, salary int, "
                    "dept_id int REFERENCES dept(id), manager_id int REFERENCES emp(id))")
        for table in ("dept", "emp"):
            cols = database[table]["columns"]
            for row in database[table]["rows"]:
                con.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                            f"({', '.join(['%s'] * len(cols))})", row)
        for q in (gold, pred):
            got[q] = Counter(con.execute(q).fetchall())
    assert got[gold] != got[pred]
    sample = ts["refuted_by"]["result_sample"]
    assert Counter(tuple(r) for r in sample["gold"]["rows"]) == got[gold]


def test_equivalent_rewrites_stay_equal_and_near_misses_fall(emp, tmp_path):
    """Aliases and reordered joins, an extra ORDER BY, NOT x <= c over NULL salaries: 1;
    >= against > and a flipped constant: 0 (the example's suite covers the rest)."""
    cases = {
        "SELECT e.name AS who FROM emp AS e WHERE e.salary > 100 ORDER BY 1":
            ("SELECT name FROM emp WHERE salary > 100", 1.0),
        "SELECT name FROM emp WHERE NOT salary <= 100":
            ("SELECT name FROM emp WHERE salary > 100", 1.0),
        "SELECT d.name, e.name FROM dept d JOIN emp e ON e.dept_id = d.id":
            ("SELECT dept.name, emp.name FROM emp JOIN dept ON dept.id = emp.dept_id", 1.0),
        "SELECT name FROM emp WHERE salary >= 100":
            ("SELECT name FROM emp WHERE salary > 100", 0.0),
    }
    for pred, (gold, expected) in cases.items():
        rec = one_case(emp["reader"], gold, pred, tmp_path / str(abs(hash(pred))))
        assert rec["scores"]["exact_match_f1"] == 1.0, (pred, rec["scores"])
        assert rec["scores"]["test_suite_match"] == expected, (pred, rec["test_suite"])


def test_a_prediction_reading_a_table_the_neighbours_do_not_hold_gives_no_verdict(emp, tmp_path):
    """The neighbours hold the gold's tables (emp and its foreign-key parent dept); a table
    only the prediction reads (audit, empty on the server) is an empty copy on every one of
    them, so a prediction that returns nothing once audit has a row agreed everywhere: that
    was 1.0, now unknown, naming the table."""
    gold = "SELECT name FROM emp WHERE salary > 100"
    rec = one_case(emp["reader"], gold, gold + " AND NOT EXISTS (SELECT 1 FROM audit)",
                   tmp_path / "audit")
    assert rec["scores"]["exact_match_f1"] == 1.0, rec["scores"]
    assert rec["scores"]["test_suite_match"] is None, rec["test_suite"]
    assert rec["test_suite"]["unseen_tables"] == ["audit"]
    today = one_case(emp["reader"], gold, "SELECT name FROM emp, current_date AS d WHERE "
                     "salary > 100", tmp_path / "today")  # a function, not a table
    assert today["scores"]["test_suite_match"] == 1.0, today["test_suite"]
    joined = one_case(emp["reader"], gold, "SELECT e.name FROM emp e LEFT JOIN dept d ON "
                      "d.id = e.dept_id WHERE e.salary > 100",
                      tmp_path / "dept")  # dept: the gold's foreign-key parent, filled
    assert joined["scores"]["test_suite_match"] == 1.0, joined["test_suite"]
    assert "unseen_tables" not in joined["test_suite"]


@pytest.mark.parametrize(("gold", "pred", "expected"), [
    # DISTINCT ON: each department's best-paid employee, and the same by a window function
    ("SELECT DISTINCT ON (dept_id) dept_id, name FROM emp WHERE dept_id IS NOT NULL "
     "ORDER BY dept_id, salary DESC NULLS LAST, id",
     "SELECT dept_id, name FROM (SELECT dept_id, name, row_number() OVER (PARTITION BY "
     "dept_id ORDER BY salary DESC NULLS LAST, id) AS r FROM emp WHERE dept_id IS NOT NULL) "
     "x WHERE r = 1 ORDER BY dept_id", 1.0),
    # ILIKE and lower() LIKE agree; a case-sensitive LIKE does not (a neighbour has 'B...')
    ("SELECT name FROM emp WHERE name ILIKE 'b%'",
     "SELECT name FROM emp WHERE lower(name) LIKE 'b%'", 1.0),
    ("SELECT name FROM emp WHERE name ILIKE 'b%'",
     "SELECT name FROM emp WHERE name LIKE 'b%'", 0.0),
    # ::int casts and generate_series
    ("SELECT g FROM generate_series(1, 3) AS g WHERE g::int <= (SELECT count(*) FROM emp "
     "WHERE salary > 100)",
     "SELECT g FROM generate_series(1, (SELECT count(*)::int FROM emp WHERE salary > 100)) "
     "AS g WHERE g <= 3", 1.0),
])
def test_postgresql_only_constructs(emp, tmp_path, gold, pred, expected):
    rec = one_case(emp["reader"], gold, pred, tmp_path)
    assert rec["scores"]["exact_match_f1"] == 1.0, rec["predicted_execution"]
    assert rec["scores"]["test_suite_match"] == expected, rec["test_suite"]
    assert rec["test_suite"]["neighbours"] == 6


# ------------------------------------------------------------------ nothing written


def test_real_tables_unchanged_and_no_temp_table_outlives_the_run(emp, tmp_path):
    before = fingerprint(emp["admin"])
    assert before["public.emp"][0] == 5 and before["public.dept"][0] == 2
    run = qe.evaluate(suite_for(emp["reader"], tmp_path), task="query", test_suite=4,
                      test_suite_seed=3, responses=EXAMPLE / "predictions.jsonl",
                      out=tmp_path / "runs")
    assert run.overall["test_suite_refuted"] >= 1
    assert fingerprint(emp["admin"]) == before
    del run
    import gc

    gc.collect()  # the run's task and its neighbour workers are gone
    assert temp_tables(emp["admin"]) == []


# ------------------------------------------------------------------ what reads the real data


def test_a_schema_qualified_name_is_judged_only_when_provably_the_same_table(emp, tmp_path):
    """public.emp is the table the unqualified emp reaches (pg_table_is_visible): dropping
    the qualifier changes nothing on the real database and reaches the neighbour's copy,
    so gold and prediction written with it are judged (the accident refuted). other.emp is
    another table, not on the search path: null with the reason, never run on the real
    data."""
    rec = one_case(emp["reader"], "SELECT name FROM public.emp WHERE salary > 100",
                   "SELECT e.name FROM public.emp e WHERE e.name IN ('bob', 'carol')",
                   tmp_path / "g")
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] == 0.0, rec["test_suite"]
    rec = one_case(emp["reader"], "SELECT name FROM emp WHERE salary > 100",
                   'SELECT name FROM "public".emp WHERE NOT salary <= 100', tmp_path / "p")
    assert rec["scores"]["test_suite_match"] == 1.0, rec["test_suite"]
    rec = one_case(emp["reader"], "SELECT name FROM other.emp",
                   "SELECT 'zed' AS name", tmp_path / "o")
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] is None
    assert rec["test_suite"]["reason"].startswith(
        "no neighbour databases: the gold names the table other.emp with its schema")
    rec = one_case(emp["reader"], "SELECT name FROM emp WHERE salary > 100",
                   "SELECT name FROM emp WHERE salary > 100 AND name NOT IN (SELECT name "
                   "FROM other.emp)", tmp_path / "q")
    assert rec["scores"]["test_suite_match"] is None
    assert rec["test_suite"]["reason"].startswith("the prediction names the table other.emp")


def test_unqualify_drops_only_what_provably_changes_nothing():
    from queryeval.engines.query.neighbours.pg import unqualify

    visible = [["public", "emp"], ["public", "dept"]]
    assert unqualify('SELECT public.emp.name FROM public.emp JOIN "public".dept d ON true',
                     visible) == "SELECT emp.name FROM emp JOIN dept d ON true"
    assert unqualify("SELECT 'public.emp' FROM public . emp", visible) == \
        "SELECT 'public.emp' FROM  emp"
    for same in ("SELECT public.dept FROM emp AS public",  # a column of an alias: kept
                 "SELECT x FROM other.emp", 'SELECT * FROM "Public".emp',
                 "SELECT * FROM db.public.emp"):
        assert unqualify(same, visible) == same


@pytest.mark.parametrize(("pred", "what"), [
    ("SELECT name FROM rich", "it reads public.emp of the real database"),  # a view
    ("SELECT name FROM emp WHERE headcount() > 4 AND salary > 100", "public.headcount()"),
])
def test_what_reads_the_real_tables_is_refused_on_a_neighbour(emp, tmp_path, pred, what):
    """A view over the real table, a function outside pg_catalog: on the original they
    give the gold's rows; on a neighbour they would read the real data, so the worker
    refuses them there (the plan check, the function check): unknown, never a verdict."""
    rec = one_case(emp["reader"], "SELECT name FROM emp WHERE salary > 100", pred, tmp_path)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] is None
    assert any(what in u for u in rec["test_suite"]["unknown"]), rec["test_suite"]


def test_a_gold_over_a_view_gets_no_neighbours(emp, tmp_path):
    rec = one_case(emp["reader"], "SELECT name FROM rich", "SELECT name FROM rich", tmp_path)
    assert rec["scores"]["test_suite_match"] is None
    assert rec["test_suite"]["reason"] == (
        "no neighbour databases: the gold reads public.rich, a view: the neighbour databases "
        "hold only copies of ordinary tables")


def test_query_names():
    assert query_names('SELECT * FROM emp e JOIN "Dept" d ON true, generate_series(1, 2) g '
                       "WHERE upper(e.name) = 'X'") == (["emp", "Dept"],
                                                        ["generate_series", "upper"])
    assert query_names("WITH t AS (SELECT 1) SELECT * FROM t, EMP")[0] == ["emp"]
    for q in ("SELECT * FROM public.emp", 'SELECT * FROM "other".emp',
              "SELECT * FROM db.public.emp"):
        with pytest.raises(QueryRefused, match="with its schema"):
            query_names(q)


def test_the_postgresql_checks_parse_a_text_once_and_give_the_same_answers(monkeypatch):
    """A gold and its mutants run on every candidate and neighbour: the statement check,
    the names and the qualifier rewrite are remembered per text (per visible tables for the
    rewrite), with the answers of the first call; a refused text raises every time; the
    lists a caller gets are its own."""

    from queryeval.engines.query.neighbours.pg import unqualify
    from queryeval.engines.query.postgres import check_postgres

    parsed, tag = record_parses(monkeypatch)  # tag: in texts no earlier test checked
    accepted = f"SELECT e.name AS n_{tag} FROM public.emp e WHERE upper(e.name) > 'A'"
    refused = f"SELECT pg_read_file('/etc/passwd') AS n_{tag}"
    visible = [["public", "emp"]]
    for _ in range(3):
        check_postgres(accepted)
        with pytest.raises(QueryRefused, match="pg_read_file"):
            check_postgres(refused)
        plain = unqualify(accepted, visible)
        assert plain == f"SELECT e.name AS n_{tag} FROM emp e WHERE upper(e.name) > 'A'"
        assert unqualify(accepted, []) == accepted
        with pytest.raises(QueryRefused, match="with its schema"):
            query_names(accepted)
        relations, functions = query_names(plain)
        assert (relations, functions) == (["emp"], ["upper"])
        relations.append("mine")  # the caller's own list
    assert [parsed.count(q) for q in (accepted, refused)] == [1, 3]


def test_a_role_without_temporary_gets_one_line_and_the_run_goes_on(pg_server, tmp_path):
    db = pg_server.database("tspg_notemp", "CREATE TABLE emp (name text, salary int); "
                            "INSERT INTO emp VALUES ('bob', 120), ('al', 90); "
                            "GRANT SELECT ON emp TO reader; "
                            "REVOKE TEMPORARY ON DATABASE tspg_notemp FROM PUBLIC;")
    cases = [{"id": c, "conversation": [{"role": "user", "content": c, "target": {
        "query": {"gold": "SELECT name FROM emp WHERE salary > 100"}}}]} for c in ("a", "b")]
    run = qe.evaluate(cases, responses=[{"case_id": c, "query": "SELECT name FROM emp WHERE "
                                         "name = 'bob'"} for c in ("a", "b")],
                      task="query", out=tmp_path / "runs", test_suite=3, source=db["reader"])
    for rec in records(run).values():
        assert rec["scores"]["exact_match_f1"] == 1.0
        assert rec["scores"]["test_suite_match"] is None
        reason = rec["test_suite"]["reason"]
        assert "may not create temporary tables" in reason and "\n" not in reason
    assert run.overall["test_suite_unknown"] == 2


# ------------------------------------------------------------------ determinism and cache


def test_same_seed_same_neighbours_and_the_key_holds_the_schema(emp, pg_server, tmp_path):
    gold = "SELECT name FROM emp WHERE salary > 100"
    a = pg_neighbours(emp["reader"], gold, 4, seed=5, cache_dir=tmp_path / "a")
    b = pg_neighbours(emp["reader"], gold, 4, seed=5, cache_dir=tmp_path / "b")
    assert not a.cached and not b.cached and a.folder.name == b.folder.name
    assert [p.read_bytes() for p in a.paths()] == [p.read_bytes() for p in b.paths()]
    again = pg_neighbours(emp["reader"], gold, 4, seed=5, cache_dir=tmp_path / "a")
    assert again.cached and again.folder == a.folder
    other = pg_neighbours(emp["reader"], gold, 4, seed=6, cache_dir=tmp_path / "a")
    assert other.folder != a.folder
    # the same data in another database of the server: the same key (the schema read, not
    # the URL); one more row (a new sampled value): another key
    setup = (EXAMPLE / "emp.sql").read_text(encoding="utf-8") + GRANTS
    twin = pg_server.database("tspg_twin", setup)
    assert pg_neighbours(twin["reader"], gold, 4, seed=5, cache_dir=tmp_path / "a").cached
    with psycopg.connect(twin["admin"], autocommit=True) as con:
        con.execute("INSERT INTO emp VALUES (6, 'frank', 101, 1, NULL)")
    changed = pg_neighbours(twin["reader"], gold, 4, seed=5, cache_dir=tmp_path / "a")
    assert not changed.cached and changed.folder != a.folder


def test_a_neighbour_runs_only_on_its_temporary_tables(emp, tmp_path):
    """The runner loads a neighbour file and runs on it; the real tables stay invisible to
    unqualified names, and the neighbour's rows are exactly the file's."""
    built = pg_neighbours(emp["reader"], "SELECT name FROM emp WHERE salary > 100", 3,
                          seed=2, cache_dir=tmp_path)
    with PgRunner(emp["reader"]) as runner:
        for path in built.paths():
            rows = database_rows(path, "json")
            engine = PgFileEngine(runner, path)
            got = engine.execute("SELECT id, name FROM emp", timeout_s=10, max_rows=100)
            assert Counter(map(tuple, got.rows)) == Counter(
                (r[0], r[1]) for r in rows["emp"]["rows"])
            assert engine.execute("SELECT count(*) FROM dept", timeout_s=10,
                                  max_rows=1).rows[0][0] == len(rows["dept"]["rows"])
        runner.release()
    assert temp_tables(emp["admin"]) == []


def test_a_candidate_keeps_exactly_the_rows_its_constraints_let_in_one_by_one(emp, tmp_path):
    """Loading a candidate: each row is its own INSERT, in order, so a refused row is left
    out and the rest go in -- a duplicate key, a department that does not exist, and a
    manager who comes later in the table (a foreign key to the same table is checked row by
    row: one INSERT of all the rows would have let that row in). A candidate nothing refuses
    goes in whole and in order, and a query reads back exactly the rows kept."""
    from queryeval.engines.query.neighbours.pg_names import table_refs
    from queryeval.engines.query.neighbours.pg_schema import to_schema

    with PgRunner(emp["reader"]) as runner:
        schema = to_schema(runner.schema(table_refs("SELECT name FROM emp"), 30))
        schema.visible = []
        columns = {t.name: [c.name for c in t.columns] for t in schema.tables}
        assert columns == {"dept": ["id", "name"],
                           "emp": ["id", "name", "salary", "dept_id", "manager_id"]}
        refused = {"dept": [(1, "sales"), (1, "again"), (2, "research")],
                   "emp": [(1, "ann", 10, 1, 2),  # her manager (2) is not in yet
                           (2, "ben", 20, 2, None),
                           (3, "cy", 30, 9, None),  # no department 9
                           (4, "di", 40, 1, 4),  # her own manager: the row is whole
                           (5, "ed", 50, 2, 2)]}
        assert runner.write(schema, tmp_path / "a.json", refused) == {
            "dept": [(1, "sales"), (2, "research")],
            "emp": [(2, "ben", 20, 2, None), (4, "di", 40, 1, 4), (5, "ed", 50, 2, 2)]}
        engine = PgFileEngine(runner, tmp_path / "a.json")
        assert engine.execute("SELECT id FROM emp", timeout_s=10, max_rows=10).rows == [
            (2,), (4,), (5,)]
        whole = {"dept": [(2, "b"), (1, "a")], "emp": [(3, "c", 1, 1, None), (1, "a", 2, 2, 3)]}
        assert runner.write(schema, tmp_path / "b.json", whole) == whole
        engine = PgFileEngine(runner, tmp_path / "b.json")
        assert engine.execute("SELECT id, manager_id FROM emp", timeout_s=10,
                              max_rows=10).rows == [(3, None), (1, 3)]
        assert json.loads((tmp_path / "a.json").read_text())["tables"]["dept"]["rows"] == [
            [1, "sales"], [2, "research"]]
        later = {"dept": [(1, "a")], "emp": [(1, "a", 1, 1, 2), (2, "b", 2, 1, None)]}
        assert runner.write(schema, tmp_path / "c.json", later) == {  # only the order refuses
            "dept": [(1, "a")], "emp": [(2, "b", 2, 1, None)]}
        runner.release()
    assert temp_tables(emp["admin"]) == []


def test_a_neighbour_with_the_loaded_ddl_reuses_the_tables_with_fresh_storage(emp, tmp_path):
    """The next candidate of the same schema keeps the temporary tables (same oid: no
    DROP/CREATE) but gets fresh storage (TRUNCATE: a new relfilenode), so its rows lie in
    the order they went in, as in a table just created -- a scan without ORDER BY reads
    them so -- and nothing of the candidate before is left; a schema with other DDL
    creates its tables afresh."""
    from queryeval.engines.query.neighbours.pg_names import table_refs
    from queryeval.engines.query.neighbours.pg_schema import to_schema

    with PgRunner(emp["reader"]) as runner:
        both = to_schema(runner.schema(table_refs("SELECT name FROM emp"), 30))
        both.visible = []
        first = {"dept": [(1, "a"), (2, "b")],
                 "emp": [(i, f"e{i}", i, 1 + i % 2, None) for i in range(1, 41)]}
        runner.write(both, tmp_path / "a.json", first)
        before = temp_storage(emp["admin"])
        second = {"dept": [(3, "c")], "emp": [(7, "x", 1, 3, None), (2, "y", 2, 3, 7),
                                              (5, "z", 3, 3, 2)]}
        assert runner.write(both, tmp_path / "b.json", second) == second
        after = temp_storage(emp["admin"])
        assert sorted(after) == sorted(before) == ["dept", "emp"]
        for name in ("dept", "emp"):
            assert after[name][0] == before[name][0]  # the same table
            assert after[name][1] != before[name][1]  # its storage new
        engine = PgFileEngine(runner, tmp_path / "b.json")
        assert engine.execute("SELECT id, manager_id FROM emp", timeout_s=10,
                              max_rows=100).rows == [(7, None), (2, 7), (5, 2)]
        assert engine.execute("SELECT id FROM dept", timeout_s=10, max_rows=10).rows == [(3,)]
        only_dept = to_schema(runner.schema(table_refs("SELECT name FROM dept"), 30))
        only_dept.visible = []
        runner.write(only_dept, tmp_path / "c.json", {"dept": [(4, "d")]})
        fresh = temp_storage(emp["admin"])
        assert list(fresh) == ["dept"] and fresh["dept"][0] != after["dept"][0]
        runner.release()
    assert temp_tables(emp["admin"]) == []


def test_a_verdict_check_leaves_its_tables_for_the_next_neighbour(emp, tmp_path, monkeypatch):
    """The verdict's check of a neighbour (``_open``: a worker of the run's pool lent for it)
    leaves the temporary tables loaded: the next neighbour of the same set in that worker
    keeps them (same oid) and gets fresh storage (TRUNCATE) instead of a drop and a create;
    a query on the real tables drops them first, and none outlives the run's workers."""
    from types import SimpleNamespace

    from queryeval.engines.query.neighbours.pg import ORIGINAL
    from queryeval.engines.query.neighbours.pg_names import table_refs
    from queryeval.engines.query.neighbours.pg_schema import to_schema
    from queryeval.engines.query.worker_handle import close_all
    from queryeval.tasks.query import testsuite

    with PgRunner(emp["reader"]) as builder:
        both = to_schema(builder.schema(table_refs("SELECT name FROM emp"), 30))
        both.visible = []
        builder.write(both, tmp_path / "a.json", {"dept": [(1, "a")],
                                                  "emp": [(1, "p", 5, 1, None)]})
        builder.write(both, tmp_path / "b.json", {"dept": [(2, "b")],
                                                  "emp": [(2, "q", 6, 2, None)]})
        builder.release()
    monkeypatch.setattr(testsuite, "WORKERS", 1)  # one worker: every check lands in it
    suite = testsuite.TestSuite(0, 0)
    task = SimpleNamespace(test_suite=suite)
    original = SimpleNamespace(dialect="postgres", url=emp["reader"], memory_limit_bytes=None)
    try:
        with testsuite._open(task, tmp_path / "a.json", "sql", original) as engine:
            assert engine.execute("SELECT name FROM emp", timeout_s=10,
                                  max_rows=10).rows == [("p",)]
        first = temp_storage(emp["admin"])
        assert sorted(first) == ["dept", "emp"]  # still loaded after the check
        with testsuite._open(task, tmp_path / "b.json", "sql", original) as engine:
            assert engine.execute("SELECT name FROM emp", timeout_s=10,
                                  max_rows=10).rows == [("q",)]
        second = temp_storage(emp["admin"])
        for name in ("dept", "emp"):
            assert second[name][0] == first[name][0]  # the same table
            assert second[name][1] != first[name][1]  # its storage new
        with suite.runner("postgres", None, emp["reader"]) as runner:
            _, rows, _ = runner.run(ORIGINAL, "SELECT count(*) FROM emp", 10, 10)
            assert rows[0][0] > 1  # the real table, not a neighbour's one row
        assert temp_storage(emp["admin"]) == {}
    finally:
        close_all(suite.release())
    assert temp_tables(emp["admin"]) == []


def test_a_search_path_that_puts_the_real_tables_first_is_refused(pg_server, tmp_path):
    """A role whose search_path names pg_temp after public: unqualified names reach the real
    tables even with the temporary copies in place. The gold's probe on an empty neighbour
    finds it (the server's plan reads public.emp): null with the reason, no set built."""
    db = pg_server.database("tspg_path", (EXAMPLE / "emp.sql").read_text() + GRANTS +
                            "ALTER ROLE reader IN DATABASE tspg_path SET search_path = "
                            "public, pg_temp;")
    rec = one_case(db["reader"], "SELECT name FROM emp WHERE salary > 100",
                   "SELECT name FROM emp WHERE name IN ('bob', 'carol')", tmp_path)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] is None
    assert rec["test_suite"]["reason"].startswith(
        "no neighbour databases: the gold would read the real tables on a neighbour: it reads "
        "public.emp of the real database")


def test_a_column_collation_is_kept_in_the_neighbours(pg_server, tmp_path):
    """A column declared with a collation other than its type's (an ICU one here, on a
    server whose default is C): the neighbours' copies declare it too, so comparisons and
    sort order on them are the real table's. Copied without it, a prediction forcing
    COLLATE "C" agreed with the gold on every neighbour (1.0, though 'Zed' < 'c' under C and
    not under the column's collation); now a neighbour refutes it."""
    setup = ('CREATE TABLE emp (id int PRIMARY KEY, name text COLLATE "und-x-icu" NOT NULL, '
             "salary int); INSERT INTO emp VALUES (1, 'alice', 90), (2, 'bob', 120), "
             "(3, 'carol', 150), (4, 'dave', 80);" + GRANTS)
    with psycopg.connect(pg_server.url(), autocommit=True) as con:
        if not con.execute("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'").fetchone():
            pytest.skip("this PostgreSQL has no ICU collations")
    db = pg_server.database("tspg_collation", setup)
    gold = "SELECT name FROM emp WHERE name < 'c'"
    from queryeval.engines.query.neighbours.pg_names import table_refs

    with PgRunner(db["reader"]) as runner:
        doc = runner.schema(table_refs(gold), 30)
    name = next(c for c in doc["tables"][0]["columns"] if c["name"] == "name")
    assert name["collation"] == 'pg_catalog."und-x-icu"'
    assert all("collation" not in c for c in doc["tables"][0]["columns"] if c is not name)
    rec = one_case(db["reader"], gold, "SELECT name FROM emp WHERE name COLLATE \"C\" < 'c'",
                   tmp_path, n=8)
    assert rec["scores"]["exact_match_f1"] == 1.0  # the same on the real rows
    assert rec["scores"]["test_suite_match"] == 0.0, rec["test_suite"]
    same = one_case(db["reader"], gold, "SELECT e.name FROM emp AS e WHERE e.name < 'c'",
                    tmp_path / "same", n=8)
    assert same["scores"]["test_suite_match"] == 1.0, same["test_suite"]


def test_identity_and_serial_columns_get_neighbours(pg_server, tmp_path):
    """A key GENERATED ALWAYS AS IDENTITY and a serial column: the copies are plain columns
    (no identity, no sequence default) and the neighbours' rows carry their own values, so
    the example's right-by-accident prediction is refuted and the equivalent one is not."""
    db = pg_server.database("tspg_identity", (
        "CREATE TABLE emp (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, k serial, "
        "name text NOT NULL, salary int); INSERT INTO emp (name, salary) VALUES "
        "('alice', 90), ('bob', 120), ('carol', 150), ('dave', 80);" + GRANTS))
    gold = "SELECT name FROM emp WHERE salary > 100"
    wrong = one_case(db["reader"], gold, "SELECT name FROM emp WHERE name IN ('bob', 'carol')",
                     tmp_path / "wrong")
    assert wrong["scores"]["test_suite_match"] == 0.0, wrong["test_suite"]
    bad = wrong["test_suite"]["refuted_by"]["database"]["emp"]
    assert bad["columns"] == ["id", "k", "name", "salary"]
    assert all(row[0] is not None and row[1] is not None for row in bad["rows"])
    same = one_case(db["reader"], gold, "SELECT name FROM emp WHERE NOT salary <= 100",
                    tmp_path / "same")
    assert same["scores"]["test_suite_match"] == 1.0, same["test_suite"]


@pytest.mark.parametrize(("check", "expected"), [(" CHECK (salary >= 0)", None), ("", 0.0)])
def test_a_check_constraint_holds_on_the_neighbours(pg_server, tmp_path, check, expected):
    """The copies keep the table's CHECK: with salary >= 0 enforced, dropping the gold's
    WHERE salary >= 0 changes nothing on any neighbour (the mutant survives, so the
    prediction that is that mutant stays unknown, never refuted by a row the schema
    forbids); without the CHECK a neighbour with a negative salary refutes it."""
    name = "tspg_salary_check" if check else "tspg_salary_nocheck"
    db = pg_server.database(name, (
        f"CREATE TABLE emp (id int PRIMARY KEY, salary int NOT NULL{check}); "
        "INSERT INTO emp VALUES (1, 90), (2, 120), (3, 150);" + GRANTS))
    rec = one_case(db["reader"], "SELECT id FROM emp WHERE salary >= 0", "SELECT id FROM emp",
                   tmp_path, n=8)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] == expected, rec["test_suite"]
    if check:
        assert "near_miss" in rec["test_suite"], rec["test_suite"]


def test_table_names_that_differ_only_in_case_are_two_tables(pg_server, tmp_path):
    """PostgreSQL keeps a quoted name's case: "T" (the gold's, filled on the neighbours) and
    t (only the prediction's, an empty copy on each) are two tables. Read as one, the
    filled "T" made t look filled and the prediction agreeing only because t is empty got
    1.0; now it is unknown, naming t."""
    db = pg_server.database("tspg_case", (
        'CREATE TABLE "T" (x int NOT NULL); INSERT INTO "T" VALUES (1), (2); '
        "CREATE TABLE t (x int);" + GRANTS))
    gold = 'SELECT count(*) FROM "T"'
    rec = one_case(db["reader"], gold, gold + " WHERE NOT EXISTS (SELECT 1 FROM t)", tmp_path)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] is None, rec["test_suite"]
    assert rec["test_suite"]["unseen_tables"] == ["t"]


def test_a_gold_calling_a_user_function_gets_no_neighbours(emp, tmp_path):
    rec = one_case(emp["reader"], "SELECT name FROM emp WHERE salary > headcount() * 20",
                   "SELECT name FROM emp WHERE name IN ('bob', 'carol')", tmp_path)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] is None
    assert "it calls public.headcount(), a function outside pg_catalog" in \
        rec["test_suite"]["reason"]


def test_a_gold_that_fails_on_every_candidate_is_unknown_not_equal(emp, tmp_path):
    """It divides by zero unless the table is exactly the original: no candidate keeps it,
    so no neighbour can judge the case (before: 'equal on all 0 neighbours', a 1)."""
    gold = ("SELECT name FROM emp WHERE 1 / (CASE WHEN (SELECT string_agg(name, ',' ORDER BY "
            "id) FROM emp) = 'alice,bob,carol,dave,erin' THEN 1 ELSE 0 END) = 1 "
            "AND salary > 100")
    rec = one_case(emp["reader"], gold, "SELECT name FROM emp WHERE name IN ('bob', 'carol')",
                   tmp_path, n=3)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["test_suite"]["neighbours"] == 0
    assert rec["scores"]["test_suite_match"] is None
    assert rec["test_suite"]["reason"].startswith("no neighbour database can judge it")


def test_a_table_the_gold_does_not_reach_is_empty_on_the_neighbours(emp, tmp_path):
    """The gold reads dept only (emp refers to dept, not the other way round); the
    prediction counts the departments that have staff. On the original both give 2; on a
    neighbour emp is an empty temporary copy (a database the schema allows), where the
    prediction gives 0: refuted, where before it was unknown (the plan check refused the
    real emp)."""
    rec = one_case(emp["reader"], "SELECT count(*) FROM dept",
                   "SELECT count(DISTINCT dept_id) FROM emp", tmp_path, n=3)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] == 0.0, rec["test_suite"]
    sample = rec["test_suite"]["refuted_by"]["result_sample"]
    assert sample["predicted"]["rows"] == [["0"]]  # the sample's cells are text


def test_a_big_table_is_sampled_by_blocks_and_the_key_is_stable(pg_server, tmp_path):
    """Above 100,000 rows (the planner's estimate) a column's values come from a repeatable
    block sample: two builds read the same values (the same key: the second is cached)."""
    db = pg_server.database("tspg_big", "CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL);"
                            "INSERT INTO big SELECT g, g % 997 FROM generate_series(1, 150000) g;"
                            "ANALYZE big;" + GRANTS)
    gold = "SELECT count(*) FROM big WHERE v > 500"
    first = pg_neighbours(db["reader"], gold, 3, seed=1, cache_dir=tmp_path)
    again = pg_neighbours(db["reader"], gold, 3, seed=1, cache_dir=tmp_path)
    assert not first.cached and again.cached and again.folder == first.folder
    with PgRunner(db["reader"]) as runner:
        doc = runner.schema(["big"], 30)
    values = doc["tables"][0]["values"]["id"]
    assert len(values) == 50 and values != list(range(1, 51))  # not the whole table's first 50


def test_cli_run_with_a_postgresql_database_and_test_suite(emp, tmp_path):
    from queryeval.cli.app import main

    suite = suite_for(emp["reader"], tmp_path)
    out = tmp_path / "runs"
    assert main(["run", str(suite), "--responses", str(EXAMPLE / "predictions.jsonl"),
                 "--task", "query", "--test-suite", "4", "-o", str(out), "-q"]) == 0
    doc = json.loads(next(out.rglob("metrics_*.json")).read_text())
    assert doc["overall_metrics"]["test_suite"] == 4
    assert doc["overall_metrics"]["test_suite_refuted"] == 2
    assert doc["overall_metrics"]["test_suite_unknown"] == 0


def test_foreign_keys_in_a_cycle_are_added_after_the_tables(pg_server, tmp_path):
    """emp.dept_id refers to dept and dept.head_id to emp: the copies are created first
    and the second key added after (it was a failed build: the referenced copy did not
    exist yet); the classic accident is refuted on that schema too."""
    db = pg_server.database("tspg_cycle", """
        CREATE TABLE dept (id int PRIMARY KEY, name text NOT NULL, head_id int);
        CREATE TABLE emp (id int PRIMARY KEY, name text NOT NULL, salary int,
                          dept_id int REFERENCES dept(id));
        ALTER TABLE dept ADD FOREIGN KEY (head_id) REFERENCES emp(id);
        INSERT INTO dept VALUES (1, 'sales', NULL), (2, 'research', NULL);
        INSERT INTO emp VALUES (1, 'alice', 90, 1), (2, 'bob', 120, 1), (3, 'carol', 150, 2);
        UPDATE dept SET head_id = 2 WHERE id = 1;
        """ + GRANTS)
    rec = one_case(db["reader"], "SELECT name FROM emp WHERE salary > 100",
                   "SELECT name FROM emp WHERE name IN ('bob', 'carol')", tmp_path)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] == 0.0, rec["test_suite"]
    assert set(rec["test_suite"]["refuted_by"]["database"]) == {"emp", "dept"}


def test_audit_finds_an_under_constrained_gold_on_postgres(emp, tmp_path, monkeypatch):
    """``queryeval audit --test-suite N`` on a PostgreSQL database: DISTINCT over the
    primary key changes nothing on any database the schema allows, so its mutant without
    DISTINCT survives (it was skipped for PostgreSQL). A gold the neighbours cannot run
    (another schema's table) has nothing to report."""
    from helpers.audit_ties_deadline import _suite
    from queryeval.cli.app import main
    from queryeval.engines.query.neighbours import under_constrained

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    suite = _suite(tmp_path, {"loose": "SELECT DISTINCT id FROM emp"})
    report = tmp_path / "a.json"
    assert main(["audit", str(suite), "--database", emp["reader"], "--json", str(report),
                 "--test-suite", "6"]) == 0
    found = {r["case_id"]: r for r in json.loads(report.read_text(encoding="utf-8"))["golds"]}
    expected = under_constrained("SELECT DISTINCT id FROM emp", emp["reader"], 6, 0,
                                 cache_dir=tmp_path / "direct")
    assert "SELECT id FROM emp" in expected
    assert found["loose"]["under_constrained"] == {"mutants": expected, "neighbours": 6}
    assert under_constrained("SELECT DISTINCT id FROM other.emp", emp["reader"], 3,
                             cache_dir=tmp_path / "direct") == []
    assert under_constrained("SELECT DISTINCT id FROM public.emp", emp["reader"], 6, 0,
                             cache_dir=tmp_path / "direct") == expected  # the same table


@pytest.mark.parametrize(("gold", "pred"), [
    # equal only because bonus is generated from salary: fuzzed freely they would differ
    ("SELECT name FROM staff WHERE bonus > 10", "SELECT name FROM staff WHERE salary / 10 > 10"),
    # equal only under CHECK (salary >= 0): a negative salary would tell them apart
    ("SELECT name FROM staff WHERE salary >= 0", "SELECT name FROM staff WHERE salary IS NOT NULL"),
])
def test_generated_columns_and_checks_hold_on_every_neighbour(pg_server, tmp_path, gold, pred):
    db = pg_server.database("tspg_checks", """
        CREATE TABLE staff (id int PRIMARY KEY, name text NOT NULL,
                            salary int CHECK (salary >= 0),
                            bonus int GENERATED ALWAYS AS (salary / 10) STORED);
        INSERT INTO staff (id, name, salary) VALUES (1, 'ann', 90), (2, 'bob', 150),
                                                    (3, 'cy', NULL), (4, 'di', 120);
        """ + GRANTS)
    rec = one_case(db["reader"], gold, pred, tmp_path)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] == 1.0, rec["test_suite"]
    built = pg_neighbours(db["reader"], gold, 6, seed=0)
    rows = [r for p in built.paths() for r in database_rows(p, "json")["staff"]["rows"]]
    assert rows and all(r[2] is None or r[2] >= 0 for r in rows)
    assert any(r[2] is not None and r[2] / 10 > 10 for r in rows)  # the filter is exercised
