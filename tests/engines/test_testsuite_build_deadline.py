"""One deadline for the whole neighbour build of a gold (docs/test-suite.md, "Safety"): each
step (schema, a mutant, a candidate's write and queries) has its own timeout, but a schema
that makes every step slow used to cost steps x timeout_s. Now the build stops at the
task's ``score_timeout_s``: the cases of that gold are unknown with the reason, nothing is
cached, and cases sharing the gold do not build it again."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

import queryeval as qe
from helpers.testsuite_sql import case, records  # noqa: E402
from queryeval.engines.query.neighbours import sql_neighbours
from queryeval.engines.query.neighbours.distill import BuildTimeout

# A view that costs the same on every database (about 0.5 s on the 2-core build box): the
# gold reads it, so every run of the gold or of a mutant that keeps it pays it.
SLOW_VIEW = ("CREATE VIEW slow AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
             "SELECT n + 1 FROM r WHERE n < 1000000) SELECT n FROM r")
GOLD = "SELECT name FROM t WHERE salary > 100 AND (SELECT count(*) FROM slow) > 0"
DEADLINE_S = 2.0
SLACK_S = 6.0
"""Past the deadline: the kill grace of the step cut short (0.5 s), the worker's start and
close -- far below the unbounded build's cost (at least 24
candidates x the gold's 0.5 s, with the mutants: measured 145 s, 56 candidates and
390 executions, on the shared 2-core box)."""


def _hostile(tmp_path: Path) -> Path:
    db = tmp_path / "db" / "slow.sqlite"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.executescript(f"""
        CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER);
        INSERT INTO t VALUES (1, 'ann', 90), (2, 'bob', 150), (3, 'cy', 120);
        {SLOW_VIEW};""")
    con.close()
    return db


def test_the_build_stops_at_its_deadline_and_caches_nothing(tmp_path):
    db = _hostile(tmp_path)
    started = time.monotonic()
    with pytest.raises(BuildTimeout) as err:
        sql_neighbours(db, "sqlite", GOLD, 20, cache_dir=tmp_path / "c", timeout_s=30,
                       build_timeout_s=DEADLINE_S)
    took = time.monotonic() - started
    assert DEADLINE_S <= took < DEADLINE_S + SLACK_S, took
    assert err.value.reason == "the neighbour build ran past its deadline (2 s, score_timeout_s)"
    assert list((tmp_path / "c").glob("*/manifest.json")) == []  # a later run builds it


def test_a_run_ends_within_the_deadline_and_the_cases_are_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _hostile(tmp_path)
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps(case(cid, str(db), GOLD)) + "\n"
                             for cid in ("a", "b")), encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"case_id": cid, "query": q}) + "\n" for cid, q in (
        ("a", "SELECT name FROM t WHERE name IN ('bob', 'cy') AND (SELECT count(*) FROM slow) > 0"),
        ("b", GOLD))), encoding="utf-8")
    options = {"score_timeout_s": DEADLINE_S, "timeout_s": 30}

    def timed(**more) -> tuple[float, qe.Run]:
        started = time.monotonic()
        run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs",
                          concurrency=1, options=options, **more)
        return time.monotonic() - started, run

    plain, _ = timed()  # the anchor: the same run without neighbours
    took, run = timed(test_suite=20)
    # one build for both cases (the second shares the first's outcome): not 2 x the deadline
    assert took - plain < DEADLINE_S + SLACK_S, (took, plain)
    recs = records(run)
    for cid in ("a", "b"):
        assert recs[cid]["scores"]["exact_match_f1"] == 1.0  # right on the original
        ts = recs[cid]["test_suite"]
        assert recs[cid]["scores"]["test_suite_match"] is None, ts
        assert ts["timed_out"] is True
        assert ts["reason"] == ("no neighbour databases: the neighbour build ran past its "
                                "deadline (2 s, score_timeout_s)")
    assert run.overall["test_suite_unknown"] == 2


def test_a_deadline_that_holds_changes_no_set(tmp_path):
    """The clock only caps: a build within its deadline -- each step's timeout (30 s) cut to
    what is left of it (under 25 s), none running out -- gives the set built without one,
    file for file."""
    import hashlib

    db = tmp_path / "plain.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                      "salary INTEGER); INSERT INTO t VALUES (1, 'ann', 90), (2, 'bob', 150);")
    con.close()
    gold = "SELECT name FROM t WHERE salary > 100"
    a = sql_neighbours(db, "sqlite", gold, 4, cache_dir=tmp_path / "a", timeout_s=30,
                       build_timeout_s=25)
    b = sql_neighbours(db, "sqlite", gold, 4, cache_dir=tmp_path / "b")
    assert len(a.neighbours) == 4 and a.executions == b.executions
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in a.paths()] == \
        [hashlib.sha256(p.read_bytes()).hexdigest() for p in b.paths()]


def test_a_sparql_build_past_its_deadline_is_no_set(tmp_path):
    """The same clock holds the SPARQL builder: a deadline already spent when the gold first
    runs raises BuildTimeout and writes no set."""
    from helpers.testsuite_sparql import GOLD as SPARQL_GOLD
    from helpers.testsuite_sparql import GRAPH
    from queryeval.engines.query.neighbours import sparql_neighbours

    with pytest.raises(BuildTimeout):
        sparql_neighbours([GRAPH], SPARQL_GOLD, 4, cache_dir=tmp_path / "c",
                          build_timeout_s=1e-9)
    assert list((tmp_path / "c").glob("*/manifest.json")) == []
