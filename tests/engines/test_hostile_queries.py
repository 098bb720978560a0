"""Hostile generated queries: SERVICE / FROM in every spelling the engine's grammar accepts,
deadlines that hold on every execution path, a store whose build was interrupted, and
read-only table-valued functions that must still run.

Each SPARQL case binds a prefix to a loopback listener that answers with the "gold" row; the
listener must receive zero requests, through the engine API and through ``queryeval run``.
"""

from __future__ import annotations

import json
import resource
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.hostile_queries import Listener  # noqa: E402,F401
from queryeval.cli.app import main
from queryeval.engines.query import (
    LocalSparqlEngine,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    RemoteSparqlEngine,
)
from queryeval.engines.query.sparql_safety import MAX_QUERY_CHARS

TTL = """@prefix ex: <http://example.org/> .
ex:a ex:p ex:b . ex:b ex:p ex:c .
"""


@pytest.fixture()
def listener() -> Iterator[Listener]:
    srv = Listener()
    try:
        yield srv
    finally:
        srv.close()


def hostile_corpus(url: str) -> list[str]:
    """Keyword-glued, case-mixed, comment-separated and nested SERVICE / FROM forms, all
    with prefixes bound to ``url``. Every one parses in pyoxigraph (checked below)."""
    pre = f"PREFIX : <{url}#> PREFIX ep: <{url}#> "
    body = "{ ?x ?p ?o }"
    svc = [f"SERVICE:x {body}", f"SERVICEep:x {body}", f"sErViCe:x {body}",
           f"SERVICE\t:x {body}", f"SERVICE#c\n<{url}> {body}", f"SERVICE#c\n:x {body}",
           f"SERVICE SILENT:x {body}", f"SERVICESILENT:x {body}", f"service\tep:x{body}"]
    out = []
    for s in svc:
        out.append(f"{pre}SELECT * {{ {s} }}")
    for s in svc[:3]:
        out += [
            f"{pre}SELECT * {{ ?a ?b ?c FILTER EXISTS {{ {s} }} }}",
            f"{pre}SELECT * {{ OPTIONAL {{ {s} }} }}",
            f"{pre}SELECT * {{ {{ }} MINUS {{ {s} }} }}",
            f"{pre}SELECT * {{ {{ SELECT * {{ {s} }} }} }}",
            f"{pre}SELECT * {{ {{ ?a ?b ?c }} UNION {{ {s} }} }}",
            f"{pre}ASK {{ {s} }}",
            f"{pre}CONSTRUCT {{ ?x ?p ?o }} {{ {s} }}",
            f"{pre}SELECT * {{ ?a ?b true{s} }}",
        ]
    out += [
        f"{pre}SELECT * FROM:g {{ ?s ?p ?o }}",
        f"{pre}SELECT * FROMep:g {{ ?s ?p ?o }}",
        f"{pre}SELECT * FROM NAMED:g {{ GRAPH ?g {{ ?s ?p ?o }} }}",
        f"{pre}SELECT * FROMNAMED:g {{ ?s ?p ?o }}",
        f"{pre}SELECT * fRoM#c\n:g {{ ?s ?p ?o }}",
        f"{pre}ASK FROM:g {{ ?s ?p ?o }}",
        f"{pre}DESCRIBE ?s FROM:g WHERE {{ ?s ?p ?o }}",
    ]
    return out


BENIGN = [
    # "service" / "from" as names, strings, IRIs and comments are not keywords
    'PREFIX service: <http://example.org/> PREFIX fromage: <http://example.org/> '
    'SELECT ?service ?from WHERE { ?service service:p ?from . '
    'FILTER(?from != "SERVICE <http://x/> FROM") } # SERVICE FROM',
    "SELECT ?s WHERE { ?s <http://example.org/Service/from> ?o }",
]


