"""SQL engines on sqlite and DuckDB files and on a PostgreSQL server: results, types, limits,
errors, the statement check. Every engine-level test runs on all three; where PostgreSQL
legitimately differs, the test says so.

PostgreSQL: a real server per pytest process (``pg_server`` in conftest.py), the engine logged
in as ``reader``, a role that may only SELECT (the setup docs/execution.md recommends);
skipped with the reason only where the server binaries or psycopg are absent."""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3
import time
from pathlib import Path

import pytest

from helpers.sql_parses import record_parses  # noqa: E402
from queryeval.engines.query import (
    DuckDBEngine,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SqliteEngine,
)
from queryeval.engines.query.postgres import check_postgres
from queryeval.engines.query.sql_safety import check_sql
from queryeval.errors import InputError

XSD = "http://www.w3.org/2001/XMLSchema#"
PEOPLE = [(1, "Alice", 30, 1.5), (2, "Bob", 25, None), (3, "Carol", None, 2.25)]


def make_sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, age INTEGER, score REAL)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", PEOPLE)
    con.execute("CREATE TABLE nums (n INTEGER)")
    con.executemany("INSERT INTO nums VALUES (?)", [(i,) for i in range(100)])
    con.commit()
    con.close()
    return path


def make_duckdb(path: Path) -> Path:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people (id INTEGER, name VARCHAR, age INTEGER, score DOUBLE)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", [list(r) for r in PEOPLE])
    con.execute("CREATE TABLE nums AS SELECT range::INTEGER AS n FROM range(100)")
    con.execute("CREATE TABLE typed AS SELECT DATE '2024-02-29' AS d, 1.25::DECIMAL(5,2) AS m, "
                "TRUE AS b, TIMESTAMP '2024-01-02 03:04:05' AS ts")
    con.close()
    return path


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory):
    path = make_sqlite(tmp_path_factory.mktemp("sqlite") / "db.sqlite")
    with SqliteEngine(path) as eng:
        yield eng


@pytest.fixture(scope="module")
def duckdb_engine(tmp_path_factory: pytest.TempPathFactory):
    path = make_duckdb(tmp_path_factory.mktemp("duckdb") / "db.duckdb")
    with DuckDBEngine(path) as eng:
        yield eng


PG_SETUP = """
CREATE TABLE people (id integer PRIMARY KEY, name text, age integer, score double precision);
INSERT INTO people VALUES (1, 'Alice', 30, 1.5), (2, 'Bob', 25, NULL), (3, 'Carol', NULL, 2.25);
CREATE TABLE nums AS SELECT g::integer AS n FROM generate_series(0, 99) g;
CREATE TABLE typed AS SELECT DATE '2024-02-29' AS d, 1.25::numeric(5,2) AS m, TRUE AS b,
    TIMESTAMP '2024-01-02 03:04:05' AS ts;
GRANT SELECT ON people, nums, typed TO reader;
"""


@pytest.fixture(scope="module")
def postgres_engine(pg_server):
    from queryeval.engines.query.postgres import PostgresEngine

    db = pg_server.database("engines_sql", PG_SETUP)
    with PostgresEngine(db["reader"]) as eng:
        yield eng


@pytest.fixture(params=["sqlite", "duckdb", "postgres"])
def sql_engine(request: pytest.FixtureRequest):
    return request.getfixturevalue(f"{request.param}_engine")


@pytest.fixture(params=["duckdb", "postgres"])
def typed_engine(request: pytest.FixtureRequest):
    """Engines with real DATE / DECIMAL / BOOLEAN / TIMESTAMP columns (sqlite has none)."""
    return request.getfixturevalue(f"{request.param}_engine")


