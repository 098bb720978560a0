"""What only PostgreSQL has. The shared engine suite (tests/engines/test_engines_sql.py) and the
hostile corpus (tests/engines/test_engines_hostile.py) run on PostgreSQL as well; here: the holes in
the statement check that the corpus found (each first shown to be real on the server), the
engine's own recovery (advisory locks, a dropped connection), connection errors, and
``queryeval run --database postgresql://…`` end to end. A real server per pytest process
(``pg_server`` in conftest.py); skipped with the reason only where the binaries or psycopg
are absent."""

from __future__ import annotations

import socket

import pytest

psycopg = pytest.importorskip("psycopg",
                              reason="psycopg not installed (pip install 'queryeval[postgres]')")

from helpers.query_task import run_records  # noqa: E402
from queryeval.cli.app import main  # noqa: E402
from queryeval.engines.query import QueryRefused  # noqa: E402
from queryeval.engines.query import postgres as pg_module  # noqa: E402
from queryeval.engines.query.postgres import PostgresEngine, check_postgres  # noqa: E402
from queryeval.errors import ConfigError  # noqa: E402

SETUP = """
CREATE TABLE items (id int PRIMARY KEY, name text, price numeric);
INSERT INTO items VALUES (1, 'carrot', 0.5), (2, 'onion', 0.4), (3, 'saffron', 9.99);
GRANT SELECT ON items TO reader;
"""


@pytest.fixture(scope="module")
def shop(pg_server):
    return pg_server.database("shop", SETUP)


def _advisory_locks(admin_url: str) -> list[tuple[int, int]]:
    """(objid, pid) of every advisory lock held on the server, by anyone."""
    with psycopg.connect(admin_url, autocommit=True) as con:
        return con.execute("SELECT objid::bigint, pid FROM pg_locks "
                           "WHERE locktype = 'advisory' ORDER BY 1").fetchall()


def _locks_after_session_end(admin_url: str, pid: int) -> list[tuple[int, int]]:
    """The advisory locks once the server has ended backend ``pid`` (a client's close
    returns before the server has finished that session: waited for, up to 30 s)."""
    with psycopg.connect(admin_url, autocommit=True) as con:
        for _ in range(300):
            if con.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                           (pid,)).fetchone()[0] == 0:
                break
            con.execute("SELECT pg_sleep(0.1)")
    return _advisory_locks(admin_url)


LOCK_42 = "pg_advisory_lock(42)"
HOLES = [
    # SQL text run by a function
    f"SELECT * FROM ts_stat('SELECT to_tsvector({LOCK_42}::text)')",
    f"SELECT ts_rewrite('a'::tsquery, 'SELECT {LOCK_42}::text::tsquery, ''b''::tsquery')",
    # a Unicode-escaped name: U&"pg_advisory\005flock" is pg_advisory_lock for the server
    'SELECT U&"pg_advisory\\005flock"(42)',
    'SELECT pg_catalog.u&"pg_advisory\\005flock"(42)',
]


@pytest.mark.parametrize("query", HOLES)
def test_holes_in_the_old_check_are_real_and_now_refused(shop, query: str) -> None:
    """Each form takes a session-level advisory lock on the server, from inside a READ ONLY
    transaction, and the lock survives ROLLBACK (it would block other sessions). The old
    check let all of them through; now each is refused before anything is sent."""
    with psycopg.connect(shop["reader"]) as raw:  # what the server does with the text
        raw.read_only = True
        raw.execute(query)
        raw.rollback()
        pid = raw.info.backend_pid
        assert _advisory_locks(shop["admin"]) == [(42, pid)]
    assert _locks_after_session_end(shop["admin"], pid) == []  # released when the session ended
    with pytest.raises(QueryRefused) as err:
        check_postgres(query)
    assert "ts_" in err.value.reason or "Unicode-escaped" in err.value.reason
    with PostgresEngine(shop["admin"]) as engine, pytest.raises(QueryRefused):
        engine.execute(query)
    assert _advisory_locks(shop["admin"]) == []


def test_statistics_reset_survives_rollback_and_is_refused(shop) -> None:
    """``pg_stat_reset()`` passed the old check; as a superuser it resets the database's
    statistics, which ROLLBACK does not undo."""
    stamp = "SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()"
    with psycopg.connect(shop["admin"]) as raw:
        raw.read_only = True
        before = raw.execute(stamp).fetchone()
        raw.rollback()
        raw.execute("SELECT pg_stat_reset()")
        raw.rollback()
        after = raw.execute(stamp).fetchone()
        raw.rollback()
    assert after != before  # real: the reset happened in a rolled-back read-only transaction
    with PostgresEngine(shop["admin"]) as engine:
        with pytest.raises(QueryRefused, match=r"pg_stat_reset\(\)"):
            engine.execute("SELECT pg_stat_reset()")
        with pytest.raises(QueryRefused, match=r"pg_stat_reset_shared\(\)"):
            engine.execute("SELECT pg_stat_reset_shared('bgwriter')")
        assert engine.execute(stamp).rows == [after]


