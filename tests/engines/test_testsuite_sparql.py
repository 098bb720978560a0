"""--test-suite N on SPARQL: neighbour graphs (the gold's touched triples perturbed) refute a
prediction right by accident on the building graph and keep equivalent rewrites equal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyoxigraph as ox
import pytest

import queryeval as qe
from helpers.testsuite_sparql import BRICK, GOLD, GRAPH, answers  # noqa: E402,F401
from queryeval.engines.query.neighbours import database_rows, sparql_neighbours
from queryeval.engines.query.neighbours.graphs import touched_terms

ACCIDENT = "SELECT ?ahu WHERE { ?ahu brick:hasPoint ?p . ?p a brick:Fan_Command }"


def case(cid: str, source: str, gold: str) -> dict:
    return {"id": cid, "conversation": [{"role": "user", "content": cid, "target": {
        "query": {"source": source, "gold": gold}}}]}


def records(run: qe.Run) -> dict[str, dict]:
    path = run.folder / f"results_{run.batch_id}.jsonl"
    return {r["case_id"]: r for r in map(json.loads, path.read_text().splitlines())}


@pytest.fixture(scope="module")
def graph_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bldg")
    src = str(shutil.copy(GRAPH, folder / "building.ttl"))
    cases = [case("accident", src, GOLD), case("renamed", src, GOLD),
             case("filtered", src, GOLD)]
    preds = [{"case_id": "accident", "query": ACCIDENT},
             {"case_id": "renamed", "query": f"PREFIX b: <{BRICK}>\n"
                                             "SELECT ?x WHERE { ?x a b:Air_Handling_Unit }"},
             {"case_id": "filtered", "query": "SELECT ?u WHERE { ?u a ?c . "
                                              "FILTER(?c = brick:Air_Handling_Unit) }"}]
    run = qe.evaluate(cases, responses=preds, task="query", out=folder / "runs", test_suite=6)
    return folder, run, records(run)


def test_right_by_accident_on_the_graph_is_refuted(graph_run):
    folder, _, recs = graph_run
    rec = recs["accident"]
    assert rec["scores"]["exact_match_f1"] == 1.0
    assert rec["scores"]["test_suite_match"] == 0.0
    refuted = rec["test_suite"]["refuted_by"]
    diff = refuted["database"]
    assert diff["added"]["rows"] or diff["removed"]["rows"]
    assert all(part["total"] == len(part["rows"]) for part in diff.values())  # all kept
    # the original graph with the recorded changes applied, loaded again: the two queries
    # give different answers there
    triples = {line for line in _lines(GRAPH)}
    triples -= {r[0] for r in diff["removed"]["rows"]}
    triples |= {r[0] for r in diff["added"]["rows"]}
    store = ox.Store()
    store.load("\n".join(sorted(triples)).encode(), ox.RdfFormat.N_TRIPLES)
    assert answers(store, GOLD) != answers(store, ACCIDENT)
    original = ox.Store()
    original.load(path=str(GRAPH), format=ox.RdfFormat.TURTLE)
    assert answers(original, GOLD) == answers(original, ACCIDENT)


def _lines(path: Path) -> set[str]:
    return {f"{s} {p} {o} ." for s, p, o in _triples(path)}


def test_equivalent_sparql_rewrites_stay_equal(graph_run):
    _, run, recs = graph_run
    for cid in ("renamed", "filtered"):
        assert recs[cid]["scores"]["test_suite_match"] == 1.0, recs[cid]["test_suite"]["reason"]
    assert run.overall["test_suite_accuracy"] == pytest.approx(2 / 3)


def test_touched_terms_and_deterministic_graphs(tmp_path):
    preds, classes = touched_terms(
        "SELECT ?a ?v WHERE { ?a a brick:Air_Handling_Unit ; brick:feeds ?v }", {"brick": BRICK})
    assert {str(p) for p in preds} == {BRICK + "feeds"}
    assert {str(c) for c in classes} == {BRICK + "Air_Handling_Unit"}
    a = sparql_neighbours([GRAPH], GOLD, 4, seed=2, cache_dir=tmp_path / "a")
    b = sparql_neighbours([GRAPH], GOLD, 4, seed=2, cache_dir=tmp_path / "b")
    assert [database_rows(p, "sparql") for p in a.paths()] == \
        [database_rows(p, "sparql") for p in b.paths()]
    assert sparql_neighbours([GRAPH], GOLD, 4, seed=2, cache_dir=tmp_path / "a").cached
    # every neighbour keeps the untouched triples and perturbs only touched ones (or adds
    # copies on fresh IRIs)
    original = {t for t in _triples(GRAPH)}
    for path in a.paths():
        got = _triples(path)
        for s, p, _o in got - original:
            assert s.startswith("<urn:queryeval:neighbour:") or p.endswith("rdf-syntax-ns#type>")
        for _s, _p, o in original - got:
            assert o == f"<{BRICK}Air_Handling_Unit>"


def _triples(path: Path) -> set[tuple[str, str, str]]:
    store = ox.Store()
    store.load(path=str(path), format=ox.RdfFormat.TURTLE)
    return {(str(q.subject), str(q.predicate), str(q.object)) for q in store}
