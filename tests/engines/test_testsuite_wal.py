"""--test-suite on a sqlite database in WAL mode (``PRAGMA journal_mode=wal``, common for a
database an application writes): the neighbour runner's sandboxed worker, allowed only the
database file, could not open it (sqlite reads the ``-shm``/``-wal`` files beside it), so
every case was "unknown" ("no neighbour databases: ... cannot open sqlite database") while
the single-file engine, which is allowed them, ran the same database fine."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers.sandbox import needs_sandbox  # noqa: E402
from helpers.testsuite_sql import build_example
from queryeval.cli.app import main
from queryeval.engines.query.neighbours.runner import NeighbourRunner

pytestmark = needs_sandbox


def wal_database(path: Path) -> sqlite3.Connection:
    """Switch ``path`` to WAL mode and keep a connection open (so ``-wal``/``-shm`` exist,
    as while the application that writes it runs)."""
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode=wal").fetchone() == ("wal",)
    con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return con


def test_neighbour_runner_opens_a_wal_database(tmp_path):
    db = tmp_path / "w.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (a)")
        con.execute("INSERT INTO t VALUES (7)")
    con = wal_database(db)
    try:
        con.execute("INSERT INTO t VALUES (8)")  # in the -wal file only (not checkpointed)
        con.commit()
        assert Path(str(db) + "-wal").exists() and Path(str(db) + "-shm").exists()
        with NeighbourRunner("sqlite", [db]) as runner:
            assert sorted(runner.run(db, "SELECT a FROM t", 10, 10)[1]) == [(7,), (8,)]
    finally:
        con.close()


def test_test_suite_on_a_wal_database_gives_the_verdicts(tmp_path, monkeypatch):
    con = wal_database(build_example(tmp_path))
    try:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
        code = main(["run", "suite.yaml", "--task", "query", "--responses",
                     "predictions.jsonl", "--test-suite", "5", "--out", "runs", "-q",
                     "--no-report"])
    finally:
        con.close()
    assert code == 0
    doc = json.loads(next((tmp_path / "runs").rglob("metrics_*.json")).read_text())
    o = doc["overall_metrics"]
    # as on the example in rollback-journal mode (docs/test-suite.md): two right by accident
    assert (o["test_suite_refuted"], o["test_suite_unknown"]) == (2, 0)
    assert o["test_suite_accuracy"] == 3 / 5
