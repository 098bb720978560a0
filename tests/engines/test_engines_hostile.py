"""A hostile corpus: every query is refused or stopped with a reason, the data files keep
their sha256, no file appears, and the engine still answers a normal query afterwards.
The SQL corpus runs on sqlite, DuckDB and a real PostgreSQL server (``pg_server`` in
conftest.py); for PostgreSQL "unchanged" is :func:`pg_state` (row checksums of every table,
relations, roles, large objects, sequences, locks, settings, files)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.server
import itertools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from queryeval.engines.query import (
    DuckDBEngine,
    LocalSparqlEngine,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    RemoteSparqlEngine,
    SqliteEngine,
)
from queryeval.engines.query import postgres as pg_module
from queryeval.engines.query import sql as sql_module
from queryeval.engines.query.postgres import PostgresEngine


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every file under ``root`` (except under ``skip``) with its sha256."""
    out = {}
    for p in sorted(root.rglob("*")):
        if skip is not None and (p == skip or skip in p.parents):
            continue
        if p.is_file():
            out[str(p.relative_to(root))] = sha256(p)
    return out


# ================================================================================ SPARQL

TTL = """@prefix ex: <http://example.org/> .
ex:a ex:p ex:b . ex:b ex:p ex:c . ex:c ex:p ex:d . ex:d ex:p ex:e . ex:e ex:p ex:f .
ex:f ex:p ex:g . ex:g ex:p ex:h . ex:h ex:p ex:i . ex:i ex:p ex:j . ex:j ex:p ex:a .
"""
N = 10
CROSS10 = " ".join(f"?s{i} ?p{i} ?o{i} ." for i in range(10))


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def _answer(self) -> None:
        type(self).hits.append(self.path)
        body = b'{"head":{"vars":[]},"results":{"bindings":[{}]}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def evil_endpoint() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every request (a SERVICE must never reach it)."""
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sparql", _Recorder.hits
    finally:
        server.shutdown()
        server.server_close()


def sparql_corpus(evil: str) -> list[str]:
    g = "<http://example.org/g>"
    return [
        # every SPARQL Update form
        "INSERT DATA { <http://x/s> <http://x/p> <http://x/o> }",
        "DELETE DATA { <http://example.org/a> <http://example.org/p> <http://example.org/b> }",
        "DELETE WHERE { ?s ?p ?o }",
        "PREFIX ex: <http://example.org/> DELETE { ?s ?p ?o } INSERT { ?s ex:q ?o } WHERE { ?s ?p ?o }",
        f"WITH {g} DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}",
        "INSERT { ?s ?p ?o } USING <http://example.org/g> WHERE { ?s ?p ?o }",
        f"LOAD <{evil}>",
        f"LOAD SILENT <{evil}> INTO GRAPH {g}",
        "CLEAR ALL", "CLEAR DEFAULT", f"CLEAR GRAPH {g}",
        "DROP ALL", f"DROP SILENT GRAPH {g}",
        f"CREATE GRAPH {g}",
        f"ADD DEFAULT TO {g}", f"MOVE DEFAULT TO {g}", f"COPY DEFAULT TO {g}",
        "insert data { <http://x/s> <http://x/p> 'lower case' }",
        "# a comment first\nPREFIX ex: <http://example.org/>\nDeLeTe WHERE { ?s ?p ?o }",
        "SELECT * WHERE { ?s ?p ?o } ; DROP ALL",
        # SERVICE to another host, in every disguise
        f"SELECT * WHERE {{ SERVICE <{evil}> {{ ?s ?p ?o }} }}",
        f"select * where {{ service <{evil}> {{ ?s ?p ?o }} }}",
        f"ASK {{ SeRvIcE SILENT <{evil}> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ SERVICE # hidden?\n <{evil}> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ ?x ?y ?z . SERVICE<{evil}>{{?s ?p ?o}} }}",
        f"SELECT * WHERE {{ \\u0053ERVICE <{evil}> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ BIND(<{evil}> AS ?e) SERVICE ?e {{ ?s ?p ?o }} }}",
        # datasets outside the store
        f"SELECT * FROM <{evil}> WHERE {{ ?s ?p ?o }}",
        "SELECT * FROM NAMED <file:///etc/passwd> WHERE { GRAPH ?g { ?s ?p ?o } }",
        "PREFIX web: <http://127.0.0.1/> SELECT * FROM web:data WHERE { ?s ?p ?o }",
        # not a query at all
        "", "   # only a comment",
    ]