def test_unicode_strings_and_plain_bitwise_and_still_run(shop) -> None:
    """Only U&"…" *identifiers* are refused; U&'…' strings are data, ``u & "x"`` (spaces)
    is a bitwise AND."""
    with PostgresEngine(shop["reader"]) as engine:
        assert engine.execute("SELECT U&'\\0041\\0042'").rows == [("AB",)]
        assert engine.execute('SELECT u & "x" FROM (SELECT 6 AS u, 3 AS x) t').rows == [(2,)]
        assert engine.execute('SELECT "u&" FROM (SELECT 1 AS "u&") t').rows == [(1,)]


def test_advisory_locks_are_released_after_every_query(shop, monkeypatch) -> None:
    """Defence in depth for what the check may not know: a session-level advisory lock taken
    by a query (here with the check bypassed) is released when the query ends."""
    monkeypatch.setattr(pg_module, "check_postgres", lambda sql: None)
    with PostgresEngine(shop["reader"]) as engine:
        pid = engine.execute("SELECT pg_backend_pid()").rows[0][0]
        assert engine.execute("SELECT pg_advisory_lock(7), pg_advisory_lock(8)").rows == [("", "")]
        assert _advisory_locks(shop["admin"]) == []
        # it held them while the query ran (so the release is what freed them)
        r = engine.execute("SELECT pg_advisory_lock(9), (SELECT count(*) FROM pg_locks "
                           "WHERE locktype = 'advisory' AND pid = pg_backend_pid())")
        assert r.rows == [("", 1)]
        assert _advisory_locks(shop["admin"]) == []
        assert engine.execute("SELECT pg_backend_pid()").rows == [(pid,)]


def test_engine_reconnects_when_the_server_drops_its_connection(shop, monkeypatch) -> None:
    """A server restart or a terminated backend used to fail every later query of the run
    ("the connection is lost"); now the next query opens a new connection (the query had not
    started, so retrying it is safe)."""
    with PostgresEngine(shop["reader"]) as engine:
        pid = engine.execute("SELECT pg_backend_pid()").rows[0][0]
        with psycopg.connect(shop["admin"], autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        r = engine.execute("SELECT count(*), max(name) FROM items")
        assert r.rows == [(3, "saffron")]
        new_pid = engine.execute("SELECT pg_backend_pid()").rows[0][0]
        assert new_pid != pid
        # the new session is read-only and time-limited as well
        monkeypatch.setattr(pg_module, "check_postgres", lambda sql: None)
        with pytest.raises(QueryRefused, match="read-only"):
            engine.execute("SELECT * FROM items FOR UPDATE")
        with pytest.raises(pg_module.QueryTimeout):
            engine.execute("SELECT pg_sleep(5)", timeout_s=0.3)


def test_unreachable_server_is_a_config_error_without_the_password() -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError) as err:
        PostgresEngine(f"postgresql://qe:s3cret@127.0.0.1:{port}/shop", connect_timeout_s=2)
    msg = str(err.value)
    assert "cannot connect to PostgreSQL" in msg and f"qe:***@127.0.0.1:{port}" in msg
    assert "s3cret" not in msg


def test_closed_engine_refuses_to_run(shop) -> None:
    engine = PostgresEngine(shop["reader"])
    engine.close()
    engine.close()  # idempotent
    with pytest.raises(pg_module.QueryFailed, match="closed"):
        engine.execute("SELECT 1")


def test_run_with_a_postgresql_url(shop, tmp_path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text("id: cheap\nconversation:\n- role: user\n  content: cheap items\n"
                     "  target:\n    query:\n      gold: SELECT name FROM items WHERE price < 1\n",
                     encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"case_id": "cheap", "query": "SELECT name FROM items WHERE price <= 0.5"}\n',
                     encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--database", shop["reader"],
                 "--out", str(out), "-q"]) == 0
    _, recs = run_records(out)
    assert recs["cheap"]["scores"]["perfect_match"] == 1.0
    assert main(["audit", str(suite), "--database", shop["reader"], "--fail-on-broken"]) == 0


def test_a_case_may_name_its_postgresql_source(shop, tmp_path) -> None:
    """``source: postgresql://…`` in a case is a URL, not a path next to the suite file."""
    suite = tmp_path / "s.yaml"
    suite.write_text("id: cheap\nconversation:\n- role: user\n  content: cheap items\n"
                     "  target:\n    query:\n      gold: SELECT name FROM items WHERE price < 1\n"
                     f"      source: {shop['reader']}\n", encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"case_id": "cheap", "query": "SELECT name FROM items WHERE price < 1"}\n',
                     encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--out", str(out), "-q"]) == 0
    _, recs = run_records(out)
    assert recs["cheap"]["source"] == shop["reader"]
    assert recs["cheap"]["scores"]["perfect_match"] == 1.0
    assert main(["audit", str(suite), "--fail-on-broken"]) == 0


