"""The multi-file SQL worker's DuckDB files (issue 34): one in-memory connection ATTACHes
each file read-only under its stem, USEs it and DETACHes the one before, instead of a new
DuckDB instance per file. A query sees what a direct open shows, files with the same stem
in two folders stay apart, the connection reads nothing outside the allowed roots, and
with the query checks off what a query leaves behind never reaches the next file."""

from __future__ import annotations

from pathlib import Path

import pytest

from queryeval.engines.query.sql import DuckDBFiles, DuckDBSession
from queryeval.engines.query.sql_worker import FileSessions

duckdb = pytest.importorskip("duckdb")

PROBES = ("SELECT current_database(), current_schema()",
          "SELECT database_name, internal FROM duckdb_databases() ORDER BY 1",
          "SELECT table_catalog, table_name FROM information_schema.tables ORDER BY 2",
          "SELECT name, salary FROM emp ORDER BY id")


def _db(path: Path, rows: list[tuple]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT, salary INTEGER)")
    con.executemany("INSERT INTO emp VALUES (?, ?, ?)", rows)
    con.close()
    return path


def _sessions(roots: list[Path], checks: bool = True) -> FileSessions:
    return FileSessions("duckdb", 512 * 1024**2, 1,
                        {"checks": checks, "roots": [str(r.resolve()) for r in roots]})


def _ask(sessions: FileSessions, path: Path, query: str) -> tuple[str, object]:
    status, payload = sessions.handle({"query": query, "timeout_s": 10, "max_rows": 100,
                                       "path": str(path)})
    return status, payload["rows"] if status == "ok" else payload


def _direct(path: Path, query: str) -> list[tuple]:
    session = DuckDBSession(path, threads=1, memory_limit_bytes=512 * 1024**2)
    try:
        return session.run(query, 10.0, 100)[1]
    finally:
        session.close()


def test_each_file_reads_as_a_direct_open_shows_it(tmp_path: Path) -> None:
    a = _db(tmp_path / "n" / "cand_1.duckdb", [(1, "alice", 90), (2, "bob", 120)])
    b = _db(tmp_path / "n" / "cand_2.duckdb", [(1, "carol", 150)])
    same_stem = _db(tmp_path / "other" / "cand_1.duckdb", [(7, "dave", 10)])
    sessions = _sessions([tmp_path / "n", same_stem])
    shared = None
    for path in (a, b, same_stem, a, a, b):
        for query in PROBES:
            assert _ask(sessions, path, query) == ("ok", _direct(path, query)), (path, query)
        assert isinstance(sessions.session, DuckDBFiles)  # no new instance per file
        shared = shared or sessions.session
        assert sessions.session is shared
    assert _ask(sessions, a, "SELECT name FROM emp ORDER BY id") == ("ok", [("alice",), ("bob",)])
    assert _ask(sessions, same_stem, "SELECT name FROM emp") == ("ok", [("dave",)])


def test_the_shared_connection_reads_only_the_roots(tmp_path: Path) -> None:
    a = _db(tmp_path / "n" / "cand_1.duckdb", [(1, "alice", 90)])
    outside = tmp_path / "secret.csv"
    outside.write_text("word\nhidden\n")
    sessions = _sessions([tmp_path / "n"])
    assert _ask(sessions, a, "SELECT count(*) FROM emp") == ("ok", [(1,)])
    conn = sessions.session._conn  # past the query checks: the connection's own settings
    for sql in (f"SELECT * FROM read_csv('{outside}')",
                f"ATTACH '{tmp_path / 'made.duckdb'}' AS made",
                "SET enable_external_access = true"):
        with pytest.raises(duckdb.Error):
            conn.execute(sql).fetchall()
    assert not (tmp_path / "made.duckdb").exists()
    status, payload = _ask(sessions, outside, "SELECT 1")  # not a root: refused before any open
    assert status == "error" and payload["kind"] == "refused"


def test_with_checks_off_nothing_a_query_leaves_reaches_the_next_file(tmp_path: Path) -> None:
    a = _db(tmp_path / "n" / "cand_1.duckdb", [(1, "alice", 90)])
    b = _db(tmp_path / "n" / "cand_2.duckdb", [(1, "carol", 150)])
    sessions = _sessions([tmp_path / "n"], checks=False)
    assert _ask(sessions, a, "CREATE TEMP TABLE emp AS SELECT 99 AS id, 'ghost' AS name") == \
        ("ok", [(1,)])
    assert _ask(sessions, a, "SELECT name FROM temp.emp") == ("ok", [("ghost",)])
    # the next file: the temporary table is not there (a fresh connection), its rows are
    assert _ask(sessions, b, "SELECT name FROM emp") == ("ok", [("carol",)])
    assert _ask(sessions, b, "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'temp'") \
        == ("ok", [(0,)])
    assert _ask(sessions, a, "SELECT name FROM emp") == ("ok", [("alice",)])
