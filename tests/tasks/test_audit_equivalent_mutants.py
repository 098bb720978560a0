"""Near-miss mutants that are provably equivalent to their gold (DISTINCT on a single-row
aggregate, on a LIMIT 1 result sorted by what it returns, inside IN / NOT IN or EXISTS,
under a set operator without ALL) are dropped before ``under_constrained`` can report them
(tasks/query/audit.py); each "equivalent" verdict is checked against both queries' results
on random databases."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter

import pytest

from queryeval.tasks.query.audit import equivalent_mutant, under_constrained_finding

PAIRS = [  # (gold, mutant, equivalent?)
    ("SELECT AVG(salary) FROM emp", "SELECT DISTINCT AVG(salary) FROM emp", True),
    ("SELECT COUNT(*) FROM emp WHERE salary > 50", "SELECT DISTINCT COUNT(*) FROM emp "
     "WHERE salary > 50", True),
    ("SELECT name FROM emp ORDER BY name LIMIT 1", "SELECT DISTINCT name FROM emp ORDER BY "
     "name LIMIT 1", True),
    ("SELECT name FROM emp WHERE id NOT IN (SELECT DISTINCT emp_id FROM loans)",
     "SELECT name FROM emp WHERE id NOT IN (SELECT emp_id FROM loans)", True),
    ("SELECT name FROM emp WHERE id IN (SELECT emp_id FROM loans)",
     "SELECT name FROM emp WHERE id IN (SELECT DISTINCT emp_id FROM loans)", True),
    ("SELECT dept FROM emp UNION SELECT name FROM emp",
     "SELECT DISTINCT dept FROM emp UNION SELECT name FROM emp", True),
    # not provable: these can differ
    ("SELECT dept FROM emp UNION ALL SELECT name FROM emp",
     "SELECT DISTINCT dept FROM emp UNION ALL SELECT name FROM emp", False),
    ("SELECT name FROM emp", "SELECT DISTINCT name FROM emp", False),
    ("SELECT name FROM emp ORDER BY salary DESC LIMIT 1",
     "SELECT DISTINCT name FROM emp ORDER BY salary DESC LIMIT 1", False),
    ("SELECT name FROM emp ORDER BY name LIMIT 2",
     "SELECT DISTINCT name FROM emp ORDER BY name LIMIT 2", False),
    ("SELECT COUNT(*) FROM emp", "SELECT COUNT(*) FROM emp WHERE salary > 1", False),
    # LEFT JOIN against inner: equal when the WHERE rejects the unmatched rows' NULLs
    ("SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id WHERE l.emp_id > 2",
     "SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id WHERE l.emp_id > 2", True),
    ("SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id WHERE l.emp_id IN (1, 2)",
     "SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id "
     "WHERE l.emp_id IN (1, 2)", True),
    ("SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id "
     "WHERE e.salary > 10 AND l.emp_id IS NOT NULL",
     "SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id "
     "WHERE e.salary > 10 AND l.emp_id IS NOT NULL", True),
    ("SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id",
     "SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id", False),
    ("SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id WHERE l.emp_id IS NULL",
     "SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id WHERE l.emp_id IS NULL",
     False),
    ("SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id "
     "WHERE COALESCE(l.emp_id, 0) < 3",
     "SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id "
     "WHERE COALESCE(l.emp_id, 0) < 3", False),
    ("SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id "
     "WHERE l.emp_id > 2 OR e.id = 1",
     "SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id "
     "WHERE l.emp_id > 2 OR e.id = 1", False),
    ("SELECT e.name FROM emp AS e LEFT JOIN loans AS l ON l.emp_id = e.id WHERE e.id > 2",
     "SELECT e.name FROM emp AS e JOIN loans AS l ON l.emp_id = e.id WHERE e.id > 2", False),
]


@pytest.mark.parametrize(("gold", "mutant", "equivalent"), PAIRS)
def test_equivalent_mutants_are_told(gold, mutant, equivalent):
    assert (equivalent_mutant(gold, mutant, "sqlite") is not None) is equivalent


def test_the_reason_names_what_the_mutant_changed():
    left = PAIRS[11]
    assert equivalent_mutant(*left[:2], "sqlite") == (
        "LEFT JOIN under a WHERE that rejects its unmatched rows' NULLs")
    # the gold's own redundant LEFT JOIN is not the change: the DISTINCT is
    gold = left[0].replace("SELECT e.name", "SELECT COUNT(*)")
    assert equivalent_mutant(gold, gold.replace("SELECT", "SELECT DISTINCT", 1),
                             "sqlite") == "DISTINCT a single-row aggregate"


def test_every_equivalent_verdict_holds_on_random_databases():
    rng = random.Random(3)
    for _ in range(40):
        con = sqlite3.connect(":memory:")
        con.executescript("CREATE TABLE emp(id INTEGER, name TEXT, salary INTEGER, dept TEXT);"
                          "CREATE TABLE loans(emp_id INTEGER);")
        con.executemany("INSERT INTO emp VALUES (?, ?, ?, ?)", [
            (rng.randint(1, 6), rng.choice("abc"), rng.randint(1, 100), rng.choice("xy"))
            for _ in range(rng.randint(0, 8))])
        con.executemany("INSERT INTO loans VALUES (?)",
                        [(rng.randint(1, 6),) for _ in range(rng.randint(0, 5))])
        for gold, mutant, _ in PAIRS:
            if equivalent_mutant(gold, mutant, "sqlite") is None:
                continue
            a = con.execute(gold).fetchall()
            b = con.execute(mutant).fetchall()
            assert Counter(a) == Counter(b), (gold, mutant)
        con.close()


def test_an_equivalent_survivor_is_not_reported(company, tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    import queryeval.engines.query.neighbours as neighbours

    survivors = ["SELECT DISTINCT COUNT(*) FROM emp", "SELECT COUNT(*) FROM emp WHERE 1 = 1"]
    monkeypatch.setattr(neighbours, "under_constrained", lambda *a, **k: list(survivors))
    found = under_constrained_finding("SELECT COUNT(*) FROM emp", str(company), "sql", 5)
    assert found == {"mutants": ["SELECT COUNT(*) FROM emp WHERE 1 = 1"], "neighbours": 5,
                     "equivalent_dropped": {"SELECT DISTINCT COUNT(*) FROM emp":
                                            "DISTINCT a single-row aggregate"}}
    survivors.pop()
    assert under_constrained_finding("SELECT COUNT(*) FROM emp", str(company), "sql", 5) is None