def test_every_hostile_form_is_a_real_service_or_dataset_for_pyoxigraph() -> None:
    """The corpus is meaningful: raw pyoxigraph parses each query and sends requests for
    the SERVICE forms it evaluates -- so each one really is a SERVICE / FROM for the engine."""
    import pyoxigraph as ox

    victim = Listener()
    try:
        for q in hostile_corpus(victim.url):
            result = ox.Store().query(q)  # parses (an ASK is evaluated right here)
            if not isinstance(result, ox.QueryBoolean):
                list(result)
        assert len(victim.hits) >= 9  # the unprotected engine does reach the listener
    finally:
        victim.close()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSparqlEngine]:
    root = tmp_path_factory.mktemp("hostile_queries")
    (root / "g.ttl").write_text(TTL, encoding="utf-8")
    with LocalSparqlEngine(root / "g.ttl", store_dir=root / "store") as eng:
        yield eng


def test_embedded_engine_refuses_the_corpus_and_sends_nothing(engine, listener) -> None:
    for q in hostile_corpus(listener.url):
        with pytest.raises(QueryRefused) as err:
            engine.execute(q, timeout_s=10)
        assert err.value.reason, q
    assert listener.hits == []
    assert engine.execute(BENIGN[0], timeout_s=10).row_count == 2
    assert engine.execute(BENIGN[1], timeout_s=10).row_count == 0


def test_embedded_engine_still_reports_plain_syntax_errors(engine) -> None:
    with pytest.raises(QueryFailed) as err:
        engine.execute("SELECT * WHERE { ?s ?p }", timeout_s=10)
    assert err.value.syntax_error


def test_remote_engine_forwards_benign_queries_and_never_hostile_ones(listener) -> None:
    endpoint = Listener()  # the endpoint under evaluation: counts what it is sent
    try:
        with RemoteSparqlEngine(endpoint.url) as remote:
            for q in hostile_corpus(listener.url):
                with pytest.raises(QueryRefused):
                    remote.execute(q, timeout_s=10)
            assert endpoint.hits == []
            for q in BENIGN:
                assert remote.execute(q, timeout_s=10).rows[0][0]["value"] == "gold"
            assert len(endpoint.hits) == len(BENIGN)
    finally:
        endpoint.close()
    assert listener.hits == []


def _cli_suite(tmp_path: Path, queries: list[str], source: str | None) -> tuple[Path, Path]:
    docs, preds = [], []
    for i, q in enumerate(queries):
        target = {"gold": "SELECT ?s WHERE { ?s ?p ?o }"}
        if source:
            target["source"] = source
        docs.append(json.dumps({"id": f"c{i}", "conversation": [
            {"role": "user", "content": "q", "target": {"query": target}}]}))
        preds.append(json.dumps({"case_id": f"c{i}", "query": q}))
    suite = tmp_path / "suite.yaml"
    suite.write_text("---\n".join(d + "\n" for d in docs), encoding="utf-8")
    responses = tmp_path / "predictions.jsonl"
    responses.write_text("\n".join(preds) + "\n", encoding="utf-8")
    return suite, responses


def _statuses(out: Path) -> dict[str, str]:
    (results,) = out.rglob("results_*.jsonl")
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    return {r["case_id"]: r["predicted_execution"]["status"] for r in rows}


