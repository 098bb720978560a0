"""Where the test suite's neighbour builder opens a user's database (docs/execution.md):
reading the schema, sampling its values, replaying its DDL and writing the neighbours all
happen in the sandboxed worker, never in the evaluating process; hostile schemas -- views
over a file outside, over a FIFO nobody writes, generated columns computing huge values,
a runaway recursive view, a macro, a sqlite trigger -- with the query checks switched off
read nothing outside, leave the user's files as they were and end within the deadline."""

from __future__ import annotations

import errno
import json
import os
import resource
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from helpers.sandbox import _snapshot, needs_sandbox  # noqa: E402
from helpers.testsuite_schemas import _run  # noqa: E402
from queryeval.engines.query import QueryExecutionError, QueryTimeout, base
from queryeval.engines.query.neighbours import database_rows, sql_neighbours

duckdb = pytest.importorskip("duckdb")
MiB = 1024**2
GOLD = "SELECT name FROM t WHERE salary > 100"
TABLE = ("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, salary INTEGER)",
         "INSERT INTO t VALUES (1, 'ann', 90), (2, 'bob', 150), (3, 'cy', 120)")


@pytest.fixture()
def checks_off(monkeypatch) -> None:
    if needs_sandbox.args[0]:
        pytest.skip(needs_sandbox.kwargs["reason"])
    monkeypatch.setattr(base, "QUERY_CHECKS", False)


