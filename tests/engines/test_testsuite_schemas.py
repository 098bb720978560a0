"""--test-suite N on schemas as people have them (docs/test-suite.md, "Schemas"): generated
columns, sequences, FTS5 virtual tables and their shadow tables, WITHOUT ROWID, CHECK,
collations, DuckDB's ENUM / STRUCT / LIST / MAP / UUID / INTERVAL / DECIMAL / BLOB /
TIMESTAMPTZ get neighbours that hold rows of the right types, or the case is unknown with
the reason; a neighbour set in which every table is empty is never a verdict."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers.testsuite_schemas import _run  # noqa: E402,F401
from queryeval.engines.query.neighbours import database_rows, sql_neighbours

duckdb = pytest.importorskip("duckdb")

HIGH = "SELECT name FROM emp WHERE salary > 100"
BY_NAME = "SELECT name FROM emp WHERE name IN ('bob', 'carol')"  # right here by accident


def _duckdb(path: Path, *script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    for sql in script:
        con.execute(sql)
    con.close()
    return path


def _sqlite(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(script)
    con.close()
    return path


EMP_ROWS = ("INSERT INTO emp (id, name, salary) VALUES (1, 'alice', 90), (2, 'bob', 120), "
            "(3, 'carol', 150), (4, 'dave', 80)")


# ------------------------------------------------------------ generated columns


def test_a_generated_column_does_not_empty_the_neighbours(tmp_path, monkeypatch):
    """The issue's reproduction: examples/testsuite's high-earners prediction, refuted on the
    plain table, was certified (1.0, "equal on the original and all 5 neighbours") once the
    table had a GENERATED column -- every insert named it and DuckDB refused every row."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _duckdb(tmp_path / "db" / "emp.duckdb",
                 "CREATE TABLE emp (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                 "salary INTEGER, bonus INTEGER GENERATED ALWAYS AS (salary // 10))", EMP_ROWS)
    rec = _run(tmp_path, db, HIGH, BY_NAME)
    assert rec["scores"]["test_suite_match"] == 0.0, rec["test_suite"]
    bad = rec["test_suite"]["refuted_by"]["database"]["emp"]
    assert bad["total"] > 0 and bad["columns"] == ["id", "name", "salary", "bonus"]
    for row in bad["rows"]:  # the engine computed the column in the neighbour
        assert row[3] == (None if row[2] is None else row[2] // 10)
    built = sql_neighbours(db, "duckdb", HIGH, 5, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 5 and all(nb.rows > 0 for nb in built.neighbours)


def test_sqlite_generated_columns_are_computed_in_the_neighbours(tmp_path):
    db = _sqlite(tmp_path / "g.sqlite", """
        CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER,
                          bonus INTEGER GENERATED ALWAYS AS (salary / 10) VIRTUAL,
                          tag TEXT GENERATED ALWAYS AS (upper(name)) STORED);
        """ + EMP_ROWS + ";")
    built = sql_neighbours(db, "sqlite", HIGH, 4, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 4
    for path in built.paths():
        con = sqlite3.connect(path)
        rows = con.execute("SELECT salary, bonus, name, tag FROM emp").fetchall()
        con.close()
        assert rows and all(b == (None if s is None else s // 10) and t == n.upper()
                            for s, b, n, t in rows)


# ------------------------------------------------------------ sequences, FTS5, constraints


def test_a_key_drawn_from_a_sequence_gets_neighbours(tmp_path):
    """``DEFAULT nextval('s')``: the sequence is recreated before the table (before, every
    candidate failed with "Sequence with name s does not exist")."""
    db = _duckdb(tmp_path / "db" / "seq.duckdb", "CREATE SEQUENCE s START 10",
                 "CREATE TABLE emp (id INTEGER DEFAULT nextval('s') PRIMARY KEY, "
                 "name VARCHAR NOT NULL, salary INTEGER)",
                 "INSERT INTO emp (name, salary) VALUES ('alice', 90), ('bob', 120), "
                 "('carol', 150)")
    built = sql_neighbours(db, "duckdb", HIGH, 4, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 4 and all(nb.rows > 0 for nb in built.neighbours)
    con = duckdb.connect(str(built.paths()[0]), read_only=True)
    assert con.execute("SELECT count(*) FROM duckdb_sequences() WHERE sequence_name = 's'"
                       ).fetchone()[0] == 1
    con.close()


def test_an_fts5_table_and_its_shadow_tables_get_neighbours(tmp_path):
    """The virtual table's CREATE makes its shadow tables; creating them again failed
    ("table 'notes_data' already exists") and every case on the database was unknown. (A
    query on the FTS5 table itself is refused by the sqlite engine's authorizer, on the
    original as on a neighbour: FTS5 writes its own catalog when first read.)"""
    if not sqlite3.connect(":memory:").execute(
            "SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0]:
        pytest.skip("this sqlite has no FTS5")
    db = _sqlite(tmp_path / "fts.sqlite", """
        CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER);
        CREATE VIRTUAL TABLE notes USING fts5(title, body);
        INSERT INTO notes VALUES ('pay', 'bob earns 120'), ('hire', 'carol joins');
        """ + EMP_ROWS + ";")
    built = sql_neighbours(db, "sqlite", HIGH, 4, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 4
    for path in built.paths():
        tables = database_rows(path, "sqlite")
        assert "notes" in tables and "notes_data" not in tables
        con = sqlite3.connect(path)  # the index is whole: a MATCH query answers
        assert con.execute("SELECT count(*) FROM notes WHERE notes MATCH 'bob OR carol "
                           "OR alpha OR x'").fetchone()[0] >= 0
        con.execute("INSERT INTO notes(notes) VALUES ('integrity-check')")
        con.close()
    assert any(database_rows(p, "sqlite")["notes"]["rows"] for p in built.paths())


def test_without_rowid_check_and_collation_are_kept(tmp_path):
    db = _sqlite(tmp_path / "c.sqlite", """
        CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL COLLATE NOCASE,
                          salary INTEGER CHECK (salary IS NULL OR salary BETWEEN 0 AND 160));
        CREATE TABLE tags (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;
        INSERT INTO tags VALUES ('a', 1), ('b', 2);
        """ + EMP_ROWS + ";")
    built = sql_neighbours(db, "sqlite", "SELECT name FROM emp WHERE name = 'BOB'", 4,
                           cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 4
    for path in built.paths():
        con = sqlite3.connect(path)
        ddl = dict(con.execute("SELECT name, sql FROM sqlite_master").fetchall())
        assert "COLLATE NOCASE" in ddl["emp"] and "WITHOUT ROWID" in ddl["tags"]
        salaries = [r[0] for r in con.execute("SELECT salary FROM emp")]
        assert all(s is None or 0 <= s <= 160 for s in salaries)
        con.close()


@pytest.mark.parametrize(("collate", "expected"), [(" COLLATE NOCASE", 1.0), ("", 0.0)])
def test_a_duckdb_collation_decides_on_the_neighbours_as_on_the_original(
        tmp_path, monkeypatch, collate, expected):
    """DuckDB's own DDL keeps a column's collation, so the neighbours compare as the
    original does: under NOCASE ``name = 'bob'`` and ``lower(name) = 'bob'`` agree on every
    neighbour (1.0); without it a neighbour holding another case of bob tells them apart."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _duckdb(tmp_path / "db" / "c.duckdb",
                 f"CREATE TABLE emp (id INTEGER PRIMARY KEY, name VARCHAR{collate} NOT NULL, "
                 "salary INTEGER)", EMP_ROWS)
    rec = _run(tmp_path, db, "SELECT id FROM emp WHERE name = 'bob'",
               "SELECT id FROM emp WHERE lower(name) = 'bob'", n=8)
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] == expected, rec["test_suite"]


def test_duckdb_types_get_values_of_their_own_type(tmp_path):
    """ENUM / STRUCT / LIST / MAP / UUID / INTERVAL / DECIMAL / BLOB / TIMESTAMPTZ columns:
    the neighbours hold rows, each value of its column's type (a value of another type made
    the engine refuse its row: most candidates came out empty)."""
    import datetime as dt
    import decimal
    import uuid

    db = _duckdb(tmp_path / "db" / "types.duckdb",
                 "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
                 "CREATE TABLE t (id INTEGER PRIMARY KEY, salary INTEGER, m mood, "
                 "st STRUCT(a INTEGER, b VARCHAR), l INTEGER[], mp MAP(VARCHAR, INTEGER), "
                 "u UUID, iv INTERVAL, d DECIMAL(10,2), b BLOB, tz TIMESTAMPTZ)",
                 "INSERT INTO t VALUES "
                 "(1, 90, 'sad', {'a': 1, 'b': 'x'}, [1, 2], MAP {'k': 1}, "
                 "'6b1e4c2a-0000-4000-8000-000000000001', INTERVAL 3 DAY, 1.25, 'ab'::BLOB, "
                 "TIMESTAMPTZ '2024-01-01 10:00:00+00'), "
                 "(2, 150, 'ok', {'a': 2, 'b': 'y'}, [3], MAP {'j': 2}, "
                 "'6b1e4c2a-0000-4000-8000-000000000002', INTERVAL 2 HOUR, 7.50, 'cd'::BLOB, "
                 "TIMESTAMPTZ '2024-02-01 10:00:00+00')")
    built = sql_neighbours(db, "duckdb", "SELECT id FROM t WHERE salary > 100", 5,
                           cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 5 and built.empty_candidates == 0
    kinds = {"m": str, "st": dict, "l": list, "mp": dict, "u": uuid.UUID,
             "iv": dt.timedelta, "d": decimal.Decimal, "b": bytes, "tz": dt.datetime}
    seen = set()
    for path in built.paths():
        con = duckdb.connect(str(path), read_only=True)
        cur = con.execute("SELECT * FROM t")
        names = [c[0] for c in cur.description]
        for row in cur.fetchall():
            for name, value in zip(names, row, strict=True):
                if name in kinds and value is not None:
                    assert isinstance(value, kinds[name]), (name, value)
                    seen.add(name)
            m = row[names.index("m")]
            assert m is None or m in ("sad", "ok", "happy")
        con.close()
    assert seen == set(kinds)  # every type's column got values in some neighbour


# ------------------------------------------------------------ an empty neighbour set


def test_an_all_empty_neighbour_set_gives_no_verdict(tmp_path, monkeypatch):
    """No row can be written (the CHECK refuses every value the fuzzer draws and the
    original holds none to copy): each candidate is empty, gold and prediction both count 0
    on every one -- that was "equal on the original and all 5 neighbours", 1.0."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _sqlite(tmp_path / "e.sqlite",
                 "CREATE TABLE t (x INTEGER NOT NULL CHECK (x > 1000000));")
    gold, pred = "SELECT count(*) FROM t", "SELECT count(*) FROM t WHERE x < 0"
    built = sql_neighbours(db, "sqlite", gold, 5, cache_dir=tmp_path / "c")
    assert built.neighbours == [] and built.empty_candidates == built.candidates > 0
    assert "CHECK constraint failed" in built.reason
    rec = _run(tmp_path, db, gold, pred)
    assert rec["scores"]["test_suite_match"] is None
    assert "no row could be written" in rec["test_suite"]["reason"]


def test_a_table_the_gold_reads_that_no_row_goes_into_gives_no_verdict(tmp_path, monkeypatch):
    """The other tables fill, but the one the gold reads never gets a row: every neighbour
    has it empty, so none judges the gold."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _sqlite(tmp_path / "e2.sqlite", """
        CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER);
        CREATE TABLE t (x INTEGER NOT NULL CHECK (x > 1000000));
        """ + EMP_ROWS + ";")
    gold, pred = "SELECT count(*) FROM t", "SELECT count(*) FROM t WHERE x < 0"
    built = sql_neighbours(db, "sqlite", gold, 5, cache_dir=tmp_path / "c")
    assert built.neighbours == [] and "into t " in built.reason
    rec = _run(tmp_path, db, gold, pred)
    assert rec["scores"]["test_suite_match"] is None, rec["test_suite"]
    # a gold on the table that fills is judged as before
    assert len(sql_neighbours(db, "sqlite", HIGH, 5, cache_dir=tmp_path / "c").neighbours) == 5


UNFILLABLE = """
    CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER);
    CREATE TABLE t (x INTEGER NOT NULL CHECK (x > 1000000));
    CREATE VIEW vt AS SELECT x FROM t;
    CREATE VIEW vvt AS SELECT x FROM vt;
    CREATE VIEW rich AS SELECT name, salary FROM emp WHERE salary > 100;
    CREATE VIEW vu AS SELECT t.x FROM t, t t2 USING (x);
    """ + EMP_ROWS + ";"  # vu: sqlglot keeps it as unparsed text (read: may read anything)


@pytest.mark.parametrize("view", ["vt", "vvt", "vu"])
def test_a_gold_reading_an_empty_table_through_a_view_gives_no_verdict(tmp_path, monkeypatch,
                                                                       view):
    """The table the gold reads through a view (or a view of a view) never gets a row:
    every neighbour has it empty, as when the gold names it. A prediction that is wrong
    wherever the table holds a row above 2,000,000 was "equal on the original and all 5
    neighbours", 1.0."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _sqlite(tmp_path / "v.sqlite", UNFILLABLE)
    gold = f"SELECT count(*) FROM {view}"
    built = sql_neighbours(db, "sqlite", gold, 5, cache_dir=tmp_path / "c")
    assert built.neighbours == [] and "into t " in built.reason
    rec = _run(tmp_path, db, gold, f"SELECT count(*) FROM {view} WHERE x < 2000000")
    assert rec["scores"]["test_suite_match"] is None, rec["test_suite"]
    assert "no row could be written into t " in rec["test_suite"]["reason"]


def test_a_duckdb_view_over_a_table_function_is_taken_to_read_every_table(tmp_path,
                                                                          monkeypatch):
    """``query_table('t')`` names its table in a string: the view is taken to read every
    table, so the unfillable t leaves the gold without neighbours (it was 1.0)."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _duckdb(tmp_path / "db" / "q.duckdb",
                 "CREATE TABLE emp (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                 "salary INTEGER)", EMP_ROWS,
                 "CREATE TABLE t (x INTEGER NOT NULL CHECK (x > 1000000))",
                 "CREATE VIEW vq AS SELECT * FROM query_table('t')")
    rec = _run(tmp_path, db, "SELECT count(*) FROM vq",
               "SELECT count(*) FROM vq WHERE x < 2000000")
    assert rec["scores"]["test_suite_match"] is None, rec["test_suite"]
    assert "no row could be written into t " in rec["test_suite"]["reason"]


def test_a_gold_over_a_view_of_a_table_that_fills_is_judged(tmp_path, monkeypatch):
    """A view of a table that does fill is followed to it and judged as the table itself:
    the prediction right by accident on the original is refuted, the equivalent one is
    equal on every neighbour."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _sqlite(tmp_path / "v.sqlite", UNFILLABLE)
    gold = "SELECT name FROM rich"
    built = sql_neighbours(db, "sqlite", gold, 5, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 5 and built.filled == ["emp"]
    assert built.views["vvt"] == ["vt"] and built.views["rich"] == ["emp"]
    assert built.views["vu"] == ["*"]  # not followed: taken to read every table
    wrong = _run(tmp_path, db, gold, "SELECT name FROM emp WHERE name IN ('bob', 'carol')")
    assert wrong["scores"]["test_suite_match"] == 0.0, wrong["test_suite"]
    same = _run(tmp_path, db, gold, "SELECT name FROM emp WHERE salary > 100")
    assert same["scores"]["test_suite_match"] == 1.0, same["test_suite"]


EMPTY_T = "NOT EXISTS (SELECT 1 FROM t)"


@pytest.mark.parametrize("test", [
    EMPTY_T,
    "NOT EXISTS (SELECT 1 FROM vt)",  # through a view
    "NOT EXISTS (SELECT 1 FROM vu)",  # through a view sqlglot keeps as unparsed text
    "NOT EXISTS (SELECT 1 FROM main.t)",  # qualified: never the CTE named t (below)
    "id IN (WITH t AS (SELECT 1) SELECT * FROM t) OR " + EMPTY_T,  # a CTE t in another scope
    "salary + 1000000 NOT IN t",  # sqlite: IN a bare table
])
def test_a_prediction_reading_a_table_no_neighbour_fills_gives_no_verdict(tmp_path,
                                                                          monkeypatch, test):
    """The gold reads only emp, which fills; the prediction also reads t (by name, through
    a view, past a CTE of that name), which no neighbour holds a row of: both agree on every
    neighbour, but only because t is empty on each -- the prediction counts nothing once t
    has a row. That was 1.0; now unknown, naming the table."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _sqlite(tmp_path / "v.sqlite", UNFILLABLE)
    gold = "SELECT count(*) FROM emp"
    pred = f"SELECT count(*) FROM emp WHERE {test}"
    if "main.t" in test:
        pred = "WITH t AS (SELECT 1 AS x) " + pred
    rec = _run(tmp_path, db, gold, pred)
    assert rec["scores"]["exact_match_f1"] == 1.0, rec["scores"]
    assert rec["scores"]["test_suite_match"] is None, rec["test_suite"]
    assert rec["test_suite"]["unseen_tables"] == ["t"]
    assert "the prediction reads t, which no neighbour holds a row of" in \
        rec["test_suite"]["reason"]
    # a prediction on the tables that fill is judged as before, a CTE named t included
    for same in ("SELECT count(id) FROM emp",
                 "WITH t AS (SELECT id FROM emp) SELECT count(*) FROM t"):
        plain = _run(tmp_path, db, gold, same)
        assert plain["scores"]["test_suite_match"] == 1.0, plain["test_suite"]


def test_a_gold_over_a_view_the_neighbours_cannot_recreate_says_why(tmp_path, monkeypatch):
    """A DuckDB view calling a macro (macros are not recreated): the view is missing from
    every candidate, so the gold fails on each and the case is unknown -- the reason now
    names the statement and the engine's first line, not only "the gold failed"."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _duckdb(tmp_path / "db" / "m.duckdb",
                 "CREATE TABLE emp (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                 "salary INTEGER)", EMP_ROWS, "CREATE MACRO twice(x) AS x * 2",
                 "CREATE VIEW doubled AS SELECT name, twice(salary) AS s FROM emp")
    rec = _run(tmp_path, db, "SELECT name FROM doubled WHERE s > 200",
               "SELECT name FROM doubled WHERE name IN ('bob', 'carol')")
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] is None, rec["test_suite"]
    reason = rec["test_suite"]["reason"]
    assert reason.startswith("no neighbour database can judge it: the gold failed on every "
                             "candidate database, in which this could not be recreated: "
                             "CREATE VIEW doubled AS "), reason
    assert "twice" in reason and "\n" not in reason


def test_a_cached_set_that_did_not_record_its_tables_is_built_again(tmp_path):
    """A manifest written before the sets recorded which tables hold rows cannot say which
    a prediction finds empty: it is built again (the same neighbours), not reused."""
    import json

    from queryeval.engines.query.neighbours.distill import cached_set

    db = _sqlite(tmp_path / "v.sqlite", UNFILLABLE)
    built = sql_neighbours(db, "sqlite", HIGH, 5, cache_dir=tmp_path / "c")
    assert cached_set(built.folder, "sqlite") is not None
    manifest = built.folder / "manifest.json"
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    for key in ("tables", "filled", "views"):
        doc.pop(key)
    for nb in doc["neighbours"]:
        nb.pop("tables")
    manifest.write_text(json.dumps(doc), encoding="utf-8")
    assert cached_set(built.folder, "sqlite") is None
    again = sql_neighbours(db, "sqlite", HIGH, 5, cache_dir=tmp_path / "c")
    assert not again.cached and [nb.rows for nb in again.neighbours] == \
        [nb.rows for nb in built.neighbours] and again.filled == ["emp"]


def test_the_schema_wire_form_is_asdicts_structure_and_reads_back():
    """What the builder sends the worker with every candidate write: ``dataclasses.asdict``'s
    structure exactly (every field, tuples kept), read back to an equal schema, with the
    sampled values shared rather than deep-copied (the frame is pickled at once)."""
    import datetime
    import decimal
    import pickle
    from dataclasses import asdict

    from queryeval.engines.query.neighbours.schema import Column, ForeignKey, Schema, Table

    tags = [["x"], ["y", None]]
    child = Table("b", [Column("id", "INTEGER", True), Column("tags", "VARCHAR[]")],
                  "CREATE TABLE b (id INTEGER PRIMARY KEY, a_id INTEGER, tags VARCHAR[])",
                  primary_key=("id",), unique=[("id", "tags")],
                  foreign_keys=[ForeignKey(("a_id",), "a", ("id",))],
                  values={"id": [1, 2], "tags": tags,
                          "d": [decimal.Decimal("1.50"), datetime.date(2024, 1, 2)]},
                  rows=7, virtual=True)
    schema = Schema("duckdb", [Table("a", [Column("id", "INTEGER")], "CREATE TABLE a (id INTEGER)"),
                               child],
                    extra_ddl=["CREATE VIEW v AS SELECT 1"], first_ddl=["CREATE SEQUENCE s"])
    wire = schema.to_wire()
    assert wire == asdict(schema)
    assert type(wire["tables"][1]["primary_key"]) is tuple
    assert type(wire["tables"][1]["foreign_keys"][0]["refs"]) is tuple
    assert Schema.from_wire(pickle.loads(pickle.dumps(wire))) == schema
    assert wire["tables"][1]["values"]["tags"] is not tags  # the list copied,
    assert wire["tables"][1]["values"]["tags"][0] is tags[0]  # its values shared
