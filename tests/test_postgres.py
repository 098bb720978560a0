"""PostgreSQL engine against a real server started from Debian's ``postgresql`` binaries
(initdb in a temporary folder, loopback port); skipped with the reason where the binaries
or psycopg are absent."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg", reason="psycopg not installed (pip install 'queryeval[postgres]')")

from queryeval.cli.app import main  # noqa: E402
from queryeval.systems.engines import QueryFailed, QueryRefused, QueryTimeout  # noqa: E402
from queryeval.systems.engines.postgres import PostgresEngine, check_postgres  # noqa: E402
from test_query_task import run_records  # noqa: E402


def _bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(candidate).parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    bindir = _bin()
    if bindir is None:
        pytest.skip("PostgreSQL binaries not found (apt-get install -y postgresql)")
    root = Path(tempfile.mkdtemp(prefix="qe-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: run the server as postgres
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run the server")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", _free_port()
    run = lambda *args: subprocess.run([*prefix, *args], check=True, capture_output=True,  # noqa: E731
                                       timeout=60)
    run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "qe", "-N")
    run(str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "log"), "-o",
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start")
    try:
        admin = f"postgresql://qe@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute("CREATE DATABASE shop")
        with psycopg.connect(f"postgresql://qe@127.0.0.1:{port}/shop", autocommit=True) as con:
            con.execute(
                "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric);"
                "INSERT INTO items VALUES (1, 'carrot', 0.5), (2, 'onion', 0.4), (3, 'saffron', 9.99);"
                "CREATE FUNCTION bump() RETURNS int LANGUAGE sql AS "
                "$$ INSERT INTO items VALUES (99, 'x', 1) RETURNING 1 $$;"
                "CREATE ROLE reader LOGIN; GRANT SELECT ON items TO reader;"
                "GRANT EXECUTE ON FUNCTION bump() TO reader;")
        yield {"reader": f"postgresql://reader@127.0.0.1:{port}/shop",
               "admin": f"postgresql://qe@127.0.0.1:{port}/shop", "root": root}
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "stop"], capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def _count(server) -> int:
    with psycopg.connect(server["admin"]) as con:
        return con.execute("SELECT count(*) FROM items").fetchone()[0]


def test_select_rows_columns_and_row_limit(server):
    with PostgresEngine(server["reader"]) as engine:
        res = engine.execute("SELECT name, price FROM items ORDER BY id")
        assert res.columns == ["name", "price"]
        assert [(n, str(p)) for n, p in res.rows] == [("carrot", "0.5"), ("onion", "0.4"),
                                                       ("saffron", "9.99")]
        big = engine.execute("SELECT g FROM generate_series(1, 50) g", max_rows=10)
        assert big.truncated and [r[0] for r in big.rows] == list(range(1, 11))


@pytest.mark.parametrize("query", [
    "COPY (SELECT 1) TO PROGRAM 'touch /tmp/qe-pwned'",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(1, '/tmp/qe-pwned')",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_catalog.pg_read_file('/etc/passwd')",
    "SELECT * FROM dblink('host=127.0.0.1', 'select 1') AS t(a int)",
    "SET ROLE qe",
    "SELECT 1; SELECT 2",
    "DELETE FROM items",
    "WITH d AS (DELETE FROM items RETURNING *) SELECT * FROM d",
    "SELECT set_config('statement_timeout', '0', false)",
    "SELECT * FROM items FOR UPDATE",
    "SELECT query_to_xml('delete from items', true, true, '')",
])
def test_refused_before_execution(server, query):
    with pytest.raises(QueryRefused):
        check_postgres(query)
    # as a superuser too: nothing reaches the server
    with PostgresEngine(server["admin"]) as engine, pytest.raises(QueryRefused):
        engine.execute(query)
    assert _count(server) == 3
    assert not Path("/tmp/qe-pwned").exists()


def test_read_only_transaction_stops_what_the_policy_lets_through(server):
    with PostgresEngine(server["admin"]) as engine:
        with pytest.raises(QueryRefused, match="read-only"):
            engine.execute("SELECT bump()")  # a function that writes: the policy cannot see it
        assert engine.execute("SELECT count(*) FROM items").rows == [(3,)]  # still usable
    assert _count(server) == 3


def test_timeout_and_errors(server):
    with PostgresEngine(server["reader"]) as engine:
        start = time.monotonic()
        with pytest.raises(QueryTimeout):
            engine.execute("SELECT count(*) FROM generate_series(1, 10000000000)", timeout_s=1)
        assert time.monotonic() - start < 5
        with pytest.raises(QueryFailed, match="nope"):
            engine.execute("SELECT * FROM nope")
        assert engine.execute("SELECT 1 AS one").rows == [(1,)]


def test_run_with_a_postgresql_url(server, tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("id: cheap\nconversation:\n- role: user\n  content: cheap items\n"
                     "  target:\n    query:\n      gold: SELECT name FROM items WHERE price < 1\n",
                     encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"case_id": "cheap", "query": "SELECT name FROM items WHERE price <= 0.5"}\n',
                     encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--database", server["reader"],
                 "--out", str(out), "-q"]) == 0
    _, recs = run_records(out)
    assert recs["cheap"]["scores"]["perfect_match"] == 1.0
    assert main(["audit", str(suite), "--database", server["reader"], "--fail-on-broken"]) == 0