def _duck(path: Path, *script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    for sql in (*TABLE, *script):
        con.execute(sql)
    con.close()
    return path


def _within(seconds: float, fn):
    """``fn()``'s value (or its exception) -- failing the test when it runs past
    ``seconds`` (the old builder hung on a FIFO for good)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


# ------------------------------------------------------------ nothing here opens the database


def test_the_builder_opens_no_database_in_this_process(tmp_path, monkeypatch):
    """With sqlite3.connect and duckdb.connect failing in this (the evaluating) process, the
    neighbours are still built and their rows read: the schema, the samples, the DDL replay
    and the writes happen in the worker (on the old code read_schema ran here)."""
    sq = tmp_path / "e.sqlite"
    con = sqlite3.connect(sq)
    con.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                      "salary INTEGER); INSERT INTO t VALUES (1, 'ann', 90), (2, 'bob', 150);")
    con.close()
    dk = _duck(tmp_path / "db" / "e.duckdb")

    def opened_here(*args, **kwargs):
        raise AssertionError("a database was opened in the evaluating process")

    monkeypatch.setattr(sqlite3, "connect", opened_here)
    monkeypatch.setattr(duckdb, "connect", opened_here)
    for db, dialect in ((sq, "sqlite"), (dk, "duckdb")):
        built = sql_neighbours(db, dialect, GOLD, 3, cache_dir=tmp_path / "c")
        assert len(built.neighbours) == 3 and all(nb.rows for nb in built.neighbours)
        assert sum(len(t["rows"]) for t in database_rows(built.paths()[0], dialect).values()) \
            == built.neighbours[0].rows


# ------------------------------------------------------------ hostile schemas, checks off


@needs_sandbox
def test_a_view_over_a_file_outside_is_not_read_again(tmp_path, checks_off):
    """A view over read_csv of a file outside: the replay in the worker (external access
    off, Landlock) does not bind it, so the file's header -- changed since the view was
    made -- appears in no neighbour (it became the neighbour view's column names)."""
    secret = tmp_path / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("first_header\n1\n", encoding="utf-8")
    db = _duck(tmp_path / "db" / "v.duckdb", f"CREATE VIEW v AS SELECT * FROM read_csv('{secret}')")
    secret.write_text("queryeval_secret_header\n1\n", encoding="utf-8")
    before = _snapshot(tmp_path / "outside") | _snapshot(tmp_path / "db")
    built = _within(120, lambda: sql_neighbours(db, "duckdb", GOLD, 3, cache_dir=tmp_path / "c"))
    assert len(built.neighbours) == 3
    for path in built.paths():
        assert b"queryeval_secret_header" not in path.read_bytes()
        assert "queryeval_secret_header" not in json.dumps(database_rows(path, "duckdb"))
        con = duckdb.connect(str(path), read_only=True)
        cols = [r[0] for r in con.execute("SELECT column_name FROM duckdb_columns()").fetchall()]
        con.close()
        assert "queryeval_secret_header" not in cols
    assert _snapshot(tmp_path / "outside") | _snapshot(tmp_path / "db") == before


def _fifo_opened(fifo: Path, stop: threading.Event, seen: list) -> None:
    """Watch ``fifo``: a write-end open without blocking succeeds only while someone holds
    it open for reading."""
    while not stop.is_set():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
        else:
            seen.append(time.monotonic())
            os.close(fd)
        time.sleep(0.005)


@needs_sandbox
def test_a_view_over_a_fifo_neither_hangs_nor_opens_it(tmp_path, checks_off, monkeypatch):
    """The issue's hang: a view over a FIFO nobody writes made the evaluating process open it
    (7,491 times in one run) and wait for good. Now the build and a scored run end within
    their deadlines and nobody opens the FIFO."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    pipe = tmp_path / "outside" / "pipe.csv"
    pipe.parent.mkdir()
    pipe.write_text("a\n1\n", encoding="utf-8")
    db = _duck(tmp_path / "db" / "f.duckdb", f"CREATE VIEW v AS SELECT * FROM read_csv('{pipe}')")
    pipe.unlink()
    os.mkfifo(pipe)
    stop, seen = threading.Event(), []
    watcher = threading.Thread(target=_fifo_opened, args=(pipe, stop, seen), daemon=True)
    watcher.start()
    try:
        built = _within(120, lambda: sql_neighbours(db, "duckdb", GOLD, 3,
                                                    cache_dir=tmp_path / "c", timeout_s=5))
        assert len(built.neighbours) == 3
        rec = _within(180, lambda: _run(tmp_path, db, GOLD, "SELECT name FROM t WHERE "
                                                             "name IN ('bob', 'cy')", n=3))
    finally:
        stop.set()
        watcher.join(5)
    assert seen == []
    assert rec["scores"]["test_suite_match"] == 0.0, rec["test_suite"]


@needs_sandbox
def test_a_generated_column_of_huge_values_stays_in_the_worker(tmp_path, checks_off):
    """A virtual generated column computing ~100 MB a row: the builder samples only the
    stored columns, so this process never computes it (the old one sampled it here and
    peaked at GBs); a gold that reads it fails in the worker at its memory cap."""
    db = _duck(tmp_path / "db" / "g.duckdb", "CREATE TABLE g (id INTEGER, name VARCHAR, "
               "pad VARCHAR GENERATED ALWAYS AS (repeat(name, 40000000)) VIRTUAL)",
               "INSERT INTO g (id, name) VALUES (1, 'abc'), (2, 'defg'), (3, 'hij')")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    built = _within(120, lambda: sql_neighbours(db, "duckdb", GOLD, 3, cache_dir=tmp_path / "c",
                                                memory_limit_bytes=256 * MiB))
    assert len(built.neighbours) == 3
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - peak
    assert grown < 200 * MiB, grown
    with pytest.raises(QueryExecutionError):
        _within(120, lambda: sql_neighbours(
            db, "duckdb", "SELECT DISTINCT pad FROM g", 3, cache_dir=tmp_path / "c",
            memory_limit_bytes=256 * MiB, timeout_s=20))


@needs_sandbox
def test_a_recursive_view_and_a_macro_end_within_the_deadline(tmp_path, checks_off):
    db = _duck(tmp_path / "db" / "r.duckdb",
               "CREATE MACRO twice(x) AS x * 2",
               "CREATE VIEW doubled AS SELECT twice(salary) AS s FROM t",
               "CREATE VIEW forever AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
               "SELECT n + 1 FROM r) SELECT n FROM r")
    before = _snapshot(tmp_path / "db")
    built = _within(120, lambda: sql_neighbours(db, "duckdb", GOLD, 3, cache_dir=tmp_path / "c"))
    assert len(built.neighbours) == 3
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        sql_neighbours(db, "duckdb", "SELECT count(*) FROM forever", 3,
                       cache_dir=tmp_path / "c", timeout_s=1.0)
    assert time.monotonic() - started < 30
    assert _snapshot(tmp_path / "db") == before


@needs_sandbox
def test_a_sqlite_trigger_is_not_replayed(tmp_path, checks_off):
    """A trigger writing into another table on every insert: not recreated in the
    neighbours (only tables, views and indexes are), so the rows written are the builder's
    own; the user's file is left as it was."""
    db = tmp_path / "db" / "tr.sqlite"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER);
        CREATE TABLE audit (id INTEGER);
        CREATE TRIGGER spy AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (new.id); END;
        INSERT INTO t VALUES (1, 'ann', 90), (2, 'bob', 150), (3, 'cy', 120);""")
    con.close()
    before = _snapshot(db.parent)
    built = _within(120, lambda: sql_neighbours(db, "sqlite", GOLD, 3, cache_dir=tmp_path / "c"))
    assert len(built.neighbours) == 3
    for path in built.paths():
        con = sqlite3.connect(path)
        assert con.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"
                           ).fetchone()[0] == 0
        con.close()
    assert _snapshot(db.parent) == before