@pytest.fixture(scope="module")
def sparql_setup(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("hostile_sparql")
    src = root / "g.ttl"
    src.write_text(TTL, encoding="utf-8")
    store = root / "store"
    with LocalSparqlEngine(src, store_dir=store) as eng:
        yield root, src, store, eng


def _assert_sparql_intact(eng: LocalSparqlEngine) -> None:
    r = eng.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", timeout_s=30)
    assert r.rows[0][0]["value"] == str(N)


def test_sparql_hostile_corpus_is_refused_before_execution(sparql_setup, evil_endpoint) -> None:
    root, src, store, eng = sparql_setup
    url, hits = evil_endpoint
    _assert_sparql_intact(eng)
    before = snapshot(root, skip=store)
    starts = eng.worker.starts
    for query in sparql_corpus(url):
        # refused; or, for text that is neither a query nor an update in either parser
        # (the stacked "; DROP ALL"), a syntax error -- never run
        with pytest.raises((QueryRefused, QueryFailed)) as err:
            eng.execute(query)
        assert err.value.reason, query
        assert isinstance(err.value, QueryRefused) or err.value.syntax_error, query
        assert snapshot(root, skip=store) == before, query
        _assert_sparql_intact(eng)
    assert hits == []  # no SERVICE / LOAD / FROM request ever left
    assert eng.worker.starts == starts  # refusals never reached (or crashed) the worker


def test_sparql_literals_and_comments_mentioning_keywords_still_run(sparql_setup) -> None:
    _, _, _, eng = sparql_setup
    r = eng.execute('SELECT ?s WHERE { ?s ?p ?o FILTER(?o != "SERVICE DROP ALL") } # INSERT DATA',
                    max_rows=100)
    assert r.row_count == N


def test_sparql_huge_cross_join_hits_the_row_limit(sparql_setup) -> None:
    _, _, _, eng = sparql_setup
    r = eng.execute(f"SELECT * WHERE {{ {CROSS10} }}", max_rows=1000, timeout_s=30)
    assert r.row_count == 1000 and r.truncated and len(r.columns) == 30
    _assert_sparql_intact(eng)


def test_sparql_huge_cross_join_aggregate_times_out(sparql_setup) -> None:
    root, _, store, eng = sparql_setup
    before = snapshot(root, skip=store)
    for query in (f"SELECT (COUNT(*) AS ?n) WHERE {{ {CROSS10} }}",
                  f"SELECT * WHERE {{ {CROSS10} }} ORDER BY DESC(?s0)",
                  # a filter over every pattern's variable cannot be pushed down
                  f"ASK {{ {CROSS10} FILTER(CONCAT({', '.join(f'STR(?o{i})' for i in range(10))}) = 'x') }}"):
        with pytest.raises(QueryTimeout):
            eng.execute(query, timeout_s=0.5)
        assert snapshot(root, skip=store) == before
        _assert_sparql_intact(eng)


def test_remote_hostile_corpus_never_sends_a_request(evil_endpoint) -> None:
    url, hits = evil_endpoint
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"head": {"vars": []}, "results": {"bindings": []}})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    with RemoteSparqlEngine("http://endpoint.test/sparql", client=client) as remote:
        for query in sparql_corpus(url):
            with pytest.raises((QueryRefused, QueryFailed)) as err:  # as for the embedded one
                remote.execute(query)
            assert isinstance(err.value, QueryRefused) or err.value.syntax_error, query
        assert sent == []
        remote.execute("SELECT * WHERE { ?s ?p ?o }")
        assert len(sent) == 1
    assert hits == []


# =================================================================================== SQL