@pytest.mark.slow
def test_cli_run_on_a_graph_refuses_the_corpus(tmp_path: Path, listener, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.ttl").write_text(TTL, encoding="utf-8")
    corpus = hostile_corpus(listener.url)
    suite, responses = _cli_suite(tmp_path, corpus + BENIGN[:1], "g.ttl")
    out = tmp_path / "out"
    assert main(["run", str(suite), "--responses", str(responses), "--out", str(out),
                 "-q", "--no-report"]) == 0
    statuses = _statuses(out)
    assert [statuses[f"c{i}"] for i in range(len(corpus))] == ["refused"] * len(corpus)
    assert statuses[f"c{len(corpus)}"] == "ok"
    assert listener.hits == []


@pytest.mark.slow
def test_cli_run_on_an_endpoint_forwards_nothing_hostile(tmp_path: Path, listener,
                                                         monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    endpoint = Listener()
    try:
        corpus = hostile_corpus(listener.url)
        suite, responses = _cli_suite(tmp_path, corpus, None)
        out = tmp_path / "out"
        assert main(["run", str(suite), "--responses", str(responses), "--out", str(out),
                     "--endpoint", endpoint.url, "-q", "--no-report"]) == 0
        statuses = _statuses(out)
        assert sorted(set(statuses.values())) == ["refused"]
        # only the gold query (one distinct text, cached) reached the endpoint
        assert len(endpoint.hits) == 1 and "SELECT" in endpoint.hits[0]
    finally:
        endpoint.close()
    assert listener.hits == []


# ============================================================================ deadlines


def test_query_length_is_capped_before_any_work(engine) -> None:
    q = "SELECT * WHERE { ?s ?p ?o } #" + "x" * MAX_QUERY_CHARS
    start = time.monotonic()
    with pytest.raises(QueryRefused, match="characters long"):
        engine.execute(q, timeout_s=10)
    assert time.monotonic() - start < 1.0


def test_remote_deadline_holds_against_a_server_dripping_its_headers() -> None:
    stop = threading.Event()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)

    def drip() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.is_set():
                try:
                    conn.sendall(b"X-Drip: 1\r\n")
                except OSError:
                    break
                stop.wait(0.2)
            conn.close()

    threading.Thread(target=drip, daemon=True).start()
    try:
        with RemoteSparqlEngine(f"http://127.0.0.1:{srv.getsockname()[1]}/sparql") as remote:
            start = time.monotonic()
            with pytest.raises(QueryTimeout):
                remote.execute("SELECT * WHERE { ?s ?p ?o }", timeout_s=1.5)
            assert time.monotonic() - start < 1.5 + 2.0
    finally:
        stop.set()
        srv.close()


# ======================================================== an interrupted store build

KILL_SCRIPT = """
import os, signal, sys
from queryeval.engines.query import sparql_store
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
setattr(sparql_store, sys.argv[1], die)
sparql_store.prepare_store([sys.argv[2]], sys.argv[3])
"""


@pytest.mark.parametrize("where", ["read_prefixes", "_write_marker"])
def test_a_build_killed_midway_leaves_no_dead_end(tmp_path: Path, where: str) -> None:
    """kill -9 in the middle of loading (after bulk_load, in read_prefixes) or just before
    the marker: the next engine builds the store and answers."""
    import os
    import subprocess
    import sys

    src = tmp_path / "g.ttl"
    src.write_text(TTL, encoding="utf-8")
    store = tmp_path / "cache" / "store"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, where, str(src), str(store)],
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode == -9
    leftovers = [p.name for p in (tmp_path / "cache").iterdir()]
    assert len(leftovers) == 1 and ".queryeval-partial-" in leftovers[0]  # store_dir untouched
    with LocalSparqlEngine(src, store_dir=store) as eng:
        assert eng.execute("SELECT * WHERE { ?s ?p ?o }", timeout_s=10).row_count == 2
        assert not eng.info.reused
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["store"]  # partial swept


def test_a_half_built_store_folder_is_never_trusted(tmp_path: Path) -> None:
    """What an interrupted load of earlier versions left: RocksDB files, no marker."""
    import pyoxigraph as ox

    src = tmp_path / "g.ttl"
    src.write_text(TTL, encoding="utf-8")
    store = tmp_path / "cache" / "store"
    store.parent.mkdir()
    half = ox.Store(str(store))
    half.add(ox.Quad(ox.NamedNode("http://x/wrong"), ox.NamedNode("http://x/p"),
                     ox.Literal("stale")))
    half.flush()
    del half
    with LocalSparqlEngine(src, store_dir=store) as eng:
        rows = eng.execute("SELECT ?o WHERE { ?s ?p ?o }", timeout_s=10).rows
        assert sorted(r[0]["value"] for r in rows) == ["http://example.org/b",
                                                       "http://example.org/c"]
    names = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert names[0] == "store" and names[1].startswith("store.incomplete-") and len(names) == 2


def test_a_crash_inside_the_loader_cleans_up_and_the_next_run_builds(tmp_path: Path,
                                                                      monkeypatch) -> None:
    from queryeval.engines.query import sparql_store

    src = tmp_path / "g.ttl"
    src.write_text(TTL, encoding="utf-8")
    store = tmp_path / "cache" / "store"

    def boom(path, fmt):
        raise MemoryError("simulated crash while loading")

    monkeypatch.setattr(sparql_store, "read_prefixes", boom)
    with pytest.raises(MemoryError):
        LocalSparqlEngine(src, store_dir=store)
    assert list((tmp_path / "cache").iterdir()) == []
    monkeypatch.undo()
    with LocalSparqlEngine(src, store_dir=store) as eng:
        assert eng.execute("SELECT * WHERE { ?s ?p ?o }", timeout_s=10).row_count == 2


