"""Hostile golds through ``--test-suite`` and ``queryeval audit --test-suite``.

A gold comes from the suite file (a downloaded suite is untrusted) and its mutants are derived
from it: distillation runs both, so they must run where predictions run -- in the sandboxed
worker, with a deadline that holds by a kill and a memory cap (docs/test-suite.md, "Safety").

* nothing of the build runs a query in the evaluating process: with the in-process sessions
  made to fail, neighbours are still built, a run still scores and the audit still finds the
  under-constrained gold (on the old code, which ran them in-process, these fail);
* a corpus of hostile golds -- ATTACH/DETACH, load_extension, COPY TO, read_csv/read_text of
  /etc/passwd, INSTALL/LOAD httpfs, http URLs to a loopback listener, PRAGMA writes, a runaway
  recursive CTE, zeroblob / repeat / cross-join balloons -- changes no file, reaches no
  listener, ends at its deadline and within the memory cap, **with the query checks on and
  with them off** (``base.QUERY_CHECKS = False``: the OS sandbox alone holds).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import queryeval as qe
from helpers.audit_ties_deadline import _suite  # noqa: E402
from helpers.sandbox import Listener, _snapshot, needs_sandbox  # noqa: E402
from helpers.testsuite_hostile import _suite_predicting_the_gold  # noqa: E402,F401
from helpers.testsuite_sql import case, records  # noqa: E402
from queryeval.cli.app import main
from queryeval.engines.query import QueryExecutionError
from queryeval.engines.query import sql as sql_module
from queryeval.engines.query.neighbours import sql_neighbours
from queryeval.engines.query.neighbours.runner import NeighbourRunner

MiB = 1024**2


@pytest.fixture()
def no_inprocess_sessions(monkeypatch) -> None:
    """Any query run by this (the evaluating) process through the engines' sessions fails
    the test; the workers are other processes, which this does not reach."""

    def ran_here(self, *args, **kwargs):
        raise AssertionError("a gold or mutant ran in the evaluating process")

    monkeypatch.setattr(sql_module.SqliteSession, "run", ran_here)
    monkeypatch.setattr(sql_module.DuckDBSession, "run", ran_here)


@pytest.fixture()
def listener():
    srv = Listener()
    try:
        yield srv
    finally:
        srv.close()


def _duck(path: Path) -> Path:
    duckdb = pytest.importorskip("duckdb")
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR, salary INTEGER)")
    con.execute("INSERT INTO t VALUES (1, 'ann', 90), (2, 'bob', 150), (3, 'cy', 120)")
    con.close()
    return path


# ------------------------------------------------------ where golds and mutants run


def test_neighbours_are_built_without_running_a_query_in_this_process(
        company, tmp_path, no_inprocess_sessions):
    built = sql_neighbours(company, "sqlite", "SELECT name FROM emp WHERE salary > 100", 6,
                           seed=1, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 6 and built.executions > 0
    duck = _duck(tmp_path / "d" / "t.duckdb")
    built = sql_neighbours(duck, "duckdb", "SELECT name FROM t WHERE salary > 100", 4,
                           seed=1, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 4


def test_run_scores_test_suite_without_running_a_gold_in_this_process(
        company, tmp_path, no_inprocess_sessions):
    gold = "SELECT name FROM emp WHERE salary > 100"
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps(case("c1", str(company), gold)) + "\n", encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"case_id": "c1", "query": gold}) + "\n", encoding="utf-8")
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs",
                      test_suite=5)
    rec = records(run)["c1"]
    assert rec["test_suite"]["reason"].startswith("equal on the original and all 5"), rec
    assert rec["scores"]["test_suite_match"] == 1.0


def test_audit_finds_under_constrained_without_running_a_gold_in_this_process(
        company, tmp_path, monkeypatch, no_inprocess_sessions):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    suite = _suite(tmp_path, {"loose": "SELECT DISTINCT id FROM emp"})
    report = tmp_path / "a.json"
    assert main(["audit", str(suite), "--database", str(company), "--json", str(report),
                 "--test-suite", "6"]) == 0
    found = json.loads(report.read_text(encoding="utf-8"))["golds"][0]
    assert "SELECT id FROM emp" in found["under_constrained"]["mutants"]


# ------------------------------------------------------ hostile golds, checks on and off


def _hostile_sqlite(out: Path, other: Path) -> list[str]:
    return [
        f"ATTACH '{out / 'new.db'}' AS x",
        f"ATTACH '{other}' AS x",
        "DETACH main",
        "SELECT load_extension('/nonexistent/evil.so')",
        f"VACUUM INTO '{out / 'copy.db'}'",
        "PRAGMA journal_mode = WAL",
        "PRAGMA user_version = 7",
        "INSERT INTO emp (id, name) VALUES (999, 'mallory')",
        "UPDATE emp SET salary = 0",
    ]


def _hostile_duckdb(out: Path, url: str) -> list[str]:
    return [
        f"COPY (SELECT 42 AS a) TO '{out / 'copy.csv'}'",
        f"COPY t TO '{out / 'copy.parquet'}' (FORMAT parquet)",
        f"ATTACH '{out / 'new.duckdb'}' AS x",
        "INSTALL httpfs",
        "LOAD httpfs",
        f"SELECT * FROM read_csv('{url}/data.csv')",
        f"SELECT * FROM '{url}/data.parquet'",
        f"SELECT * FROM read_text('{url}/x.txt')",
        f"EXPORT DATABASE '{out / 'export'}'",
        "PRAGMA enable_profiling = 'json'",
        "SET memory_limit = '100GB'",
        "INSERT INTO t VALUES (9, 'mallory', 1)",
    ]


def _try_all(run, corpus: list[str]) -> dict[str, str]:
    """Each gold through ``run``; what became of it (a QueryExecutionError's class, or ok)."""
    out = {}
    for q in corpus:
        try:
            run(q)
            out[q] = "ok"
        except QueryExecutionError as exc:
            out[q] = type(exc).__name__
    return out


def test_hostile_sqlite_golds_change_no_file(company, tmp_path, checks):
    out = tmp_path / "out"
    out.mkdir()
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE secret (x)").connection.close()
    before = _snapshot(tmp_path)
    got = _try_all(lambda q: sql_neighbours(company, "sqlite", q, 3, cache_dir=tmp_path / "c"),
                   _hostile_sqlite(out, other))
    assert list(out.iterdir()) == []
    after = _snapshot(tmp_path)
    assert {k: v for k, v in after.items() if "/c/" not in k} == before
    assert sqlite3.connect(company).execute("SELECT count(*), min(salary) FROM emp "
                                            "WHERE name = 'mallory'").fetchone()[0] == 0
    if checks:  # the text checks refuse each before anything runs
        assert set(got.values()) == {"QueryRefused"}, got
    else:
        # the sandbox does not govern a PRAGMA of the connection: what it holds is that no
        # file changes (asserted above) and that no file outside the build is read (ATTACH
        # of the database beside the suite's reads it: Landlock refuses the open)
        writes = [q for q in got if q.startswith(("INSERT", "UPDATE", "VACUUM"))
                  or str(out) in q or str(other) in q or "load_extension" in q]
        assert [got[q] for q in writes].count("ok") == 0, got


def test_hostile_duckdb_golds_change_no_file_and_reach_no_listener(tmp_path, listener, checks):
    duck = _duck(tmp_path / "db" / "t.duckdb")
    out = tmp_path / "out"
    out.mkdir()
    before = _snapshot(tmp_path)
    got = _try_all(lambda q: sql_neighbours(duck, "duckdb", q, 3, cache_dir=tmp_path / "c",
                                            timeout_s=20),
                   _hostile_duckdb(out, listener.url))
    assert listener.hits == []
    assert list(out.iterdir()) == []
    assert {k: v for k, v in _snapshot(tmp_path).items() if "/c/" not in k} == before
    if checks:
        assert set(got.values()) == {"QueryRefused"}, got
    for q in got:
        if q.startswith(("COPY", "ATTACH", "INSTALL", "LOAD", "EXPORT", "INSERT")) \
                or "http" in q:
            assert got[q] != "ok", (q, got)


def test_reading_a_file_is_refused_by_the_checks(tmp_path, checks):
    """read_csv / read_text / read_blob / glob of /etc, a file beside the database and the
    run folder: refused by the checks, and with the checks off by the sandbox (Landlock: the
    worker reads only its database and the build's folder; docs/reliability.md)."""
    duck = _duck(tmp_path / "db" / "t.duckdb")
    beside = tmp_path / "db" / "beside.csv"
    beside.write_text("secret\nqueryeval-secret\n")
    run_file = tmp_path / "runs" / "results.jsonl"
    run_file.parent.mkdir()
    run_file.write_text("secret\nqueryeval-secret\n")
    for f in ("/etc/passwd", beside, run_file):
        for q in (f"SELECT * FROM read_csv('{f}')", f"SELECT * FROM read_text('{f}')",
                  f"SELECT * FROM read_blob('{f}')"):
            with pytest.raises(QueryExecutionError):
                sql_neighbours(duck, "duckdb", q, 3, cache_dir=tmp_path / "c")
    with NeighbourRunner("duckdb", [duck]) as runner:  # where the golds run
        for folder in ("/etc", tmp_path / "db", tmp_path / "runs"):
            q = f"SELECT * FROM read_text('{folder}/*')"
            if checks:
                with pytest.raises(QueryExecutionError):
                    sql_neighbours(duck, "duckdb", q, 3, cache_dir=tmp_path / "c")
            else:  # the sandbox lists nothing there: the glob matches no file
                assert runner.run(duck, q, 20, 10)[1] == [], folder


RUNAWAY = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
           "SELECT count(*) FROM r")


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb"])
def test_a_runaway_gold_ends_at_its_deadline(company, tmp_path, checks, dialect):
    from queryeval.engines.query import QueryTimeout

    db = company if dialect == "sqlite" else _duck(tmp_path / "db" / "t.duckdb")
    with pytest.raises(QueryTimeout):
        sql_neighbours(db, dialect, RUNAWAY, 3, cache_dir=tmp_path / "c", timeout_s=1.0)