def _make_sqlite(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE people (id INTEGER, name TEXT)")
    con.executemany("INSERT INTO people VALUES (?, ?)", [(i, f"p{i}") for i in range(50)])
    con.commit()
    con.close()


def _make_duckdb(path: Path) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people AS SELECT range::INTEGER AS id, 'p' || range AS name FROM range(50)")
    con.close()


# The PostgreSQL database: the same table, plus what the PostgreSQL forms aim at: a sequence
# the reader may use (so nextval is stopped by the read-only transaction, not by a missing
# privilege), a large object, a SQL function that writes (the statement check cannot see
# inside it) and dblink where the server has it.
PG_SETUP = """
CREATE TABLE people AS SELECT g::integer AS id, 'p' || g AS name FROM generate_series(0, 49) g;
CREATE SEQUENCE seq;
SELECT lo_from_bytea(4242, 'secret');
CREATE FUNCTION bump() RETURNS integer LANGUAGE sql
    AS $$ INSERT INTO people VALUES (99, 'evil') RETURNING 1 $$;
GRANT SELECT ON people TO reader;
GRANT USAGE, SELECT ON SEQUENCE seq TO reader;
GRANT EXECUTE ON FUNCTION bump() TO reader;
"""
_PG_DATABASES = itertools.count()

def sql_corpus(tmp: Path, dialect: str, dsn: str = "") -> list[tuple[str, Any]]:
    """(query, expected error) for ``dialect``; ``tmp`` is a folder the database engine could
    write to (for PostgreSQL: the server's own folder, owned by the server's user), so a write
    that got through would show up there. ``dsn``: PostgreSQL's superuser connection string
    (what dblink would use)."""
    common: list[tuple[str, Any]] = [
        ("INSERT INTO people VALUES (99, 'evil')", QueryRefused),
        ("UPDATE people SET name = 'evil'", QueryRefused),
        ("DELETE FROM people", QueryRefused),
        ("DROP TABLE people", QueryRefused),
        ("SELECT 1; DROP TABLE people", QueryRefused),
        ("SELECT * FROM people;\nDELETE FROM people", QueryRefused),
        (f"ATTACH DATABASE '{tmp / 'evil.db'}' AS evil", QueryRefused),
        ("PRAGMA journal_mode = WAL", QueryRefused),
        ("PRAGMA user_version = 7", QueryRefused),
        ("CREATE TEMP TABLE t AS SELECT * FROM people", QueryRefused),
        ("CREATE TABLE t (a INT)", QueryRefused),
        ("CREATE VIEW v AS SELECT 1", QueryRefused),
        ("ALTER TABLE people ADD COLUMN x INT", QueryRefused),
        (f"VACUUM INTO '{tmp / 'copy.db'}'", QueryRefused),
        ("BEGIN; DELETE FROM people; COMMIT", QueryRefused),
        ("SELECT count(*) FROM people a, people b, people c, people d, people e, people f",
         QueryTimeout),
    ]
    if dialect == "sqlite":
        return common + [
            ("SELECT load_extension('/tmp/evil.so')", QueryRefused),
            ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
             "SELECT count(*) FROM c", QueryTimeout),
        ]
    if dialect == "postgres":
        return common + pg_corpus(tmp, dsn)
    return common + [
        (f"COPY people TO '{tmp / 'out.csv'}'", QueryRefused),
        (f"COPY (SELECT * FROM people) TO '{tmp / 'out.parquet'}' (FORMAT parquet)", QueryRefused),
        ("SELECT * FROM read_csv('/etc/passwd')", QueryRefused),
        ("SELECT * FROM read_csv_auto('/etc/passwd')", QueryRefused),
        ("SELECT * FROM '/etc/passwd'", QueryRefused),
        ("SELECT * FROM glob('/etc/*')", QueryRefused),
        ("SELECT * FROM read_text('/etc/passwd')", QueryRefused),
        ("INSTALL httpfs", QueryRefused),
        ("LOAD httpfs", QueryRefused),
        ("SET enable_external_access = true", QueryRefused),
        ("CALL pragma_database_size()", QueryRefused),
        (f"EXPORT DATABASE '{tmp / 'export'}'", QueryRefused),
        ("SELECT * FROM query('CREATE TABLE z AS SELECT 1')", QueryRefused),
    ]