# ==================================================== read-only table-valued functions


@pytest.fixture()
def sqlite_db(tmp_path: Path) -> Path:
    path = tmp_path / "t.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER, j TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "[10, 20]"), (2, '{"a": [30]}')])
    conn.commit()
    conn.close()
    return path


def test_sqlite_json_each_and_json_tree_run(sqlite_db: Path) -> None:
    from queryeval.engines.query import SqliteEngine

    with SqliteEngine(sqlite_db) as eng:
        rows = eng.execute("SELECT t.id, j.value FROM t, json_each(t.j) AS j "
                           "WHERE t.id = 1 ORDER BY j.value").rows
        assert rows == [(1, 10), (1, 20)]
        rows = eng.execute("SELECT key, value FROM json_tree('{\"a\": [1, 2]}') "
                           "WHERE type = 'integer' ORDER BY value").rows
        assert rows == [(0, 1), (1, 2)]
        # a second use on the same connection (sqlite caches the virtual table) still works
        assert eng.execute("SELECT count(*) FROM json_each('[1,2,3]')").rows == [(3,)]


@pytest.mark.parametrize("query", [
    "SELECT * FROM pragma_table_info('t')",
    "SELECT * FROM pragma_table_info",
    "SELECT * FROM json_each('[1]'), pragma_database_list()",
    "UPDATE sqlite_master SET sql = 'x'",
    "ATTACH DATABASE 'x.db' AS x",
    "PRAGMA user_version = 3",
    "SELECT load_extension('x')",
    "INSERT INTO t SELECT 9, value FROM json_each('[1]')",
    "SELECT 1; DELETE FROM t",
])
def test_sqlite_writes_and_pragmas_stay_refused(sqlite_db: Path, query: str) -> None:
    from queryeval.engines.query import SqliteEngine

    before = sqlite_db.read_bytes()
    with SqliteEngine(sqlite_db) as eng:
        with pytest.raises(QueryRefused):
            eng.execute(query)
        assert eng.execute("SELECT count(*) FROM t").rows == [(2,)]
    assert sqlite_db.read_bytes() == before
    assert sorted(p.name for p in sqlite_db.parent.iterdir()) == ["t.sqlite"]


# ====================================================== SQL deadlines and memory caps


def _worker_data_limit(eng) -> int:
    """The running worker's RLIMIT_DATA soft limit, read from /proc (Linux)."""
    text = Path(f"/proc/{eng.worker.pid}/limits").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("Max data size")]
    return int(line.split()[3])


def test_sqlite_deadline_holds_inside_one_uninterruptible_function(sqlite_db: Path) -> None:
    """printf('%.*c', 1e9, 'x') loops inside one C call: neither the progress handler nor
    interrupt() fires; the worker is killed at the deadline and the next query works."""
    from queryeval.engines.query import SqliteEngine

    with SqliteEngine(sqlite_db, memory_limit_bytes=512 * 1024**2) as eng:
        eng.execute("SELECT 1")  # the worker starts outside the deadline
        assert _worker_data_limit(eng) == 512 * 1024**2
        start = time.monotonic()
        with pytest.raises(QueryTimeout):
            eng.execute("SELECT length(printf('%.*c', 1000000000, 'x'))", timeout_s=1.5)
        assert time.monotonic() - start < 1.5 + 2.0
        assert eng.execute("SELECT count(*) FROM t").rows == [(2,)]


@pytest.fixture()
def duckdb_db(tmp_path: Path) -> Path:
    import duckdb

    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT range AS id FROM range(3)")
    con.close()
    return path


