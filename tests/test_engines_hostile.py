"""A hostile corpus: every query is refused or stopped with a reason, the data files keep
their sha256, no file appears, and the engine still answers a normal query afterwards."""

from __future__ import annotations

import hashlib
import http.server
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from queryeval.systems.engines import (
    DuckDBEngine,
    LocalSparqlEngine,
    QueryExecutionError,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    RemoteSparqlEngine,
    SqliteEngine,
)
from queryeval.systems.engines import sql as sql_module


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
        with pytest.raises(QueryRefused) as err:
            eng.execute(query)
        assert err.value.reason, query
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
            with pytest.raises(QueryRefused):
                remote.execute(query)
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


def sql_corpus(tmp: Path, dialect: str) -> list[tuple[str, type[QueryExecutionError]]]:
    common: list[tuple[str, type[QueryExecutionError]]] = [
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


def _sql_engine(dialect: str, path: Path):
    return SqliteEngine(path) if dialect == "sqlite" else DuckDBEngine(path)


@pytest.fixture(params=["sqlite", "duckdb"])
def sql_setup(request: pytest.FixtureRequest, tmp_path: Path):
    dialect = request.param
    db = tmp_path / ("data.sqlite" if dialect == "sqlite" else "data.duckdb")
    (_make_sqlite if dialect == "sqlite" else _make_duckdb)(db)
    with _sql_engine(dialect, db) as eng:
        yield dialect, tmp_path, db, eng


def _assert_sql_intact(eng) -> None:
    assert eng.execute("SELECT count(*), min(name), max(id) FROM people").rows == [(50, "p0", 49)]


def test_sql_hostile_corpus(sql_setup) -> None:
    dialect, tmp, db, eng = sql_setup
    before = snapshot(tmp)
    digest = sha256(db)
    for query, expected in sql_corpus(tmp, dialect):
        with pytest.raises(expected) as err:
            eng.execute(query, timeout_s=0.5)
        assert err.value.reason, query
        assert sha256(db) == digest, query
        assert snapshot(tmp) == before, query
        _assert_sql_intact(eng)


def test_sql_huge_cross_join_stops_at_the_row_limit(sql_setup) -> None:
    _, _, _, eng = sql_setup
    r = eng.execute("SELECT * FROM people a, people b, people c, people d, people e",
                    max_rows=500, timeout_s=10)
    assert r.row_count == 500 and r.truncated
    _assert_sql_intact(eng)


def test_connection_guards_hold_even_if_the_statement_check_is_bypassed(
        sql_setup, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: with sqlglot's check disabled, the read-only connection, sqlite's
    authorizer and attach limit, and DuckDB's disabled external access still stop every
    write, and no file is created or changed. (DuckDB can still make an in-memory TEMP
    table, which touches no file, and CALL a read-only pragma; the sqlglot layer refuses
    both.)"""
    dialect, tmp, db, eng = sql_setup
    monkeypatch.setattr(sql_module, "check_sql", lambda sql, dialect: None)
    before = snapshot(tmp)
    digest = sha256(db)
    # reads (CALL of a pragma) and in-memory TEMP tables touch no file in DuckDB
    allowed_through = ({"CREATE TEMP TABLE t AS SELECT * FROM people", "CALL pragma_database_size()"}
                       if dialect == "duckdb" else set())
    for query, _ in sql_corpus(tmp, dialect):
        if query in allowed_through:
            eng.execute(query)
        else:
            with pytest.raises((QueryRefused, QueryFailed, QueryTimeout)):
                eng.execute(query, timeout_s=0.5)
        assert sha256(db) == digest, query
        assert snapshot(tmp) == before, query
    _assert_sql_intact(eng)