def pg_corpus(tmp: Path, dsn: str) -> list[tuple[str, Any]]:
    """The PostgreSQL forms: server-side files and programs, large objects, other servers,
    roles and settings, transaction modes, writes in CTEs, row locks, functions with side
    effects (some of which survive ROLLBACK), SQL text run by functions, Unicode-escaped
    names, and a query beyond the deadline."""
    pwned = tmp / "pwned"
    lock = "pg_advisory_lock(42)"
    return [
        (f"COPY (SELECT 1) TO PROGRAM 'touch {pwned}'", QueryRefused),
        (f"COPY people TO '{tmp / 'out.csv'}'", QueryRefused),
        ("COPY people FROM PROGRAM 'echo 99,evil'", QueryRefused),
        ("SELECT lo_import('/etc/passwd')", QueryRefused),
        (f"SELECT lo_export(4242, '{pwned}')", QueryRefused),
        ("SELECT lo_unlink(4242)", QueryRefused),
        ("SELECT lo_put(4242, 0, 'x')", QueryRefused),
        ("SELECT lo_from_bytea(0, 'x')", QueryRefused),
        ("SELECT pg_read_file('/etc/passwd')", QueryRefused),
        ("SELECT pg_catalog.pg_read_file('/etc/passwd')", QueryRefused),
        ("SELECT pg_read_binary_file('/etc/passwd')", QueryRefused),
        ("SELECT * FROM pg_ls_dir('.')", QueryRefused),
        (f"SELECT * FROM dblink('{dsn}', 'SELECT 1') AS t(a int)", QueryRefused),
        (f"SELECT dblink_exec('{dsn}', 'DELETE FROM people')", QueryRefused),
        ("SET ROLE qe", QueryRefused),
        ("SET SESSION AUTHORIZATION qe", QueryRefused),
        ("RESET ROLE", QueryRefused),
        ("SELECT 1; SELECT 2", QueryRefused),
        ("SET TRANSACTION READ WRITE", QueryRefused),
        ("SET TRANSACTION READ WRITE; DELETE FROM people", QueryRefused),
        ("START TRANSACTION READ WRITE; DELETE FROM people; COMMIT", QueryRefused),
        ("SELECT set_config('transaction_read_only', 'off', true)", QueryRefused),
        ("SELECT set_config('statement_timeout', '0', false)", QueryRefused),
        ("SELECT pg_catalog.set_config('default_transaction_read_only', 'off', false)",
         QueryRefused),
        ("WITH d AS (DELETE FROM people RETURNING *) SELECT count(*) FROM d", QueryRefused),
        ("WITH u AS (UPDATE people SET name = 'evil' RETURNING 1) SELECT * FROM u", QueryRefused),
        ("WITH i AS (INSERT INTO people VALUES (99, 'evil') RETURNING 1) SELECT * FROM i",
         QueryRefused),
        ("SELECT * INTO evil FROM people", QueryRefused),
        ("SELECT * FROM people FOR UPDATE", QueryRefused),
        ("SELECT * FROM people FOR KEY SHARE SKIP LOCKED", QueryRefused),
        ("TRUNCATE people", QueryRefused),
        ("LOCK TABLE people IN ACCESS EXCLUSIVE MODE", QueryRefused),
        ("DO $$ BEGIN DELETE FROM people; END $$", QueryRefused),
        ("PREPARE p AS DELETE FROM people", QueryRefused),
        ("LISTEN chan", QueryRefused),
        ("NOTIFY chan", QueryRefused),
        ("CREATE EXTENSION adminpack", QueryRefused),
        ("ALTER SYSTEM SET statement_timeout = 0", QueryRefused),
        ("VACUUM FULL people", QueryRefused),
        ("SELECT nextval('seq')", QueryRefused),
        ("SELECT setval('seq', 99)", QueryRefused),
        (f"SELECT {lock}", QueryRefused),
        (f"SELECT * FROM generate_series(1, 3) g, LATERAL (SELECT {lock}) x", QueryRefused),
        ("SELECT pg_notify('chan', 'x')", QueryRefused),
        ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", QueryRefused),
        ("SELECT pg_stat_reset()", QueryRefused),
        ("SELECT query_to_xml('DELETE FROM people RETURNING 1', true, true, '')", QueryRefused),
        # SQL text run by a function: the statement check cannot see inside the string
        (f"SELECT * FROM ts_stat('SELECT to_tsvector({lock}::text)')", QueryRefused),
        (f"SELECT ts_rewrite('a'::tsquery, 'SELECT {lock}::text::tsquery, ''b''::tsquery')",
         QueryRefused),
        # a Unicode-escaped name: PostgreSQL reads pg_advisory_lock, sqlglot a bitwise AND
        ('SELECT U&"pg_advisory\\005flock"(42)', QueryRefused),
        # passes the statement check; the read-only transaction stops the INSERT inside
        ("SELECT bump()", QueryRefused),
        ("SELECT pg_sleep(10)", QueryRefused),
        # beyond the deadline: the server's statement_timeout stops it
        ("SELECT count(*) FROM generate_series(1, 10000000000)", QueryTimeout),
        ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
         "SELECT count(*) FROM c", QueryTimeout),
        # allowed, and they change nothing (the transaction id is rolled back)
        ("SELECT txid_current() > 0", None),
        ("SELECT current_setting('statement_timeout')", None),
    ]


