"""Test-suite verdicts that equal results cannot prove (issue 39 item 2) and the case's
scoring deadline over the neighbour checks (issue 34): a prediction that is a surviving,
not provably equivalent mutant of the gold -- LEFT against inner join above all -- is
unknown, not equal; a provably equivalent one stays equal; neighbour checks that overrun
what is left of ``score_timeout_s`` make the verdict unknown, ``timed_out``, and the run
goes on."""

from __future__ import annotations

import sqlite3
import time
from types import SimpleNamespace

import queryeval as qe
from helpers.testsuite_sql import build_example, case, records
from queryeval.tasks.query.testsuite import unproven_near_miss

GOLD = "SELECT e.name, d.name FROM emp AS e JOIN dept AS d ON d.id = e.dept_id"
LEFT = GOLD.replace(" JOIN dept", " LEFT JOIN dept")
FLIP = [["JOIN made LEFT", LEFT]]


def built(survivors, mutants=FLIP, dialect="sqlite"):
    return SimpleNamespace(dialect=dialect, survivors=survivors, mutants=mutants)


def test_a_surviving_join_mutant_leaves_the_verdict_unknown():
    assert unproven_near_miss(GOLD, LEFT, built([LEFT])) == "mutant: JOIN made LEFT"
    # the same prediction written otherwise (lower case, no AS): the same rendering
    assert unproven_near_miss(GOLD, "select e.name, d.name from emp e left join dept d "
                                    "on d.id = e.dept_id", built([LEFT])) == "mutant: JOIN made LEFT"
    # the neighbours told the join mutant apart: equal results there are evidence
    assert unproven_near_miss(GOLD, LEFT, built([])) is None
    # LEFT against inner beyond one mutation (a second join flipped): unknown while the
    # gold's join mutant survived, evidence once it was told apart
    gold2 = GOLD + " JOIN emp AS b ON b.id = e.boss"
    pred2 = LEFT + " LEFT JOIN emp AS b ON b.id = e.boss"
    flips = [["JOIN made LEFT", LEFT + " JOIN emp AS b ON b.id = e.boss"],
             ["JOIN made LEFT", GOLD + " LEFT JOIN emp AS b ON b.id = e.boss"]]
    assert unproven_near_miss(gold2, pred2, built([flips[1][1]], flips)) == \
        "LEFT against inner join"
    assert unproven_near_miss(gold2, pred2, built([], flips)) is None
    # no join mutant was made at all: nothing proved the join either
    assert unproven_near_miss(gold2, pred2, built([], [])) == "LEFT against inner join"


def test_provably_equivalent_or_unrelated_predictions_keep_their_verdict():
    where = " WHERE d.name = 'sales'"
    assert unproven_near_miss(GOLD + where, LEFT + where, built([LEFT + where])) is None
    assert unproven_near_miss(GOLD, GOLD, built([GOLD])) is None  # the gold itself
    assert unproven_near_miss(GOLD, "SELECT name FROM emp", built([LEFT])) is None
    assert unproven_near_miss(GOLD, LEFT, built([LEFT], dialect="sparql")) is None
    assert unproven_near_miss(GOLD, "SELECT (", built([LEFT])) is None  # does not parse


def _db(folder):
    db = folder / "staff.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE dept (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
        "CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "dept_id INTEGER NOT NULL REFERENCES dept(id));"
        "INSERT INTO dept VALUES (1, 'sales'), (2, 'research');"
        "INSERT INTO emp VALUES (1, 'ann', 1), (2, 'bo', 2), (3, 'cy', 1);")
    conn.commit()
    conn.close()
    return db


def test_left_join_verdicts_end_to_end(tmp_path, monkeypatch):
    """emp.dept_id is NOT NULL and references dept: emp LEFT JOIN dept equals the inner
    join on every database the schema allows, which no neighbour can show and the audit's
    rules cannot prove -- unknown; dept LEFT JOIN emp differs as soon as a department has no
    employee, which the neighbours hold -- refuted."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = str(_db(tmp_path))
    forward = "SELECT e.name, d.name FROM emp AS e JOIN dept AS d ON d.id = e.dept_id"
    backward = "SELECT d.name, e.name FROM dept AS d JOIN emp AS e ON e.dept_id = d.id"
    cases = [case("forward", db, forward), case("backward", db, backward),
             case("same", db, forward)]
    answers = [{"case_id": "forward", "query": forward.replace(" JOIN", " LEFT JOIN")},
               {"case_id": "backward", "query": backward.replace(" JOIN", " LEFT JOIN")},
               {"case_id": "same", "query": forward}]
    run = qe.evaluate(cases, responses=answers, task="query", out=tmp_path / "runs",
                      test_suite=8)
    recs = records(run)
    assert all(r["scores"]["exact_match_f1"] == 1.0 for r in recs.values())  # on the original
    assert recs["forward"]["scores"]["test_suite_match"] is None
    assert recs["forward"]["test_suite"]["near_miss"] == "mutant: JOIN made LEFT"
    assert "unproven" in recs["forward"]["test_suite"]["reason"]
    assert recs["backward"]["scores"]["test_suite_match"] == 0.0
    emptied = recs["backward"]["test_suite"]["refuted_by"]["database"]
    staffed = {r[2] for r in emptied["emp"]["rows"]}
    assert any(r[0] not in staffed for r in emptied["dept"]["rows"])  # a dept with no one
    assert recs["same"]["scores"]["test_suite_match"] == 1.0


def test_neighbour_checks_past_the_scoring_deadline_time_out(tmp_path, monkeypatch):
    from queryeval.tasks.query.engines import QueryEngines

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    build_example(tmp_path)
    suite = tmp_path / "suite.yaml"
    # the neighbours first, without a deadline (built once, cached)
    qe.evaluate(suite, responses=tmp_path / "predictions.jsonl", task="query",
                out=tmp_path / "warm", test_suite=4)
    real = QueryEngines._execute

    def slow(self, source, query, engine=None):
        if engine is not None:  # a neighbour: 1.2 s a query
            time.sleep(1.2)
        return real(self, source, query, engine=engine)

    monkeypatch.setattr(QueryEngines, "_execute", slow)
    run = qe.evaluate(suite, responses=tmp_path / "predictions.jsonl", task="query",
                      out=tmp_path / "runs", test_suite=4, options={"score_timeout_s": 1.0})
    recs = records(run)
    assert len(recs) == 5  # the run went on
    for cid in ("not-at-most-100", "staff-and-departments", "count-at-least-120"):
        ts = recs[cid]["test_suite"]  # matched on the original: the neighbours were asked
        assert recs[cid]["scores"]["test_suite_match"] is None
        assert ts["timed_out"] is True
        assert ts["reason"].startswith("timed out: the neighbour checks ran past the case's "
                                       "scoring deadline (1 s, score_timeout_s")
        assert recs[cid]["scores"]["exact_match_f1"] == 1.0  # the other scores stand
    assert run.overall["test_suite_unknown"] >= 3
