"""DISTINCT over a key the sandbox read (issue 39): a query that differs from the gold only
by DISTINCT on a SELECT of one table whose select list holds a NOT NULL primary or unique key
is provably equivalent, so the audit drops that mutant and a test-suite prediction equal to
it is decided, not unknown. Each rule is checked on random databases: the proven pairs give
the same rows on every one, and the refused ones differ on some."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter

import pytest

import queryeval as qe
from helpers.testsuite_sql import case, records
from queryeval.tasks.query.audit import equivalent_mutant, key_schema

DDL = ("CREATE TABLE emp (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT, "
       "code TEXT UNIQUE, dept INTEGER);"
       "CREATE TABLE badge (emp_id INTEGER NOT NULL, n INTEGER NOT NULL, label TEXT, "
       "PRIMARY KEY (emp_id, n));")

PAIRS = [  # (query with DISTINCT, the reason it is equivalent without, or None)
    ("SELECT DISTINCT id, name FROM emp WHERE name > 'b'", "over the key emp(id)"),
    ("SELECT DISTINCT e.name, e.email FROM emp AS e", "over the key emp(email)"),
    ("SELECT DISTINCT * FROM emp WHERE dept = 1", "over the key emp(id)"),
    ("SELECT DISTINCT id FROM emp ORDER BY id LIMIT 3", "over the key emp(id)"),
    ("SELECT DISTINCT emp_id, n FROM badge", "over the key badge(emp_id, n)"),
    # not provable: a nullable UNIQUE holds several NULLs; no key; a key not projected in
    # full; a cut in no total order; a join; a CTE that shadows the table
    ("SELECT DISTINCT code FROM emp", None),
    ("SELECT DISTINCT name FROM emp", None),
    ("SELECT DISTINCT emp_id FROM badge", None),
    ("SELECT DISTINCT dept, id FROM emp ORDER BY dept LIMIT 2", None),
    ("SELECT DISTINCT e.id FROM emp AS e JOIN badge AS b ON b.emp_id = e.id", None),
    ("WITH emp AS (SELECT emp_id AS id FROM badge) SELECT DISTINCT id FROM emp", None),
]


def _without(query: str) -> str:
    return query.replace("SELECT DISTINCT", "SELECT", 1) if query.startswith("SELECT") \
        else query.replace("SELECT DISTINCT id FROM emp", "SELECT id FROM emp")


def _db(path, rng: random.Random):
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    for i in range(1, rng.randint(2, 9)):
        conn.execute("INSERT INTO emp VALUES (?, ?, ?, ?, ?)",
                     (i, f"e{i}@x", rng.choice(["ann", "bo", "cy", None]),
                      None if rng.random() < 0.5 else f"c{i}", rng.choice([1, 2, None])))
        for n in range(rng.randint(0, 3)):
            conn.execute("INSERT INTO badge VALUES (?, ?, ?)", (i, n, rng.choice(["x", None])))
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    db = _db(tmp_path_factory.mktemp("keys") / "k.sqlite", random.Random(0))
    read = key_schema(str(db), "sqlite")  # by the sandboxed neighbour worker
    assert read is not None and {t.name for t in read.tables} == {"emp", "badge"}
    return read


@pytest.mark.parametrize(("query", "why"), PAIRS)
def test_distinct_over_a_key(schema, query, why):
    bare = _without(query)
    assert bare != query
    assert equivalent_mutant(bare, query, "sqlite", lambda: schema) == \
        (None if why is None else f"DISTINCT {why}")
    assert equivalent_mutant(bare, query, "sqlite") is None  # the query alone proves nothing


def test_the_rules_hold_on_random_databases(tmp_path):
    rng = random.Random(39)
    differs = Counter()
    for k in range(60):
        path = _db(tmp_path / f"r{k}.sqlite", rng)
        conn = sqlite3.connect(path)
        for query, why in PAIRS:
            a = conn.execute(query).fetchall()
            b = conn.execute(_without(query)).fetchall()
            if "ORDER BY id" in query:
                assert a == b  # sorted by the key: the same rows in the same order
            elif why is not None:
                assert Counter(a) == Counter(b), query
            else:
                differs[query] += Counter(a) != Counter(b)
        conn.close()
    # every refused rule but the cut in no total order (refused because ties may be cut
    # otherwise by another plan, which sqlite's happen not to do) is shown unsafe
    for query, why in PAIRS:
        if why is None and "LIMIT" not in query:
            assert differs[query] > 0, query


def test_a_collation_or_a_partial_index_proves_nothing(tmp_path):
    for extra in ("CREATE TABLE t (k TEXT NOT NULL UNIQUE COLLATE NOCASE, v TEXT)",
                  "CREATE TABLE t (k TEXT NOT NULL, v TEXT); "
                  "CREATE UNIQUE INDEX tk ON t(k) WHERE v IS NOT NULL"):
        db = tmp_path / f"{len(extra)}.sqlite"
        conn = sqlite3.connect(db)
        conn.executescript(extra)
        conn.close()
        read = key_schema(str(db), "sqlite")
        assert equivalent_mutant("SELECT k FROM t", "SELECT DISTINCT k FROM t", "sqlite",
                                 lambda r=read: r) is None
    assert key_schema("postgresql://h/db", "postgres") is None


def test_a_prediction_with_distinct_over_the_key_is_decided(tmp_path, monkeypatch):
    """The gold's DISTINCT mutant survives every neighbour (it is equivalent by the key):
    a prediction that is that mutant was unknown (an unproven near-miss); now it is proven
    equal, and the audit no longer warns about the gold."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = str(_db(tmp_path / "staff.sqlite", random.Random(1)))
    gold = "SELECT id, name FROM emp WHERE dept = 1"
    run = qe.evaluate([case("key", db, gold)], task="query", out=tmp_path / "runs",
                      responses=[{"case_id": "key", "query": gold.replace("SELECT", "SELECT "
                                                                          "DISTINCT")}],
                      test_suite=8)
    rec = records(run)["key"]
    assert rec["scores"]["test_suite_match"] == 1.0
    assert "near_miss" not in rec["test_suite"]
    suite = tmp_path / "s.yaml"
    suite.write_text(f"id: key\nconversation:\n- role: user\n  content: who?\n  target:\n"
                     f"    query:\n      gold: \"{gold}\"\n", encoding="utf-8")
    report = qe.audit(suite, source=db, test_suite=8)
    assert report.by_kind("under_constrained") == []
