"""The DuckDB neighbour writer (issue 34): one in-memory connection ATTACHes each
candidate file in its folder, writes it, DETACHes it; every file holds exactly the rows a
fresh connection per file writes, a refused row is refused the same way, the connection
reaches no file outside its folder and changes no setting, and a schema whose DDL is not
plain CREATE TABLE/VIEW/SEQUENCE/INDEX is written with a fresh connection as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from queryeval.engines.query.neighbours.schema import (
    DuckDBWriter,
    read_schema,
    table_rows,
    write_database,
)

duckdb = pytest.importorskip("duckdb")

DDL = ("CREATE TABLE dept (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
       "CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER "
       "CHECK (salary >= 0), dept_id INTEGER REFERENCES dept(id))",
       "CREATE VIEW rich AS SELECT name FROM emp WHERE salary > 100",
       "CREATE INDEX emp_salary ON emp(salary)")
ROWS = {"dept": [(1, "sales"), (2, "research"), (2, "again")],  # the third: a key clash
        "emp": [(1, "alice", 90, 1), (2, "bob", 120, 3),  # bob: no dept 3
                (3, "carol", -5, 2), (4, "dave", 150, 2)]}  # carol: the CHECK
KEPT = {"dept": [(1, "sales"), (2, "research")], "emp": [(1, "alice", 90, 1), (4, "dave", 150, 2)]}


def _schema(tmp_path: Path, *extra: str):
    src = tmp_path / "src" / "emp.duckdb"
    src.parent.mkdir()
    con = duckdb.connect(str(src))
    for sql in (*DDL, *extra):
        con.execute(sql)
    con.execute("INSERT INTO dept VALUES (1, 'sales')")
    con.close()
    return read_schema(src, "duckdb")


def _fresh(schema, tmp_path: Path) -> tuple[dict, dict]:
    alone = tmp_path / "alone" / "candidate.duckdb"
    alone.parent.mkdir(exist_ok=True)
    refused: dict[str, str] = {}
    kept = write_database(schema, alone, ROWS, refused)
    return kept, table_rows(alone, "duckdb")


def test_one_connection_writes_what_a_fresh_one_writes(tmp_path: Path) -> None:
    schema = _schema(tmp_path)
    writer = DuckDBWriter(tmp_path / "w")
    kept_alone, rows_alone = _fresh(schema, tmp_path)
    assert kept_alone == KEPT
    assert writer.fits(schema, writer.folder / "candidate.duckdb")
    conn = writer.conn
    for k in range(2):  # the same connection, the file moved away after each
        path = writer.folder / "candidate.duckdb"
        refused: dict[str, str] = {}
        assert write_database(schema, path, ROWS, refused, writer) == KEPT
        assert sorted(refused) == ["dept", "emp"]
        assert writer.conn is conn
        moved = tmp_path / f"candidate_{k}.duckdb"
        path.rename(moved)
        assert sorted(p.name for p in writer.folder.iterdir()) == []  # no WAL left behind
        assert table_rows(moved, "duckdb") == rows_alone
        assert rows_alone["emp"]["rows"] == [[1, "alice", 90, 1], [4, "dave", 150, 2]]
        con = duckdb.connect(str(moved), read_only=True)
        assert con.execute("SELECT * FROM rich").fetchall() == [("dave",)]
        # a candidate holds a few rows: DuckDB's smallest blocks (16 KiB, not 256)
        assert con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0] == 16384
        con.close()


def test_a_duckdb_without_block_size_writes_default_blocks(tmp_path: Path, monkeypatch) -> None:
    """A DuckDB that refuses ``ATTACH ... (BLOCK_SIZE ...)`` (before 1.2) gets the same
    candidate with its default blocks, and the writer stops asking."""
    import queryeval.engines.query.neighbours.schema as sch

    schema = _schema(tmp_path)
    _, rows_alone = _fresh(schema, tmp_path)
    monkeypatch.setattr(sch, "_BLOCK_SIZE", 3)  # not a power of two: DuckDB refuses it
    writer = DuckDBWriter(tmp_path / "w")
    path = writer.folder / "candidate.duckdb"
    assert write_database(schema, path, ROWS, None, writer) == KEPT
    assert writer.small_blocks is False
    assert table_rows(path, "duckdb") == rows_alone
    sizes = []
    for made in (path, tmp_path / "alone" / "candidate.duckdb"):  # the writer's, a fresh one's
        con = duckdb.connect(str(made), read_only=True)
        sizes.append(con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0])
        con.close()
    assert sizes[0] == sizes[1] != 16384  # DuckDB's default


def test_the_writer_reaches_no_file_outside_its_folder_and_no_setting(tmp_path: Path) -> None:
    outside = tmp_path / "outside.csv"
    outside.write_text("secret\n1\n")
    writer = DuckDBWriter(tmp_path / "w")
    assert writer.fits(_schema(tmp_path), writer.folder / "candidate.duckdb")
    for sql in (f"SELECT * FROM read_csv('{outside}')",
                f"ATTACH '{tmp_path / 'other.duckdb'}' AS other",
                "SET enable_external_access = true",
                f"SET allowed_directories = ['{tmp_path}/']"):
        with pytest.raises(duckdb.Error):
            writer.conn.execute(sql)
    assert not (tmp_path / "other.duckdb").exists()


def test_other_ddl_gets_a_fresh_connection(tmp_path: Path) -> None:
    # a two-statement index DDL, as a crafted file may hold, is not replayed on the shared
    # connection; the file is still written, by a connection of its own
    schema = _schema(tmp_path)
    schema.extra_ddl.append("CREATE INDEX i2 ON emp(name); CREATE MACRO f(x) AS x")
    writer = DuckDBWriter(tmp_path / "w")
    path = writer.folder / "candidate.duckdb"
    assert not writer.fits(schema, path)
    assert write_database(schema, path, ROWS, None, writer) == KEPT
    assert table_rows(path, "duckdb") == _fresh(schema, tmp_path)[1]
    assert not writer.fits(schema, tmp_path / "candidate.duckdb")  # outside its folder


def test_an_object_left_outside_the_candidate_restarts_the_connection(tmp_path: Path) -> None:
    schema = _schema(tmp_path)
    schema.extra_ddl.append("CREATE TABLE memory.main.leak (a INTEGER)")
    writer = DuckDBWriter(tmp_path / "w")
    path = writer.folder / "candidate.duckdb"
    assert writer.fits(schema, path)
    for _ in range(2):  # each time the table is made afresh: no "already exists"
        assert write_database(schema, path, ROWS, None, writer) == KEPT
        assert writer.conn is None  # the leak seen: the next write opens a fresh one
        assert table_rows(path, "duckdb") == _fresh(schema, tmp_path)[1]


def test_the_sandboxed_worker_writes_through_its_writer(tmp_path: Path) -> None:
    from queryeval.engines.query.neighbours.runner import NeighbourRunner

    schema = _schema(tmp_path)
    expected = _fresh(schema, tmp_path)[1]
    with NeighbourRunner("duckdb", [tmp_path]) as runner:
        for k in range(2):
            path = tmp_path / f"candidate_{k:03d}.duckdb"
            assert runner.write(schema, path, ROWS) == KEPT
            assert runner.rows(path) == expected
        # written in the worker's own write folder and moved from it: nothing left there
        assert list((Path(runner._worker._tmpdir) / "duckdb-writes").iterdir()) == []