@dataclasses.dataclass
class SqlSetup:
    dialect: str
    engine: Any
    state: Callable[[], object]  # everything that must not change
    corpus: list[tuple[str, Any]]


def _file_state(tmp: Path, db: Path) -> Callable[[], object]:
    return lambda: (sha256(db), snapshot(tmp))


def pg_state(admin_url: str, server_root: Path) -> dict[str, object]:
    """What a query must not change on the PostgreSQL server: a checksum of every user
    table's rows, the relations, functions, roles, large objects (with their bytes),
    sequence values, advisory locks held by anyone, per-database/role settings, the
    statistics reset time, the databases, and the files beside the data directory."""
    import psycopg

    out: dict[str, object] = {}
    with psycopg.connect(admin_url, autocommit=True) as con:
        q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
        tables = q("SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) "
                   "FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') "
                   "ORDER BY 1")
        for (table,) in tables:
            out[f"rows {table}"] = q(f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' "
                                     f"ORDER BY t::text), '')) FROM {table} t")
        out["relations"] = q("SELECT n.nspname, c.relname, c.relkind FROM pg_class c "
                             "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname "
                             "NOT IN ('pg_catalog', 'information_schema', 'pg_toast') "
                             "ORDER BY 1, 2")
        out["functions"] = q("SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n "
                             "ON n.oid = p.pronamespace WHERE n.nspname = 'public' ORDER BY 1")
        out["roles"] = q("SELECT rolname, rolsuper, rolcanlogin, rolcreaterole, rolcreatedb "
                         "FROM pg_roles ORDER BY 1")
        out["large objects"] = q("SELECT loid, md5(string_agg(data, '' ORDER BY pageno)) "
                                 "FROM pg_largeobject GROUP BY loid ORDER BY 1")
        out["sequences"] = q("SELECT schemaname, sequencename, last_value FROM pg_sequences "
                             "ORDER BY 1, 2")
        out["advisory locks"] = q("SELECT classid, objid, pid FROM pg_locks "
                                  "WHERE locktype = 'advisory' ORDER BY 1, 2")
        out["settings"] = q("SELECT setdatabase, setrole, setconfig FROM pg_db_role_setting "
                            "ORDER BY 1, 2")
        out["stats reset"] = q("SELECT stats_reset FROM pg_stat_database "
                               "WHERE datname = current_database()")
        out["databases"] = q("SELECT datname FROM pg_database ORDER BY 1")
    out["files"] = sorted(p.name for p in server_root.iterdir() if p.name not in ("data", "log"))
    return out


