"""A DuckDB view over an http(s) URL (issue 34: "a view over an http(s) URL would make the
evaluator fetch it wherever httpfs is installed"), with the query checks switched off: the
neighbour build and a scored run open no connection to the URL -- a loopback HTTP server
counting requests sees none -- the view is left out of the neighbours, and a query reading
it fails in the sandboxed worker (unreadable there) rather than fetching it.

DuckDB binds a view when it is created, so making one over a URL needs an http filesystem in
the creating process: here fsspec's, registered on that one connection (the test checks the
server saw the creation's fetch, so the view really reads the URL); the evaluating process
and the workers have none registered, and the workers run DuckDB with external access and
extension autoload off under seccomp (no socket)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.hostile_queries import Listener  # noqa: E402
from helpers.sandbox import needs_sandbox  # noqa: E402
from helpers.testsuite_schemas import _run  # noqa: E402
from queryeval.engines.query import base
from queryeval.engines.query.neighbours import database_rows, sql_neighbours

duckdb = pytest.importorskip("duckdb")
fsspec = pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")  # fsspec's http filesystem
GOLD = "SELECT name FROM t WHERE salary > 100"
BODY = {"remote_secret_header": 7}  # served as JSON text: one line read as a CSV


@pytest.fixture()
def server():
    """A loopback HTTP server recording every request (``hits``), answering with BODY."""
    srv = Listener(answer=BODY)
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture()
def checks_off(monkeypatch) -> None:
    if needs_sandbox.args[0]:
        pytest.skip(needs_sandbox.kwargs["reason"])
    monkeypatch.setattr(base, "QUERY_CHECKS", False)


def _Http():  # noqa: N802 - fsspec's http filesystem, with the modified() DuckDB asks for
    import datetime

    from fsspec.implementations.http import HTTPFileSystem

    class Http(HTTPFileSystem):
        def modified(self, path):
            return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

    return Http()


def _remote_view_db(path: Path, url: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, salary INTEGER)")
    con.execute("INSERT INTO t VALUES (1, 'ann', 90), (2, 'bob', 150), (3, 'cy', 120)")
    con.register_filesystem(_Http())  # on this connection only
    con.execute(f"CREATE VIEW remote AS SELECT * FROM read_csv('{url}')")
    con.close()
    return path


def test_a_view_over_a_url_is_fetched_by_nobody(tmp_path, server, checks_off, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = _remote_view_db(tmp_path / "db" / "remote.duckdb", server.url + "/data.csv")
    assert server.hits, "the view was made over the URL: its creation fetched it"
    server.hits.clear()

    built = sql_neighbours(db, "duckdb", GOLD, 3, cache_dir=tmp_path / "c", timeout_s=10)
    assert len(built.neighbours) == 3 and all(nb.rows for nb in built.neighbours)
    for path in built.paths():
        assert b"remote_secret_header" not in path.read_bytes()
        tables = database_rows(path, "duckdb")
        assert "remote" not in tables and "remote_secret_header" not in json.dumps(tables)
    assert server.hits == []

    # a prediction reading the view: unreadable in the worker, on the original and so its
    # result is no match there (exact match 0), and still no request
    rec = _run(tmp_path, db, GOLD, "SELECT name FROM t WHERE salary > 100 "
                                   "AND (SELECT count(*) FROM remote) > 0", n=3)
    assert rec["scores"]["exact_match_f1"] == 0.0
    assert rec["scores"]["test_suite_match"] == 0.0
    assert rec["test_suite"]["reason"] == "the prediction did not run on the original (failed)"
    assert "remote_secret_header" not in json.dumps(rec)
    # the gold itself over the view: unreadable on the original (with the checks off the
    # worker's DuckDB may try to install httpfs: the sandbox has no socket), so the case is
    # a gold error -- no score, so no test-suite verdict from it
    (tmp_path / "g").mkdir()
    rec = _run(tmp_path / "g", db, "SELECT * FROM remote", "SELECT * FROM remote", n=3)
    assert rec["status"] == "error" and rec["error_kinds"] == ["gold_query"], rec
    assert rec["gold_execution"]["status"] == "failed" and rec["scores"] is None
    assert server.hits == []
