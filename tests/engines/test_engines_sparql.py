"""SPARQL engines: the embedded pyoxigraph store, the remote protocol client, the checks."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.engines.query import (
    LocalSparqlEngine,
    QueryFailed,
    QueryRefused,
    QueryResult,
    QueryTimeout,
    RemoteSparqlEngine,
    execute,
)
from queryeval.engines.query.sparql_safety import SparqlSyntaxError, check_sparql
from queryeval.engines.query.sparql_store import MARKER
from queryeval.errors import ConfigError, InputError

XSD = "http://www.w3.org/2001/XMLSchema#"
EX = "http://example.org/"

TTL = """@prefix ex: <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .

ex:alice a foaf:Person ; foaf:name "Alice"@en ; ex:age "30"^^xsd:integer ; ex:knows ex:bob .
ex:bob a foaf:Person ; foaf:name "Bob" ; ex:age "25"^^xsd:integer .
ex:carol a foaf:Person ; foaf:name "Carol" .
"""
N_TRIPLES_IN_TTL = 9  # alice 4, bob 3, carol 2


def uri(local: str) -> dict:
    return {"type": "uri", "value": EX + local}


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("graph")
    (d / "people.ttl").write_text(TTL, encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def engine(graph_dir: Path):
    with LocalSparqlEngine(graph_dir / "people.ttl") as eng:
        yield eng


# --------------------------------------------------------------------------- local engine

def test_select_terms_and_unbound(engine: LocalSparqlEngine) -> None:
    r = engine.execute(
        "SELECT ?p ?name ?age WHERE { ?p foaf:name ?name OPTIONAL { ?p ex:age ?age } } ORDER BY ?p")
    assert r.columns == ["p", "name", "age"]
    assert r.kind == "select" and not r.truncated and r.elapsed_ms > 0
    assert r.rows == [
        (uri("alice"), {"type": "literal", "value": "Alice", "xml:lang": "en"},
         {"type": "literal", "value": "30", "datatype": XSD + "integer"}),
        (uri("bob"), {"type": "literal", "value": "Bob"},
         {"type": "literal", "value": "25", "datatype": XSD + "integer"}),
        (uri("carol"), {"type": "literal", "value": "Carol"}, None),
    ]
    js = r.to_sparql_json()
    assert js["head"]["vars"] == ["p", "name", "age"]
    assert js["results"]["bindings"][2] == {"p": uri("carol"),
                                            "name": {"type": "literal", "value": "Carol"}}
    assert r.to_table_json()["rows"][2] == [EX + "carol", "Carol", None]


def test_ask_and_construct(engine: LocalSparqlEngine) -> None:
    yes = engine.execute("ASK { ex:alice ex:knows ex:bob }")
    no = engine.execute("ASK { ex:bob ex:knows ex:alice }")
    assert (yes.kind, yes.boolean, no.boolean) == ("ask", True, False)
    assert yes.to_sparql_json() == {"head": {}, "boolean": True}
    g = engine.execute("CONSTRUCT { ?b ex:knownBy ?a } WHERE { ?a ex:knows ?b }")
    assert g.kind == "graph" and g.columns == ["subject", "predicate", "object"]
    assert g.rows == [(uri("bob"), uri("knownBy"), uri("alice"))]


def test_row_limit_marks_truncation_only_when_rows_were_dropped(engine: LocalSparqlEngine) -> None:
    q = "SELECT ?p WHERE { ?p a foaf:Person }"
    assert engine.execute(q, max_rows=3).truncated is False
    r = engine.execute(q, max_rows=2)
    assert r.truncated is True and r.row_count == 2
    r0 = engine.execute(q, max_rows=0)
    assert r0.rows == [] and r0.truncated is True


def test_prefixes_come_from_the_turtle_file_and_query_prefixes_win(engine: LocalSparqlEngine) -> None:
    assert engine.prefixes["ex"] == EX and engine.prefixes["foaf"] == "http://xmlns.com/foaf/0.1/"
    assert engine.prefixes["rdfs"] == "http://www.w3.org/2000/01/rdf-schema#"  # core default
    r = engine.execute("SELECT ?x WHERE { ?x ex:knows ?y }")
    assert r.rows == [(uri("alice"),)]
    # the query redefines ex: -> nothing matches under the other namespace
    assert engine.execute("PREFIX ex: <http://other/> SELECT ?x WHERE { ?x ex:knows ?y }").rows == []


def test_syntax_error_is_a_failed_query(engine: LocalSparqlEngine) -> None:
    with pytest.raises(QueryFailed) as err:
        engine.execute("SELECT ?x WHERE { ?x nope:p ?y }")
    assert err.value.syntax_error and "Prefix not found" in err.value.reason
    with pytest.raises(QueryFailed) as err:
        engine.execute("SELECT ?x WHERE { ?x ?p ")
    assert err.value.syntax_error


def test_timeout_kills_the_worker_and_the_next_query_restarts_it(engine: LocalSparqlEngine) -> None:
    engine.execute("ASK {}")
    pid, starts = engine.worker.pid, engine.worker.starts
    # 9 triples, 10 independent patterns: 9**10 combinations to count
    cross = "SELECT (COUNT(*) AS ?n) WHERE { " + " ".join(f"?s{i} ?p{i} ?o{i} ." for i in range(10)) + " }"
    t0 = time.monotonic()
    with pytest.raises(QueryTimeout) as err:
        engine.execute(cross, timeout_s=0.5)
    assert time.monotonic() - t0 < 10
    assert "0.5 s" in err.value.reason and err.value.to_dict()["kind"] == "timeout"
    assert not engine.worker.alive()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the old worker is really gone
    r = engine.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert r.rows[0][0]["value"] == str(N_TRIPLES_IN_TTL)
    assert engine.worker.starts == starts + 1


def test_limits_are_validated(engine: LocalSparqlEngine) -> None:
    with pytest.raises(ConfigError):
        engine.execute("ASK {}", timeout_s=0)
    with pytest.raises(ConfigError):
        engine.execute("ASK {}", max_rows=-1)


def test_module_level_execute(engine: LocalSparqlEngine) -> None:
    r = execute(engine, "SELECT ?n WHERE { ex:bob foaf:name ?n }", timeout_s=5, max_rows=10)
    assert isinstance(r, QueryResult) and r.rows == [({"type": "literal", "value": "Bob"},)]


# ------------------------------------------------------------------------ formats, store

NT = f'<{EX}s> <{EX}p> "o" .\n<{EX}s> <{EX}q> <{EX}t> .\n'
RDFXML = f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="{EX}">
  <rdf:Description rdf:about="{EX}s"><ex:p>o</ex:p><ex:q rdf:resource="{EX}t"/></rdf:Description>
</rdf:RDF>
"""
NQ = f'<{EX}s> <{EX}p> "o" <{EX}g1> .\n<{EX}s> <{EX}q> <{EX}t> <{EX}g2> .\n'