BALLOONS = {
    "sqlite": ["SELECT length(zeroblob(2000000000))",
               "SELECT length(group_concat(hex(zeroblob(1000000)))) FROM "
               "(WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 2000)"
               " SELECT n FROM r)"],
    "duckdb": ["SELECT length(repeat('x', 1000000000))",
               "SELECT length(string_agg(repeat('x', 1000), '')) FROM range(2000000)",
               "SELECT count(DISTINCT a.range * 100000 + b.range) FROM range(20000) a, "
               "range(20000) b"],
}


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb"])
def test_a_balloon_gold_stops_at_the_memory_cap(company, tmp_path, checks, dialect):
    """Under a 256 MiB cap each balloon fails (or is refused) in the worker; the worker is
    started again for the next query."""
    db = company if dialect == "sqlite" else _duck(tmp_path / "db" / "t.duckdb")
    for q in BALLOONS[dialect]:
        with pytest.raises(QueryExecutionError):
            sql_neighbours(db, dialect, q, 3, cache_dir=tmp_path / "c", timeout_s=60,
                           memory_limit_bytes=256 * MiB)
    built = sql_neighbours(db, dialect, "SELECT count(*) FROM " + (
        "emp" if dialect == "sqlite" else "t"), 2, cache_dir=tmp_path / "c",
        memory_limit_bytes=256 * MiB)
    assert len(built.neighbours) == 2