def test_duckdb_allocation_past_the_memory_cap_fails_at_once(duckdb_db: Path) -> None:
    """repeat('x', 4e9) ignores DuckDB's memory_limit (measured: 7.7 GB RSS, 86 s); under
    the worker's RLIMIT_DATA it fails in milliseconds and the caller's memory is untouched."""
    from queryeval.engines.query import DuckDBEngine

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with DuckDBEngine(duckdb_db, memory_limit_bytes=1024**3) as eng:
        eng.execute("SELECT 1")
        assert _worker_data_limit(eng) == 1024**3
        start = time.monotonic()
        with pytest.raises(QueryFailed, match="(?i)out of memory"):
            eng.execute("SELECT length(repeat('x', 4000000000))", timeout_s=2)
        assert time.monotonic() - start < 2 + 2.0
        assert eng.execute("SELECT count(*) FROM t").rows == [(3,)]
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200 * 1024  # ru_maxrss is in KiB on Linux


@pytest.mark.slow
def test_duckdb_deadline_holds_inside_one_uninterruptible_function(duckdb_db: Path) -> None:
    """repeat('x', 6e8) fits under the cap but takes seconds in one call that interrupt()
    cannot stop; the worker is killed at the deadline."""
    from queryeval.engines.query import DuckDBEngine

    with DuckDBEngine(duckdb_db, memory_limit_bytes=1536 * 1024**2) as eng:
        eng.execute("SELECT 1")
        start = time.monotonic()
        with pytest.raises(QueryTimeout):
            eng.execute("SELECT length(repeat('x', 600000000)) || repeat('y', 600000000)",
                        timeout_s=1.0)
        assert time.monotonic() - start < 1.0 + 2.0
        assert eng.execute("SELECT count(*) FROM t").rows == [(3,)]


def test_sparql_worker_memory_cap_stops_a_materialising_query(tmp_path: Path) -> None:
    """ORDER BY over a 10^8-row cross join materialises it; under a 256 MiB cap the worker
    dies in well under a second (instead of growing for the whole timeout), the case is a
    failed query, and the next query gets a fresh worker."""
    src = tmp_path / "g.ttl"
    src.write_text("@prefix ex: <http://example.org/> .\n"
                   + "".join(f"ex:s{i} ex:p ex:o{i} .\n" for i in range(10)), encoding="utf-8")
    with LocalSparqlEngine(src, memory_limit_bytes=256 * 1024**2) as eng:
        eng.start()
        assert _worker_data_limit(eng) == 256 * 1024**2
        cross = " ".join(f"?s{i} ?p{i} ?o{i} ." for i in range(8))
        start = time.monotonic()
        with pytest.raises(QueryFailed, match="out of memory"):
            eng.execute(f"SELECT * WHERE {{ {cross} }} ORDER BY ?s0", timeout_s=20)
        assert time.monotonic() - start < 10
        assert eng.execute("SELECT * WHERE { ?s ?p ?o }").row_count == 10


def test_remote_queries_may_use_prefixes_the_endpoint_predefines(listener) -> None:
    """Endpoints such as Virtuoso predefine prefixes (dbo:, foaf: ...): such queries are
    still forwarded (well-known prefix names only), and SERVICE through an undeclared
    prefix is never sent (refused, or a syntax error for both parsers)."""
    endpoint = Listener()
    try:
        with RemoteSparqlEngine(endpoint.url) as remote:
            q = "SELECT ?n WHERE { ?s a dbo:City ; foaf:name ?n }"
            assert remote.execute(q, timeout_s=10).rows[0][0]["value"] == "gold"
            for bad in ("SELECT * { SERVICE:x { ?s ?p ?o } }",
                        "SELECT * { SERVICEdbo:x { ?s ?p ?o } }",
                        "SELECT * { ?s ?p trueSERVICE:x { ?s ?p ?o } }"):
                with pytest.raises((QueryRefused, QueryFailed)):
                    remote.execute(bad, timeout_s=10)
            # an undeclared empty prefix after FROM: pyoxigraph reports a plain syntax
            # error (not "Prefix not found"), so no placeholder; never sent either way
            with pytest.raises((QueryRefused, QueryFailed)):
                remote.execute("SELECT * FROM:g { ?s ?p ?o }", timeout_s=10)
            with pytest.raises(QueryFailed) as err:
                remote.execute("SELECT * WHERE { ?s ?p }", timeout_s=10)
            assert err.value.syntax_error
        assert len(endpoint.hits) == 1 and "dbo:City" in endpoint.hits[0].replace("%3A", ":")
    finally:
        endpoint.close()