@pytest.mark.parametrize("name,text", [("d.nt", NT), ("d.rdf", RDFXML), ("d.owl", RDFXML)])
def test_triple_formats_load_the_same_graph(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with LocalSparqlEngine(tmp_path / name) as eng:
        r = eng.execute("SELECT ?p ?o WHERE { <http://example.org/s> ?p ?o } ORDER BY ?p")
    assert r.rows == [(uri("p"), {"type": "literal", "value": "o"}), (uri("q"), uri("t"))]


def test_nquads_named_graphs_and_from(tmp_path: Path) -> None:
    (tmp_path / "d.nq").write_text(NQ, encoding="utf-8")
    with LocalSparqlEngine(tmp_path / "d.nq") as eng:
        assert eng.info.named_graphs == [EX + "g1", EX + "g2"]
        assert eng.execute("SELECT * WHERE { ?s ?p ?o }").rows == []  # default graph is empty
        r = eng.execute("SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g")
        assert r.rows == [(uri("g1"),), (uri("g2"),)]
        # FROM a graph the store holds is fine; anything else is refused
        r = eng.execute(f"SELECT ?o FROM <{EX}g1> WHERE {{ ?s ?p ?o }}")
        assert r.rows == [({"type": "literal", "value": "o"},)]
        with pytest.raises(QueryRefused):
            eng.execute(f"SELECT ?o FROM <{EX}g3> WHERE {{ ?s ?p ?o }}")
    with LocalSparqlEngine(tmp_path / "d.nq", union_default_graph=True) as eng:
        assert eng.execute("SELECT * WHERE { ?s ?p ?o }").row_count == 2


def test_several_sources_merge_and_the_first_prefix_wins(tmp_path: Path) -> None:
    (tmp_path / "a.ttl").write_text("@prefix x: <http://a/> .\nx:s x:p x:o .\n", encoding="utf-8")
    (tmp_path / "b.ttl").write_text("@prefix x: <http://b/> .\n@prefix y: <http://y/> .\nx:s y:p x:o .\n",
                                    encoding="utf-8")
    with LocalSparqlEngine([tmp_path / "a.ttl", tmp_path / "b.ttl"]) as eng:
        assert eng.prefixes["x"] == "http://a/" and eng.prefixes["y"] == "http://y/"
        assert eng.execute("SELECT * { ?s ?p ?o }").row_count == 2


def test_unknown_extension_and_missing_file_are_input_errors(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        LocalSparqlEngine(tmp_path / "data.csv")
    assert err.value.path == str(tmp_path / "data.csv") and ".csv" in err.value.message
    with pytest.raises(InputError) as err:
        LocalSparqlEngine(tmp_path / "nope.ttl")
    assert "not found" in str(err.value)


def test_invalid_turtle_reports_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text('@prefix ex: <http://e/> .\nex:a ex:b ex:c .\nex:a ex:b "unterminated .\n',
                   encoding="utf-8")
    store = tmp_path / "store"
    with pytest.raises(InputError) as err:
        LocalSparqlEngine(bad, store_dir=store)
    assert err.value.path == str(bad) and err.value.line == 3
    assert str(err.value).startswith(f"{bad}:3: invalid RDF")
    assert not store.exists()  # a half-loaded store is not left behind


def test_store_is_reused_until_a_source_changes(tmp_path: Path) -> None:
    src = tmp_path / "g.ttl"
    src.write_text(TTL, encoding="utf-8")
    store = tmp_path / "store"
    with LocalSparqlEngine(src, store_dir=store) as eng:
        assert not eng.info.reused and eng.info.quads == N_TRIPLES_IN_TTL
    marker = json.loads((store / MARKER).read_text())
    assert marker["identity"]["sources"][0]["path"] == str(src.resolve())
    with LocalSparqlEngine(src, store_dir=store) as eng:
        assert eng.info.reused and eng.prefixes["foaf"] == "http://xmlns.com/foaf/0.1/"
        assert eng.execute("SELECT * { ?s ?p ?o }").row_count == N_TRIPLES_IN_TTL
    src.write_text(TTL + "ex:dave a foaf:Person .\n", encoding="utf-8")
    with LocalSparqlEngine(src, store_dir=store) as eng:
        assert not eng.info.reused
        assert eng.execute("SELECT ?p { ?p a foaf:Person }").row_count == 4
    assert store.is_dir()  # a named store survives close()


def test_a_foreign_directory_is_never_overwritten(tmp_path: Path) -> None:
    src = tmp_path / "g.ttl"
    src.write_text(TTL, encoding="utf-8")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(InputError):
        LocalSparqlEngine(src, store_dir=foreign)
    assert (foreign / "precious.txt").read_text() == "keep"


def test_temporary_store_is_removed_on_close(tmp_path: Path) -> None:
    src = tmp_path / "g.ttl"
    src.write_text(TTL, encoding="utf-8")
    eng = LocalSparqlEngine(src)
    path = eng.store_path
    eng.execute("ASK {}")
    pid = eng.worker.pid
    eng.close()
    assert not path.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(QueryFailed):
        eng.execute("ASK {}")


@pytest.mark.slow
def test_works_from_a_script_without_a_main_guard(tmp_path: Path) -> None:
    """multiprocessing's spawn would re-run such a script in the worker; our subprocess
    worker does not (regression test for the start-method choice)."""
    (tmp_path / "g.ttl").write_text(TTL, encoding="utf-8")
    script = tmp_path / "script.py"
    script.write_text(
        "from queryeval.engines.query import LocalSparqlEngine\n"
        "print('top-level ran')\n"
        f"with LocalSparqlEngine({str(tmp_path / 'g.ttl')!r}) as e:\n"
        "    print(e.execute('SELECT * { ?s ?p ?o }').row_count)\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["top-level", "ran", str(N_TRIPLES_IN_TTL)]


# ------------------------------------------------------------------------- safety lexer

def test_keywords_are_read_only_outside_strings_iris_and_comments() -> None:
    c = check_sparql('PREFIX ex: <http://e/> SELECT ?service { ?service ex:SERVICE "SERVICE" '
                     '} # SERVICE\n')
    assert c.form == "SELECT" and c.arity == 1
    assert check_sparql("SELECT * WHERE { ?s <http://x/SERVICE> ?o }").arity == 2
    assert check_sparql("SELECT * WHERE { ?s ?p '''a 'SERVICE'' c''' }").arity == 2


def test_check_reports_form_prefixes_and_datasets() -> None:
    c = check_sparql("BASE <http://b/> PREFIX ex: <http://e/>\n ask { ?s ?p ?o }")
    assert c.form == "ASK" and c.prefixes == {"ex": "http://e/"} and c.datasets == []
    assert (c.arity, c.ordered, c.limited) == (1, False, False)
    c = check_sparql("PREFIX ex: <http://e/> SELECT * FROM ex:g FROM NAMED <http://h> {}",
                     allowed_graphs={"http://e/g", "http://h"})
    assert c.datasets == [(False, "http://e/g"), (True, "http://h")]


_LITERAL_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(_LITERAL_TEXT)
def test_any_text_inside_a_string_literal_is_never_a_keyword(text: str) -> None:
    # escape as SPARQL's STRING_LITERAL2 requires; \u escapes are decoded by the checker
    # (conservatively), so backslashes are escaped as \\ which never forms \u
    body = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\r", "\\r"))
    for query in (f'SELECT * WHERE {{ ?s ?p "{body}" }}', f"SELECT * WHERE {{ ?s ?p ?o }} # {body}"):
        if "#" in query.split("WHERE", 1)[0] or ("\n" in body or "\r" in body):
            continue
        assert check_sparql(query).form == "SELECT"


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["SERVICE", "INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE",
                        "ADD", "MOVE", "COPY", "WITH"]),
       st.lists(st.booleans(), min_size=1, max_size=8))
def test_dangerous_keywords_are_refused_in_any_letter_case(word: str, upper: list[bool]) -> None:
    cased = "".join(c.upper() if upper[i % len(upper)] else c.lower() for i, c in enumerate(word))
    # SERVICE is a real clause there (refused); an update keyword inside a query is not
    # SPARQL at all (a syntax error); the same words as an update of their own are refused
    expected = QueryRefused if word == "SERVICE" else SparqlSyntaxError
    with pytest.raises(expected):
        check_sparql(f"SELECT * WHERE {{ {cased} <http://x/> {{ ?s ?p ?o }} }}")
    if word in ("INSERT", "DELETE"):
        with pytest.raises(QueryRefused, match="Update"):
            check_sparql(f"{cased} DATA {{ <http://x/s> <http://x/p> 1 }}")


# ------------------------------------------------------------------ remote: mocked HTTP

def _mock_engine(handler, **kw) -> RemoteSparqlEngine:
    return RemoteSparqlEngine("http://endpoint.test/sparql",
                              client=httpx.Client(transport=httpx.MockTransport(handler)), **kw)


def test_remote_request_shape_and_decoding() -> None:
    seen: dict = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["method"] = request.method
        seen["accept"] = request.headers["accept"]
        seen["form"] = dict(httpx.QueryParams(request.content.decode()))
        doc = {"head": {"vars": ["s", "o"]}, "results": {"bindings": [
            {"s": {"type": "uri", "value": "http://e/1"},
             "o": {"type": "typed-literal", "value": "1", "datatype": XSD + "integer"}},
            {"s": {"type": "uri", "value": "http://e/2"}},
            {"s": {"type": "uri", "value": "http://e/3"}},
        ]}}
        return httpx.Response(200, json=doc, headers={"content-type": "application/sparql-results+json"})

    eng = _mock_engine(handler, prefixes={"ex": "http://e/", "dc": "http://purl.org/dc/terms/"})
    r = eng.execute("PREFIX dc: <http://dc/> SELECT ?s ?o WHERE { ?s ex:p ?o }", max_rows=2)
    assert seen["method"] == "POST" and seen["accept"] == "application/sparql-results+json"
    # ex: is injected, dc: is declared by the query and left alone
    assert seen["form"]["query"] == ("PREFIX ex: <http://e/>\n"
                                     "PREFIX dc: <http://dc/> SELECT ?s ?o WHERE { ?s ex:p ?o }")
    assert r.columns == ["s", "o"] and r.truncated
    assert r.rows == [({"type": "uri", "value": "http://e/1"},
                       {"type": "literal", "value": "1", "datatype": XSD + "integer"}),
                      ({"type": "uri", "value": "http://e/2"}, None)]


@pytest.mark.parametrize("status,body,ctype,expect", [
    (400, b"Parse error at 1:5", "text/plain", "HTTP 400 from endpoint: Parse error"),
    (500, b"boom", "text/plain", "HTTP 500"),
    (200, b"<html>not json</html>", "text/html", "did not return SPARQL JSON (text/html)"),
    (200, b'{"head": {"vars": ["x"]}}', "application/json", "malformed SPARQL JSON"),
    (302, b"", "text/plain", "HTTP 302"),
])
def test_remote_errors_become_failed_queries(status, body, ctype, expect) -> None:
    eng = _mock_engine(lambda req: httpx.Response(status, content=body, headers={"content-type": ctype}))
    with pytest.raises(QueryFailed) as err:
        eng.execute("SELECT * { ?s ?p ?o }")
    assert expect in err.value.reason
    assert err.value.syntax_error == (status == 400)


def test_remote_connection_and_timeout_errors() -> None:
    def refuse(request):
        raise httpx.ConnectError("connection refused", request=request)

    def slow(request):
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(QueryFailed, match="connection to http://endpoint.test/sparql failed"):
        _mock_engine(refuse).execute("ASK {}")
    with pytest.raises(QueryTimeout):
        _mock_engine(slow).execute("ASK {}", timeout_s=0.2)


def test_remote_response_size_cap() -> None:
    eng = _mock_engine(lambda req: httpx.Response(200, content=b"x" * 5000), max_response_bytes=1000)
    with pytest.raises(QueryFailed, match="larger than 1000 bytes"):
        eng.execute("SELECT * { ?s ?p ?o }")


# -------------------------------------------------------- remote: a real oxigraph server

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory, graph_dir: Path):
    """``oxigraph serve`` (read-write, on purpose: refusals must happen client-side)."""
    exe = shutil.which("oxigraph")
    if exe is None:
        pytest.skip("the oxigraph CLI (PyPI package 'oxigraph') is not installed")
    location = tmp_path_factory.mktemp("oxiserver") / "db"
    subprocess.run([exe, "load", "--location", str(location), "--file", str(graph_dir / "people.ttl")],
                   check=True, capture_output=True, timeout=60)
    port = _free_port()
    proc = subprocess.Popen([exe, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}",
                             "--timeout-s", "10"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/query"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.post(url, data={"query": "ASK {}"}, timeout=1)
            break
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("oxigraph serve did not come up")
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_remote_matches_local_on_a_real_server(oxigraph_server: str, engine: LocalSparqlEngine) -> None:
    q = "SELECT ?p ?name ?age WHERE { ?p foaf:name ?name OPTIONAL { ?p ex:age ?age } } ORDER BY ?p"
    with RemoteSparqlEngine(oxigraph_server, prefixes=engine.prefixes) as remote:
        r = remote.execute(q)
        assert r.columns == ["p", "name", "age"]
        assert r.rows == engine.execute(q).rows
        assert remote.execute("ASK { ex:alice ex:knows ex:bob }").boolean is True
        g = remote.execute("CONSTRUCT { ?b ex:knownBy ?a } WHERE { ?a ex:knows ?b }")
        assert g.rows == [(uri("bob"), uri("knownBy"), uri("alice"))]
        t = remote.execute("SELECT * { ?s ?p ?o }", max_rows=4)
        assert t.row_count == 4 and t.truncated
        with pytest.raises(QueryFailed) as err:
            remote.execute("SELECT ?x WHERE { ?x ?p }")
        assert err.value.syntax_error


@pytest.mark.slow
def test_remote_timeout_on_a_real_server(oxigraph_server: str) -> None:
    with RemoteSparqlEngine(oxigraph_server) as remote:
        t0 = time.monotonic()
        with pytest.raises(QueryTimeout):
            remote.execute("SELECT (COUNT(*) AS ?n) { " + " ".join(
                f"?s{i} ?p{i} ?o{i} ." for i in range(10)) + " }", timeout_s=0.5)
        assert time.monotonic() - t0 < 10
        assert remote.execute("ASK { ?s ?p ?o }").boolean is True


# ------------------------------------------------------------------ BuildingQA (shared)

SEED_GOLD = """PREFIX brick: <https://brickschema.org/schema/Brick#>
SELECT DISTINCT ?eqp ?sensor WHERE {
    ?eqp a brick:Air_Handling_Unit . ?vav a brick:VAV . ?sensor a brick:Zone_Air_Temperature_Sensor .
    ?eqp brick:feeds ?vav . ?vav brick:hasPoint ?sensor . }"""
SEED_PREDICTED = {
    "q1": "SELECT DISTINCT ?ahu ?s WHERE { ?ahu a brick:Air_Handling_Unit . ?s a brick:Zone_Air_Temperature_Sensor . }",
    "q2": "SELECT DISTINCT ?s ?ahu WHERE { ?ahu a brick:Air_Handling_Unit . ?s a brick:Zone_Air_Temperature_Sensor . }",
    "q3": SEED_GOLD.replace("?eqp ?sensor WHERE", "?eqp ?vav ?sensor WHERE"),
    "q4": "SELECT DISTINCT ?s WHERE { ?ahu a brick:Air_Handling_Unit . ?s a brick:Zone_Air_Temperature_Sensor . }",
    "q5": SEED_GOLD.replace("?eqp", "?e").replace("?sensor", "?s"),
}
BRICK_PREFIX = "PREFIX brick: <https://brickschema.org/schema/Brick#>\n"


@pytest.fixture(scope="module")
def bldg11(shared_data: Path):
    ttl = shared_data / "buildingqa" / "bldg11.ttl"
    if not ttl.is_file():
        pytest.skip(f"{ttl} not found in the shared check data")
    with LocalSparqlEngine(ttl) as eng:
        yield eng, json.loads((shared_data / "buildingqa" / "bldg11_qa.json").read_text())


@pytest.mark.slow
def test_bldg11_seed_queries_return_the_published_row_counts(bldg11) -> None:
    eng, _ = bldg11
    gold = eng.execute(SEED_GOLD)
    assert gold.columns == ["eqp", "sensor"] and gold.row_count == 377  # seed 003's count
    counts = {k: eng.execute(BRICK_PREFIX + q).row_count for k, q in SEED_PREDICTED.items()}
    assert counts == {"q1": 4268, "q2": 4268, "q3": 377, "q4": 388, "q5": 377}  # REFERENCE.md
    assert eng.execute(SEED_PREDICTED["q5"]).rows == gold.rows  # brick: injected from the file


@pytest.mark.slow
def test_bldg11_gold_queries_without_prefixes_run_on_injected_prefixes(bldg11) -> None:
    eng, qa = bldg11
    gold = {q["query_id"]: q["sparql_query"] for b in qa for q in b["queries"]}
    mortar = gold["MORTAR_001"]
    assert "PREFIX" not in mortar.upper() and "brick:" in mortar and "rdfs:" in mortar
    injected = eng.execute(mortar)
    explicit = eng.execute(
        "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n" + BRICK_PREFIX + mortar)
    assert injected.columns == ["point", "point_type"]
    assert injected.row_count > 0 and sorted(map(str, injected.rows)) == sorted(map(str, explicit.rows))
    for query_id, text in gold.items():  # every gold query parses and runs
        r = eng.execute(text, timeout_s=60)
        assert r.row_count > 0, query_id


def test_a_remote_engine_dropped_unclosed_stops_its_checker_and_removes_its_folder() -> None:
    import gc
    import os

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"head": {"vars": ["s"]}, "results": {"bindings": []}},
                              headers={"content-type": "application/sparql-results+json"})

    eng = _mock_engine(handler)
    assert eng.execute("SELECT ?s WHERE { ?s ?p ?o }").rows == []
    worker = eng._checker
    folder = worker._tmpdir
    assert folder is not None and os.path.isdir(folder)
    del eng
    gc.collect()
    assert not os.path.exists(folder) and not worker.alive()