@pytest.mark.parametrize("url", ["postgresql://reader:s3cret@127.0.0.1:5432/shop",
                                 "postgresql://127.0.0.1/shop?user=reader&password=s3cret",
                                 "postgres://reader@127.0.0.1/shop?sslmode=disable&PASSWORD=s3cret"])
def test_a_password_in_the_url_is_refused_before_anything_is_written(tmp_path, capsys, url):
    """The source is written to the run log, the results and the HTML: a password there
    would be kept in plain text, so it must come from PGPASSWORD or ~/.pgpass."""
    suite = tmp_path / "s.yaml"
    case = ("id: cheap\nconversation:\n- role: user\n  content: cheap items\n"
            "  target:\n    query:\n      gold: SELECT 1\n")
    suite.write_text(case, encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--database", url, "--system", "cmd:true", "--out",
                 str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PGPASSWORD" in err and "s3cret" not in err
    assert not out.exists()
    suite.write_text(case + f"      source: {url}\n", encoding="utf-8")
    assert main(["validate", str(suite)]) == 2
    err = capsys.readouterr().err
    assert f"{suite}:8: conversation[0].target.query.source" in err and "PGPASSWORD" in err
    assert "s3cret" not in err


def test_passwords_are_redacted_from_error_messages() -> None:
    assert pg_module._redact("postgresql://qe:s3cret@h:5/db") == "postgresql://qe:***@h:5/db"
    assert (pg_module._redact("postgresql://h/db?user=qe&password=s3cret&sslmode=require")
            == "postgresql://h/db?user=qe&password=***&sslmode=require")


def test_server_binaries_are_found_on_path_or_in_debians_versioned_folders(
        tmp_path, monkeypatch) -> None:
    """Debian installs initdb/pg_ctl under /usr/lib/postgresql/<major>/bin, not on PATH: the
    newest major wins (15 over 13 and 9.6); none at all is the one reason to skip."""
    from helpers import pg_server

    for version in ("9.6", "13", "15"):
        bindir = tmp_path / "postgresql" / version / "bin"
        bindir.mkdir(parents=True)
        (bindir / "initdb").touch()
        (bindir / "pg_ctl").touch()
    seen: list[str] = []

    def fake_glob(pattern: str) -> list[str]:
        seen.append(pattern)
        return sorted(str(p) for p in tmp_path.glob("postgresql/*/bin/initdb"))

    monkeypatch.setattr(pg_server.shutil, "which", lambda name: None)
    monkeypatch.setattr(pg_server.glob, "glob", fake_glob)
    assert pg_server.find_bindir() == tmp_path / "postgresql" / "15" / "bin"
    assert seen == ["/usr/lib/postgresql/*/bin/initdb"]
    monkeypatch.setattr(pg_server.glob, "glob", lambda pattern: [])
    assert pg_server.find_bindir() is None
    assert "initdb" in pg_server.SKIP_NO_BINARIES and "apt-get install" in pg_server.SKIP_NO_BINARIES


def test_for_a_superuser_the_statement_check_is_what_stops_dblink(pg_server, monkeypatch) -> None:
    """Why both the check and a SELECT-only role are needed: dblink opens its own connection
    with its own (read-write) transaction, so the engine's READ ONLY transaction does not
    cover it. As the superuser the check refuses it; with the check bypassed the DELETE goes
    through. As ``reader`` dblink needs a password and fails (the hostile corpus)."""
    db = pg_server.database("dblink_demo", "CREATE TABLE t AS SELECT 1 AS a;")
    with psycopg.connect(db["admin"], autocommit=True) as con:
        try:
            con.execute("CREATE EXTENSION IF NOT EXISTS dblink")
        except psycopg.Error as exc:
            pytest.skip(f"the server has no dblink extension: {exc}")
    dsn = f"host=127.0.0.1 port={pg_server.port} dbname=dblink_demo user=qe"
    query = f"SELECT dblink_exec('{dsn}', 'DELETE FROM t')"
    count = "SELECT count(*) FROM t"
    with PostgresEngine(db["admin"]) as engine:
        with pytest.raises(QueryRefused, match=r"dblink_exec\(\)"):
            engine.execute(query)
        assert engine.execute(count).rows == [(1,)]
        monkeypatch.setattr(pg_module, "check_postgres", lambda sql: None)
        assert engine.execute(query).rows == [("DELETE 1",)]
        assert engine.execute(count).rows == [(0,)]