def test_select_returns_columns_rows_and_nulls(sql_engine) -> None:
    r = sql_engine.execute("SELECT id, name, age, score FROM people ORDER BY id")
    assert r.columns == ["id", "name", "age", "score"]
    assert r.rows == PEOPLE
    assert r.kind == "sql" and not r.truncated and r.elapsed_ms >= 0
    js = r.to_sparql_json()
    assert js["head"]["vars"] == ["id", "name", "age", "score"]
    assert js["results"]["bindings"][1] == {
        "id": {"type": "literal", "value": "2", "datatype": XSD + "integer"},
        "name": {"type": "literal", "value": "Bob"},
        "age": {"type": "literal", "value": "25", "datatype": XSD + "integer"},
    }
    assert r.to_table_json() == {"columns": ["id", "name", "age", "score"],
                                 "rows": [list(p) for p in PEOPLE]}


def test_with_union_and_aggregates(sql_engine) -> None:
    r = sql_engine.execute(
        "WITH adults AS (SELECT name, age FROM people WHERE age >= 26) "
        "SELECT name FROM adults UNION ALL SELECT 'x' ORDER BY 1")
    assert r.rows == [("Alice",), ("x",)]
    r = sql_engine.execute("SELECT count(*), sum(n), max(n) FROM nums WHERE n % 2 = 0")
    assert r.rows == [(50, 2450, 98)]


def test_row_limit(sql_engine) -> None:
    r = sql_engine.execute("SELECT n FROM nums ORDER BY n", max_rows=10)
    assert r.rows == [(i,) for i in range(10)] and r.truncated
    r = sql_engine.execute("SELECT n FROM nums", max_rows=100)
    assert r.row_count == 100 and not r.truncated
    r = sql_engine.execute("SELECT n FROM nums", max_rows=0)
    assert r.rows == [] and r.truncated and r.columns == ["n"]


def test_infinite_recursive_cte_stops_at_the_row_limit(sql_engine) -> None:
    r = sql_engine.execute(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
        max_rows=5, timeout_s=5)
    assert r.rows == [(1,), (2,), (3,), (4,), (5,)] and r.truncated


def test_cross_join_count_times_out_and_engine_recovers(sql_engine) -> None:
    t0 = time.monotonic()
    with pytest.raises(QueryTimeout) as err:
        sql_engine.execute("SELECT count(*) FROM nums a, nums b, nums c, nums d, nums e, nums f",
                           timeout_s=0.3)
    assert time.monotonic() - t0 < 10  # unbounded, this runs for many minutes
    assert err.value.to_dict() == {"kind": "timeout", "reason": err.value.reason}
    assert sql_engine.execute("SELECT count(*) FROM nums").rows == [(100,)]


def test_errors_are_failed_queries(sql_engine) -> None:
    with pytest.raises(QueryFailed) as err:
        sql_engine.execute("SELECT * FROM no_such_table")
    assert not err.value.syntax_error and "no_such_table" in err.value.reason
    with pytest.raises(QueryRefused, match="could not parse"):
        sql_engine.execute("SELEC name FROM people")


def test_typed_columns_become_typed_literals(typed_engine) -> None:
    r = typed_engine.execute("SELECT d, m, b, ts FROM typed")
    assert r.rows == [(dt.date(2024, 2, 29), decimal.Decimal("1.25"), True,
                       dt.datetime(2024, 1, 2, 3, 4, 5))]
    b = r.to_sparql_json()["results"]["bindings"][0]
    assert b["d"] == {"type": "literal", "value": "2024-02-29", "datatype": XSD + "date"}
    assert b["m"] == {"type": "literal", "value": "1.25", "datatype": XSD + "decimal"}
    assert b["b"] == {"type": "literal", "value": "true", "datatype": XSD + "boolean"}
    assert b["ts"]["value"] == "2024-01-02T03:04:05" and b["ts"]["datatype"] == XSD + "dateTime"
    assert r.to_table_json()["rows"] == [["2024-02-29", "1.25", True, "2024-01-02T03:04:05"]]