@pytest.fixture(params=["sqlite", "duckdb", "postgres"])
def sql_setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlSetup]:
    """The engine on a fresh database. PostgreSQL: a new database on this process's server
    (``pg_server``), the engine logged in as the *superuser*, so nothing but the engine's own
    guards stands between a query and the data."""
    dialect = request.param
    if dialect == "postgres":
        server = request.getfixturevalue("pg_server")
        db = server.database(f"hostile_{next(_PG_DATABASES)}", PG_SETUP)
        with psycopg_connect(db["admin"]) as con:  # where the server has it (Debian: yes)
            with contextlib.suppress(Exception):
                con.execute("CREATE EXTENSION IF NOT EXISTS dblink")
        dsn = f"host=127.0.0.1 port={server.port} dbname={db['name']} user=qe"
        with PostgresEngine(db["admin"]) as eng:
            yield SqlSetup(dialect, eng,
                           lambda: pg_state(db["admin"], server.root),
                           sql_corpus(server.root, dialect, dsn))
        return
    db = tmp_path / ("data.sqlite" if dialect == "sqlite" else "data.duckdb")
    (_make_sqlite if dialect == "sqlite" else _make_duckdb)(db)
    engine = SqliteEngine(db) if dialect == "sqlite" else DuckDBEngine(db)
    with engine as eng:
        yield SqlSetup(dialect, eng, _file_state(tmp_path, db),
                       sql_corpus(tmp_path, dialect))


def psycopg_connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _assert_sql_intact(eng) -> None:
    assert eng.execute("SELECT count(*), min(name), max(id) FROM people").rows == [(50, "p0", 49)]


def test_sql_hostile_corpus(sql_setup: SqlSetup) -> None:
    s = sql_setup
    before = s.state()
    for query, expected in s.corpus:
        if expected is None:
            s.engine.execute(query, timeout_s=0.5)
        else:
            with pytest.raises(expected) as err:
                s.engine.execute(query, timeout_s=0.5)
            assert err.value.reason, query
        assert s.state() == before, query
        _assert_sql_intact(s.engine)


def test_sql_huge_cross_join_stops_at_the_row_limit(sql_setup: SqlSetup) -> None:
    eng = sql_setup.engine
    r = eng.execute("SELECT * FROM people a, people b, people c, people d, people e",
                    max_rows=500, timeout_s=10)
    assert r.row_count == 500 and r.truncated
    _assert_sql_intact(eng)


def test_connection_guards_hold_even_if_the_statement_check_is_bypassed(
        sql_setup: SqlSetup, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: with sqlglot's check disabled, the read-only connection, sqlite's
    authorizer and attach limit, and DuckDB's disabled external access still stop every
    write, and no file is created or changed. (DuckDB can still make an in-memory TEMP
    table, which touches no file, and CALL a read-only pragma; the sqlglot layer refuses
    both.)

    PostgreSQL: the guards are the READ ONLY transaction that is always rolled back, the
    server-side cursor (``DECLARE … CURSOR FOR`` takes exactly one SELECT/VALUES, so COPY,
    SET, DO, stacked statements … are syntax errors), ``statement_timeout``, the release of
    advisory locks after every query (a session-level lock survives ROLLBACK), and the login
    role: this part runs as ``reader`` (SELECT only), the setup docs/execution.md asks for.
    A superuser with the check bypassed could still *read* server files (pg_read_file) and
    reset statistics; the check refuses both, and the corpus runs as the superuser."""
    s = sql_setup
    if s.dialect == "postgres":
        monkeypatch.setattr(pg_module, "check_postgres", lambda sql: None)
        url = s.engine.url.replace("postgresql://qe@", "postgresql://reader@")
        engine = PostgresEngine(url)
    else:
        monkeypatch.setattr(sql_module, "check_sql", lambda sql, dialect: None)
        engine = s.engine
    before = s.state()
    # reads (CALL of a pragma) and in-memory TEMP tables touch no file in DuckDB
    allowed_through = {
        "duckdb": {"CREATE TEMP TABLE t AS SELECT * FROM people", "CALL pragma_database_size()"},
        # they run; the advisory locks are released and the rest is rolled back
        "postgres": {q for q, _ in s.corpus if "pg_advisory" in q} | {
            "SELECT pg_notify('chan', 'x')", "SELECT lo_from_bytea(0, 'x')",
            "SELECT set_config('statement_timeout', '0', false)",
            "SELECT pg_catalog.set_config('default_transaction_read_only', 'off', false)"},
    }.get(s.dialect, set())
    with engine:
        for query, expected in s.corpus:
            if expected is None or query in allowed_through:
                engine.execute(query, timeout_s=0.5)
            else:
                with pytest.raises((QueryRefused, QueryFailed, QueryTimeout)):
                    engine.execute(query, timeout_s=0.5)
            assert s.state() == before, query
        _assert_sql_intact(engine)
