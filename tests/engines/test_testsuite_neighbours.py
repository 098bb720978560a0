"""Neighbour databases: every declared constraint holds (the files load with constraints
enforced), the gold's constants seed both sides of each filter, distillation's claims are
true, generation is deterministic from the seed and cached; gold mutants; the audit's
under-constrained golds."""

from __future__ import annotations

import sqlite3
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.testsuite_neighbours import SCHEMA  # noqa: E402,F401
from queryeval.engines.query.neighbours import (
    database_rows,
    sql_neighbours,
    under_constrained,
)
from queryeval.engines.query.neighbours.mutants import mutants
from queryeval.io.typedjson import from_json

GOLD = ("SELECT e.name, d.name FROM emp e JOIN dept d ON d.id = e.dept_id "
        "WHERE e.salary > 100 AND e.hired < '2021-01-01'")


def test_every_declared_constraint_holds_in_every_sqlite_neighbour(company, tmp_path):
    built = sql_neighbours(company, "sqlite", GOLD, 10, seed=3, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 10
    nulls = Counter()
    for path, nb in zip(built.paths(), built.neighbours, strict=True):
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA foreign_keys=ON")
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # the same schema, and the rows load again into a fresh copy with constraints on
        assert sorted(r[0] for r in conn.execute("SELECT sql FROM sqlite_master "
                                                 "WHERE type='table'")) == sorted(
            s.strip() for s in SCHEMA.strip().rstrip(";").split(";\n"))
        fresh = sqlite3.connect(":memory:", isolation_level=None)
        fresh.execute("PRAGMA foreign_keys=ON")
        fresh.executescript(SCHEMA)
        rows = database_rows(path, "sqlite")
        assert sum(len(t["rows"]) for t in rows.values()) == nb.rows
        fresh.execute("BEGIN")
        fresh.execute("PRAGMA defer_foreign_keys=ON")  # rows come back in key order
        for table in ("dept", "emp", "project"):
            for row in rows[table]["rows"]:
                fresh.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
        fresh.execute("COMMIT")  # raises when a reference does not resolve
        # by hand: NOT NULL, keys unique, references resolve
        emp = rows["emp"]["rows"]
        dept_ids = {r[0] for r in rows["dept"]["rows"]}
        assert all(r[1] is not None and r[2] is not None and r[6] is not None for r in emp)
        assert len({r[0] for r in emp}) == len(emp) and len({r[1] for r in emp}) == len(emp)
        assert all(r[4] is None or r[4] in dept_ids for r in emp)
        assert all(r[5] is None or r[5] in {e[0] for e in emp} for r in emp)
        proj = rows["project"]["rows"]
        assert len({(r[0], r[1]) for r in proj}) == len(proj)
        assert all(r[1] in dept_ids for r in proj)
        assert all(r[2] is None or r[2] >= 0 for r in rows["dept"]["rows"])  # the CHECK
        nulls.update(k for r in emp for k, v in (("dept_id", r[4]), ("boss", r[5]))
                     if v is None)
        conn.close()
    # nullable foreign keys are exercised, NULL included
    assert nulls["dept_id"] > 0 and nulls["boss"] > 0


def test_duckdb_neighbours_keep_the_constraints(tmp_path):
    import duckdb

    db = tmp_path / "company.duckdb"
    conn = duckdb.connect(str(db))
    conn.execute("CREATE TABLE dept (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE)")
    conn.execute("CREATE TABLE emp (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                 "salary INTEGER, dept_id INTEGER REFERENCES dept(id), hired DATE)")
    conn.execute("INSERT INTO dept VALUES (1, 'sales'), (2, 'research')")
    conn.execute("INSERT INTO emp VALUES (1, 'alice', 90, 1, DATE '2020-01-05'), "
                 "(2, 'bob', 120, 2, DATE '2021-03-01')")
    conn.close()
    built = sql_neighbours(db, "duckdb", "SELECT name FROM emp WHERE salary > 100", 4,
                           seed=1, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 4
    for path in built.paths():
        rows = database_rows(path, "duckdb")
        fresh = duckdb.connect()
        fresh.execute("CREATE TABLE dept (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE)")
        fresh.execute("CREATE TABLE emp (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                      "salary INTEGER, dept_id INTEGER REFERENCES dept(id), hired DATE)")
        for table in ("dept", "emp"):  # duckdb enforces keys always: this raises on a break
            for row in rows[table]["rows"]:  # dates in the run log's typed form: read back
                fresh.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})",
                              [from_json(v) for v in row])
        fresh.close()