def test_duplicate_column_names_are_suffixed_in_sparql_json(sql_engine) -> None:
    r = sql_engine.execute("SELECT 1 AS a, 2 AS a")
    assert r.columns == ["a", "a"]
    assert r.to_sparql_json()["head"]["vars"] == ["a", "a_2"]


def test_sqlite_denies_functions_off_the_safe_list(sqlite_engine: SqliteEngine) -> None:
    with pytest.raises(QueryRefused, match=r"FUNCTION\(randomblob\)"):
        sqlite_engine.execute("SELECT randomblob(1000000000)")
    assert sqlite_engine.execute("SELECT upper('a'), abs(-2), round(2.5)").rows == [("A", 2, 3.0)]


def test_missing_database_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        SqliteEngine(tmp_path / "nope.sqlite")
    with pytest.raises(InputError, match="not found"):
        DuckDBEngine(tmp_path / "nope.duckdb")
    assert list(tmp_path.iterdir()) == []  # opening read-only never creates the file
    (tmp_path / "junk.sqlite").write_bytes(b"this is not a database" * 10)
    with pytest.raises(InputError, match="cannot open sqlite database"):
        SqliteEngine(tmp_path / "junk.sqlite")


# ----------------------------------------------------------------------- statement check

ACCEPTED = [
    "SELECT 1",
    "SELECT 1;",
    "select name from people where age > 3 order by 1 limit 5",
    "WITH x AS (SELECT 1 AS a) SELECT * FROM x",
    "SELECT 1 UNION SELECT 2",
    "(SELECT 1)",
    "VALUES (1), (2)",
]
ACCEPTED_ROWS = {
    "SELECT 1": [(1,)], "SELECT 1;": [(1,)],
    "select name from people where age > 3 order by 1 limit 5": [("Alice",), ("Bob",)],
    "WITH x AS (SELECT 1 AS a) SELECT * FROM x": [(1,)], "SELECT 1 UNION SELECT 2": [(1,), (2,)],
    "(SELECT 1)": [(1,)], "VALUES (1), (2)": [(1,), (2,)],
}
REFUSED = [
    ("SELECT 1; DROP TABLE people", "exactly one statement"),
    ("INSERT INTO people VALUES (9, 'x', 1, 1)", "INSERT"),
    ("UPDATE people SET age = 0", "UPDATE"),
    ("DELETE FROM people", "DELETE"),
    ("DROP TABLE people", "DROP"),
    ("CREATE TABLE t (a INT)", "CREATE"),
    ("PRAGMA user_version = 5", "PRAGMA"),
    ("ATTACH DATABASE 'x.db' AS x", "ATTACH"),
    ("SELECT * INTO t2 FROM people", "INTO"),
    ("BEGIN", "BEGIN"),
    ("EXPLAIN SELECT 1", "EXPLAIN"),
    ("", "empty statement"),
    (";", "empty statement"),
]


def _check(sql: str, dialect: str) -> None:
    """The statement check each engine runs before sending anything."""
    if dialect == "postgres":
        check_postgres(sql)
    else:
        check_sql(sql, dialect)  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
@pytest.mark.parametrize("sql", ACCEPTED)
def test_check_accepts_plain_queries(sql: str, dialect: str) -> None:
    _check(sql, dialect)


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
@pytest.mark.parametrize("sql,reason", REFUSED)
def test_check_refuses_with_a_reason(sql: str, reason: str, dialect: str) -> None:
    if dialect == "postgres" and sql.startswith("ATTACH"):
        reason = "could not parse"  # ATTACH is no PostgreSQL syntax: refused as unparsable
    with pytest.raises(QueryRefused) as err:
        _check(sql, dialect)
    assert reason in err.value.reason