def test_hostile_gold_through_the_run_and_the_audit(company, tmp_path, monkeypatch,
                                                    checks):
    """Through ``queryeval run --test-suite`` (prediction = the gold, so the neighbours are
    asked for) and ``queryeval audit --test-suite``: no file changes and nothing scores 1."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    out.mkdir()
    golds = {"attach": f"ATTACH '{out / 'x.db'}' AS x", "vacuum": f"VACUUM INTO '{out / 'v.db'}'",
             "pragma": "PRAGMA journal_mode = WAL"}
    suite, preds = _suite_predicting_the_gold(tmp_path, company, golds)
    before = _snapshot(company.parent)
    # every hostile gold is refused or fails, so no case is scored: exit 2 naming the first
    assert main(["run", str(suite), "--task", "query", "--responses", str(preds), "--out",
                 str(tmp_path / "runs"), "--test-suite", "3"]) == 2
    assert main(["audit", str(suite), "--database", str(company), "--json",
                 str(tmp_path / "a.json"), "--test-suite", "3", "--query-timeout", "2"]) in (0, 1)
    assert list(out.iterdir()) == []
    after = _snapshot(company.parent)  # the suite, the database: unchanged
    assert {k: after.get(k) for k in before} == before
    for path in (tmp_path / "runs").rglob("results_*.jsonl"):
        for rec in map(json.loads, path.read_text().splitlines()):
            assert (rec.get("scores") or {}).get("test_suite_match") != 1.0, rec


# ------------------------------------------------------ the multi-file worker's allowlist


@needs_sandbox
def test_the_worker_opens_only_the_files_its_parent_allowed(company, tmp_path):
    from queryeval.engines.query import QueryRefused

    other = tmp_path / "elsewhere" / "o.sqlite"
    other.parent.mkdir()
    sqlite3.connect(other).execute("CREATE TABLE secret (x)").connection.close()
    with NeighbourRunner("sqlite", [company]) as runner:
        assert runner.run(company, "SELECT count(*) FROM emp", 10, 10)[1][0][0] > 0
        with pytest.raises(QueryRefused):
            runner.run(other, "SELECT count(*) FROM secret", 10, 10)
        assert not [k for k, v in runner.sandbox.items() if v.startswith("unavailable")]


def test_the_verdict_reuses_a_pool_of_workers_across_cases(company, tmp_path, monkeypatch):
    """Every case's SQL neighbours run in the run's pool of WORKERS multi-file workers: the
    run starts one worker for the database, one per neighbour build and at most WORKERS for
    the verdicts (one per neighbour per case before: 2 x 8 here)."""
    from queryeval.engines.worker import WorkerProcess
    from queryeval.tasks.query.testsuite import WORKERS

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    starts = []
    original = WorkerProcess.start
    monkeypatch.setattr(WorkerProcess, "start",
                        lambda self: (starts.append(self.args[1]), original(self))[1])
    golds = {"a": "SELECT name FROM emp WHERE salary > 100", "b": "SELECT id FROM emp"}
    suite, preds = _suite_predicting_the_gold(tmp_path, company, golds)
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs",
                      test_suite=8)
    recs = records(run)
    assert [recs[k]["scores"]["test_suite_match"] for k in golds] == [1.0, 1.0]
    assert starts.count(str(company)) == 1  # the task's engine on the database
    assert 2 <= starts.count("*") <= 2 + WORKERS  # two builds, then the verdicts' pool
    assert len(starts) <= 3 + WORKERS
