"""Hostile SPARQL golds through ``--test-suite``: the neighbour graphs' gold runs where
predictions run (docs/test-suite.md, "Safety: what runs where").

* nothing of the build runs a SPARQL query in the evaluating process: with pyoxigraph's and
  rdflib's in-process query made to fail, neighbour graphs are still built and a
  ``--test-suite`` run on examples/sparql still scores (the old code ran the gold on an
  in-memory store here, so these fail on it);
* a runaway gold (a cross product of triple patterns) ends at its deadline during
  generation, with the query checks on and off;
* a ``SERVICE <http://127.0.0.1:PORT/>`` gold reaches no loopback listener with the checks
  off (the OS sandbox alone).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib

from helpers.sandbox import Listener, needs_sandbox  # noqa: E402
from helpers.testsuite_sparql import GOLD, GRAPH, answers  # noqa: E402
from helpers.testsuite_sparql_hostile import RUNAWAY, run_example  # noqa: E402,F401
from queryeval.engines.query import base
from queryeval.engines.query.neighbours import sparql_neighbours


@pytest.fixture()
def no_inprocess_sparql(monkeypatch) -> None:
    """Any SPARQL query evaluated by this (the evaluating) process fails the test; the
    workers are other processes, which this does not reach."""

    def ran_here(self, *args, **kwargs):
        raise AssertionError("a SPARQL gold ran in the evaluating process")

    monkeypatch.setattr(ox.Store, "query", ran_here)
    monkeypatch.setattr(rdflib.Graph, "query", ran_here)


@pytest.fixture()
def graph(tmp_path) -> Path:
    return Path(shutil.copy(GRAPH, tmp_path / "building.ttl"))


def test_neighbour_graphs_are_built_without_running_the_gold_in_this_process(
        graph, tmp_path, no_inprocess_sparql):
    built = sparql_neighbours([graph], GOLD, 4, seed=2, cache_dir=tmp_path / "c",
                              prefixes={"brick": "https://brickschema.org/schema/Brick#"})
    assert len(built.neighbours) == 4
    assert built.executions == 1 + built.candidates
    assert any(nb.kills == ["gold result changed"] for nb in built.neighbours)


def test_the_worker_keeps_what_the_gold_tells_apart(graph, tmp_path):
    """Cross-check against pyoxigraph in this (trusted test) process: a neighbour marked
    "gold result changed" changes the gold's answer, the others keep it, and the kept
    changed graphs answer pairwise differently (distillation keeps only something new)."""
    built = sparql_neighbours([graph], GOLD, 6, seed=2, cache_dir=tmp_path / "c")

    def on(path: Path):
        store = ox.Store()
        store.load(path=str(path), format=ox.RdfFormat.TURTLE)
        return answers(store, GOLD)

    original = on(graph)
    got = [on(p) for p in built.paths()]
    changed = [a for nb, a in zip(built.neighbours, got, strict=True) if nb.kills]
    assert len(changed) >= 2
    for nb, a in zip(built.neighbours, got, strict=True):
        assert (a != original) == bool(nb.kills), nb
    assert all(x != y for i, x in enumerate(changed) for y in changed[i + 1:])


def test_examples_sparql_scores_test_suite_without_running_a_gold_in_this_process(
        tmp_path, monkeypatch, no_inprocess_sparql):
    recs = run_example(tmp_path, monkeypatch)
    assert len(recs) == 8
    verdicts = [r["scores"]["test_suite_match"] for r in recs]
    assert all(v in (0.0, 1.0) for v in verdicts), [r.get("test_suite") for r in recs]
    assert all(r["test_suite"]["neighbours"] == 3 for r in recs)


def test_runaway_gold_ends_at_its_deadline_during_generation(graph, tmp_path, checks):
    built = sparql_neighbours([graph], RUNAWAY, 4, seed=0, cache_dir=tmp_path / "c",
                              timeout_s=1.0)
    # the gold failed on the original graph (deadline, or refused by the checks): no
    # neighbour can be told apart, and no candidate is tried
    assert built.neighbours == [] and built.executions == 1 and built.candidates == 0


@needs_sandbox
def test_service_gold_reaches_no_listener_with_checks_off(graph, tmp_path, monkeypatch):
    monkeypatch.setattr(base, "QUERY_CHECKS", False)
    srv = Listener()
    try:
        url = srv.url.rsplit("/", 1)[0] + "/"
        gold = f"SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}"
        built = sparql_neighbours([graph], gold, 3, seed=0, cache_dir=tmp_path / "c",
                                  timeout_s=5.0)
        assert srv.hits == []
        assert built.neighbours == []
    finally:
        srv.close()