def test_the_gold_constants_put_rows_on_both_sides_of_each_filter(company, tmp_path):
    built = sql_neighbours(company, "sqlite", GOLD, 10, seed=0, cache_dir=tmp_path / "c")
    salaries, hired = set(), set()
    for path in built.paths():
        emp = database_rows(path, "sqlite")["emp"]["rows"]
        salaries |= {r[3] for r in emp if r[3] is not None}
        hired |= {r[6] for r in emp}
    assert {99, 100, 101} <= salaries  # c - 1, c, c + 1 of "salary > 100"
    assert any(h < "2021-01-01" for h in hired) and any(h >= "2021-01-01" for h in hired)


def test_each_kept_neighbour_really_tells_its_mutants_apart(company, tmp_path):
    """Distillation's record checked with plain sqlite3 (bags of rows)."""
    built = sql_neighbours(company, "sqlite", GOLD, 8, seed=5, cache_dir=tmp_path / "c")
    killed = [nb for nb in built.neighbours if nb.kills]
    assert killed, "no mutant told apart"
    for path, nb in zip(built.paths(), built.neighbours, strict=True):
        conn = sqlite3.connect(path)
        gold = Counter(conn.execute(GOLD).fetchall())
        for sql in nb.kills:
            assert Counter(conn.execute(sql).fetchall()) != gold, sql
        conn.close()
    orig = sqlite3.connect(company)
    gold = Counter(orig.execute(GOLD).fetchall())
    for sql in built.refuted_on_original:
        assert Counter(orig.execute(sql).fetchall()) != gold
    for sql in built.survivors:  # survivors agree with the gold everywhere
        assert Counter(orig.execute(sql).fetchall()) == gold
        for path in built.paths():
            conn = sqlite3.connect(path)
            assert Counter(conn.execute(sql).fetchall()) == Counter(conn.execute(GOLD).fetchall())
            conn.close()


def test_deterministic_from_the_seed(company, tmp_path):
    a = sql_neighbours(company, "sqlite", GOLD, 5, seed=11, cache_dir=tmp_path / "a")
    b = sql_neighbours(company, "sqlite", GOLD, 5, seed=11, cache_dir=tmp_path / "b")
    c = sql_neighbours(company, "sqlite", GOLD, 5, seed=12, cache_dir=tmp_path / "c")
    rows_a = [database_rows(p, "sqlite") for p in a.paths()]
    assert rows_a == [database_rows(p, "sqlite") for p in b.paths()]
    assert rows_a != [database_rows(p, "sqlite") for p in c.paths()]


def test_cached_per_gold(company, tmp_path):
    cache = tmp_path / "c"
    first = sql_neighbours(company, "sqlite", GOLD, 4, seed=0, cache_dir=cache)
    assert not first.cached and first.executions > 0
    stamps = {p: p.stat().st_mtime_ns for p in first.paths()}
    again = sql_neighbours(company, "sqlite", GOLD, 4, seed=0, cache_dir=cache)
    assert again.cached and again.paths() == first.paths()
    assert {p: p.stat().st_mtime_ns for p in again.paths()} == stamps
    other = sql_neighbours(company, "sqlite", "SELECT name FROM emp", 4, seed=0, cache_dir=cache)
    assert other.folder != first.folder
    assert len([d for d in cache.iterdir() if not d.name.startswith(".")]) == 2
    # a changed database is another key (the cache never serves stale neighbours)
    conn = sqlite3.connect(company)
    conn.execute("UPDATE emp SET salary = 101 WHERE id = 1")
    conn.commit()
    conn.close()
    changed = sql_neighbours(company, "sqlite", GOLD, 4, seed=0, cache_dir=cache)
    assert not changed.cached and changed.folder != first.folder