@pytest.mark.parametrize("sql", ACCEPTED)
def test_accepted_queries_run_on_every_engine(sql_engine, sql: str) -> None:
    """What the check accepts, the engine runs (no refusal from a guard further down)."""
    if sql == "(SELECT 1)" and sql_engine.dialect == "sqlite":
        # sqlite's grammar has no parenthesised top-level SELECT (the others accept it)
        with pytest.raises(QueryFailed, match="syntax error") as err:
            sql_engine.execute(sql)
        assert err.value.syntax_error
        return
    r = sql_engine.execute(sql)
    assert sorted(r.rows) == ACCEPTED_ROWS[sql]


@pytest.mark.parametrize("sql,reason", [
    ("SELECT * FROM read_csv('/etc/passwd')", "READ_CSV"),
    ("SELECT * FROM read_parquet('x.parquet')", "READ_PARQUET"),
    ("SELECT * FROM glob('*')", "glob"),
    ("SELECT * FROM '/etc/passwd'", "looks like a file"),
    ("SELECT * FROM 'https://example.org/x.csv'", "looks like a file"),
    ("SELECT * FROM query('DROP TABLE people')", "query"),
    ("SELECT read_text('/etc/passwd')", "read_text"),
    ("SELECT getenv('HOME')", "getenv"),
    ("COPY people TO 'out.csv'", "COPY"),
    ("INSTALL httpfs", "INSTALL"),
    ("LOAD httpfs", "LOAD"),
    ("SET threads = 1", "SET"),
    ("CALL pragma_version()", "CALL"),
])
def test_check_refuses_duckdb_file_and_config_access(sql: str, reason: str) -> None:
    with pytest.raises(QueryRefused) as err:
        check_sql(sql, "duckdb")
    assert reason in err.value.reason


def test_check_allows_duckdb_generators() -> None:
    check_sql("SELECT * FROM range(10)", "duckdb")
    check_sql("SELECT * FROM generate_series(1, 3)", "duckdb")
    check_sql("SELECT * FROM unnest([1, 2])", "duckdb")
    check_sql('SELECT * FROM "people"', "duckdb")


def test_close_all_ends_every_worker_through_its_exit_frame(tmp_path: Path) -> None:
    from queryeval.engines.query.worker_handle import close_all

    engines = [SqliteEngine(make_sqlite(tmp_path / "a.sqlite")),
               DuckDBEngine(make_duckdb(tmp_path / "b.duckdb"))]
    for engine in engines:
        assert engine.execute("SELECT count(*) FROM nums").rows == [(100,)]
    workers = [engine.worker for engine in engines]
    close_all(engines)
    # each worker read its exit frame and ended on its own (a killed one reads -9)
    assert [w.exit_code for w in workers] == [0, 0]
    assert [w.ask_exit() for w in workers] == [False, False]  # nothing left to ask
    for engine in engines:
        with pytest.raises(QueryFailed, match="closed"):
            engine.execute("SELECT 1")


def test_an_accepted_query_is_parsed_once_and_a_refused_one_every_time(monkeypatch):
    """A gold and its mutants are checked on every candidate database: ``check_sql``
    parses an accepted text once a process (its answer is a function of the text and the
    dialect) and gives the same answer after; a refused text raises on every call, and a
    text longer than the memo's bound is parsed every time."""

    from queryeval.engines.query import sql_safety

    parsed, tag = record_parses(monkeypatch)  # tag: in texts no earlier test checked
    accepted = f"SELECT count(*) AS n_{tag} FROM json_each('[1]')"
    refused = f"SELECT 1 AS n_{tag}; DROP TABLE emp"
    long = f"SELECT 1 AS n_{tag} WHERE 1 = 1" + " AND 1 = 1" * (sql_safety._MEMO_CHARS // 10)
    for _ in range(3):
        assert check_sql(accepted, "sqlite") == frozenset({"json_each"})
        with pytest.raises(QueryRefused, match="exactly one statement"):
            check_sql(refused, "sqlite")
        assert check_sql(long, "sqlite") == frozenset()
    assert check_sql(accepted, "duckdb") == frozenset()  # another dialect: its own answer
    assert [parsed.count(q) for q in (accepted, refused, long)] == [2, 3, 3]
