"""The cross-feature matrix for what the query touched (issue 28 item 4): the schema
precision/recall figures through every consumer (tests/helpers/matrix_checks.py) in each run kind
that applies: plain, repeats, cached, resumed after a kill, with errors (scored and skipped).

Five text-to-SQL cases on a two-table database; a Python system answers each with a query.
Per case ``schema_column_recall`` (gold columns the prediction also reads / gold columns) and
``schema_table_precision`` (predicted tables the gold also reads / predicted tables), by hand:

====  =========================================  ==============================  ======  =====
case  gold                                       prediction                      col R   tab P
====  =========================================  ==============================  ======  =====
c0    name FROM emp WHERE salary > 100           the same                        1       1
c1    emp JOIN dept ON dept_id = id, city=Oslo   name FROM emp WHERE salary>100  1/4     1
c2    dname FROM dept                            name FROM emp (wrong table)     0       0
c3    count(*) FROM emp                          the same (no columns: 1)        1       1
c4    CTE r(name, pay) over emp, pay > 100       the same                        1       1
====  =========================================  ==============================  ======  =====

Repeats (2): on repeat 1 the system gets c2 right (col R 1, tab P 1), so c2's figure is 1/2.
Errors: c4's call fails, its prediction is no query: 0 for both (scored), or left out (skip).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import queryeval as qe
from helpers.matrix_checks import build_kind, built_once, check_compare, check_consumers, write_lab

GOLD = {
    "c0": "SELECT name FROM emp WHERE salary > 100",
    "c1": "SELECT e.name FROM emp e JOIN dept d ON e.dept_id = d.id WHERE d.city = 'Oslo'",
    "c2": "SELECT dname FROM dept",
    "c3": "SELECT count(*) FROM emp",
    "c4": "WITH r AS (SELECT name, salary AS pay FROM emp) SELECT name FROM r WHERE pay > 100",
}
BOTS = '''
import re

GOLD = %r
WRONG = {"c1": "SELECT name FROM emp WHERE salary > 100", "c2": "SELECT name FROM emp"}

def _id(request):
    return "c" + re.search(r"question (\\d+)\\?", str(request["question"])).group(1)

def plain(request):
    cid = _id(request)
    return {"query": WRONG.get(cid, GOLD[cid])}

def repeated(request):
    cid = _id(request)
    if cid == "c2" and request.get("repeat", 0) == 1:
        return {"query": GOLD[cid]}
    return plain(request)

def failing(request):
    if _id(request) == "c4":
        raise RuntimeError("backend down")
    return plain(request)
''' % (GOLD,)

COL_R = {"c0": 1.0, "c1": 0.25, "c2": 0.0, "c3": 1.0, "c4": 1.0}
TAB_P = {"c0": 1.0, "c1": 1.0, "c2": 0.0, "c3": 1.0, "c4": 1.0}
EXPECTED = {  # kind -> (col R per case, tab P per case, counted)
    "plain": (COL_R, TAB_P, list(COL_R)),
    "repeats": ({**COL_R, "c2": 0.5}, {**TAB_P, "c2": 0.5}, list(COL_R)),
    "cached": (COL_R, TAB_P, list(COL_R)),
    "resumed": (COL_R, TAB_P, list(COL_R)),
    "errors": ({**COL_R, "c4": 0.0}, {**TAB_P, "c4": 0.0}, list(COL_R)),
    "skip_errors": ({**COL_R, "c4": 0.0}, {**TAB_P, "c4": 0.0}, ["c0", "c1", "c2", "c3"]),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix_tablewhy")
    db = root / "w.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE emp(id INTEGER, name TEXT, salary INTEGER, dept_id INTEGER);"
        "CREATE TABLE dept(id INTEGER, dname TEXT, city TEXT);"
        "INSERT INTO emp VALUES (1, 'bob', 150, 1), (2, 'carol', 120, 2), (3, 'dan', 50, 1);"
        "INSERT INTO dept VALUES (1, 'R&D', 'Oslo'), (2, 'Ops', 'Bergen');")
    con.commit()
    con.close()
    return write_lab(root, BOTS, {cid: {"query": {"gold": gold, "source": str(db)}}
                                  for cid, gold in GOLD.items()})


def _spec(lab: Path, fn: str) -> str:
    return f"python:{lab / 'bots.py'}:{fn}"


def _build(kind: str, lab: Path) -> qe.Run:
    return build_kind(kind, str(lab / "cases.jsonl"), lab / "bots.py", lab / "runs", n=len(GOLD),
                      keep=2, repeats=2)


@pytest.fixture(scope="module")
def built(lab):
    return built_once(lambda kind: _build(kind, lab))


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_schema_figures_through_every_consumer(built, lab, kind, tmp_path):
    run = built(kind)
    col_r, tab_p, counted = EXPECTED[kind]
    root = tmp_path / "view"
    shutil.copytree(run.folder, root / run.folder.name)
    mean = check_consumers(run, "schema_column_recall", col_r, counted=counted,
                           viewer_root=root)
    assert mean == pytest.approx(sum(col_r[c] for c in counted) / len(counted))
    check_consumers(run, "schema_table_precision", tab_p, counted=counted, viewer_root=root)


def test_schema_figures_in_the_compares(built, tmp_path):
    plain, repeats = built("plain"), built("repeats")
    check_compare(plain, repeats, "schema_column_recall", COL_R, EXPECTED["repeats"][0],
                  tmp_path)