def test_mutants_cover_each_kind_of_near_miss():
    gold = ("SELECT DISTINCT d.name, COUNT(e.id) FROM emp e JOIN dept d ON d.id = e.dept_id "
            "WHERE e.salary > 100 AND d.name = 'sales' GROUP BY d.name "
            "HAVING MAX(e.salary) < 200 ORDER BY d.name LIMIT 3")
    got = dict((sql, what) for what, sql in mutants(gold, "sqlite"))
    kinds = set(got.values())
    for expected in ("operator GT -> GTE", "operator GT -> LT", "operator EQ -> NEQ",
                     "constant 100 +1", "constant 100 -1", "constant 'sales' changed",
                     "DISTINCT removed", "JOIN made LEFT", "WHERE dropped", "HAVING dropped",
                     "left conjunct dropped", "right conjunct dropped", "MAX -> MIN",
                     "COUNT(x) -> COUNT(DISTINCT x)", "sort direction flipped", "LIMIT +1"):
        assert expected in kinds, expected
    assert "SELECT DISTINCT d.name, COUNT(e.id) FROM emp AS e JOIN dept AS d ON d.id = e.dept_id " \
           "WHERE e.salary >= 100 AND d.name = 'sales' GROUP BY d.name HAVING MAX(e.salary) < 200 " \
           "ORDER BY d.name LIMIT 3" in got
    assert mutants("SELEC nonsense (", "sqlite") == []


def test_under_constrained_names_the_mutants_no_database_refutes(company, tmp_path):
    cache = tmp_path / "c"
    # DISTINCT over the primary key changes nothing on any database: flagged
    got = under_constrained("SELECT DISTINCT id FROM emp", company, 8, 0, cache_dir=cache)
    assert "SELECT id FROM emp" in got
    # a well-posed filter: every mutant is told apart
    assert under_constrained("SELECT name FROM emp WHERE salary > 100", company, 10, 0,
                             cache_dir=cache) == []


# --- property: random schemas, every declared constraint holds -------------------------------
@st.composite
def schemas(draw):
    """2-4 tables: an integer key, a text column (NOT NULL / UNIQUE at random), a real
    column, a foreign key to an earlier table or to itself (nullable or not), sometimes a
    composite UNIQUE; 3 rows each that satisfy all of it."""
    tables = []
    for i in range(draw(st.integers(2, 4))):
        a_nn, a_uq = draw(st.booleans()), draw(st.booleans())
        b_nn = draw(st.booleans())
        ref = draw(st.integers(0, i)) if i else 0
        fk_nn = draw(st.booleans())
        pair = draw(st.booleans())
        tables.append((a_nn, a_uq, b_nn, ref, fk_nn, pair))
    return tables


def _create(spec) -> str:
    out = []
    for i, (a_nn, a_uq, b_nn, ref, fk_nn, pair) in enumerate(spec):
        cols = ["id INTEGER PRIMARY KEY",
                f"a TEXT{' NOT NULL' if a_nn else ''}{' UNIQUE' if a_uq else ''}",
                f"b REAL{' NOT NULL' if b_nn else ''}",
                f"r INTEGER{' NOT NULL' if fk_nn else ''} REFERENCES t{ref}(id)"]
        if pair:
            cols.append("UNIQUE (a, b)")
        out.append(f"CREATE TABLE t{i} ({', '.join(cols)});")
    return "\n".join(out)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=schemas(), seed=st.integers(0, 1000))
def test_property_random_schemas_keep_every_constraint(tmp_path_factory, spec, seed):
    folder = tmp_path_factory.mktemp("schema")
    db = folder / "s.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(_create(spec))
    for i in range(len(spec)):
        for r in (1, 2, 3):
            conn.execute(f"INSERT INTO t{i} VALUES (?, ?, ?, ?)", (r, f"v{i}{r}", r / 2, 1))
    conn.commit()
    conn.close()
    gold = "SELECT t0.a FROM t0 WHERE t0.b > 1"
    built = sql_neighbours(db, "sqlite", gold, 3, seed=seed, cache_dir=folder / "c")
    assert len(built.neighbours) == 3
    for path in built.paths():
        n = sqlite3.connect(path)
        assert n.execute("PRAGMA foreign_key_check").fetchall() == []
        for i, (a_nn, a_uq, b_nn, ref, fk_nn, pair) in enumerate(spec):
            rows = n.execute(f"SELECT id, a, b, r FROM t{i}").fetchall()
            ids = {r[0] for r in rows}
            parents = ids if ref == i else {r[0] for r in n.execute(f"SELECT id FROM t{ref}")}
            assert len(ids) == len(rows)
            assert not a_nn or all(r[1] is not None for r in rows)
            assert not b_nn or all(r[2] is not None for r in rows)
            assert not fk_nn or all(r[3] is not None for r in rows)
            assert all(r[3] is None or r[3] in parents for r in rows)
            if a_uq:
                vals = [r[1] for r in rows if r[1] is not None]
                assert len(vals) == len(set(vals))
            if pair:
                vals = [(r[1], r[2]) for r in rows if None not in (r[1], r[2])]
                assert len(vals) == len(set(vals))
        n.close()
