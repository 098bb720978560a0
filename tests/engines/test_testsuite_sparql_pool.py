"""One sandboxed SPARQL worker serves many graphs (docs/test-suite.md, "Safety").

The test suite's SPARQL golds run in :class:`SparqlRunner` workers that hold several graphs
at once, each in an in-memory store of its own. These tests hold that:

* a whole neighbour build (the original and every candidate graph) starts one worker, and
  a ``--test-suite`` run starts at most the pool's workers however many graphs it builds
  and checks (the old code started one per graph);
* a hostile gold on one graph, with the query checks on and off, cannot read or change
  another graph held by the same worker: what it sees is exactly its own graph as the
  default graph (no named graph, no union), its update attempts fail, and the other graph
  answers the same before and after;
* a worker killed at a deadline, at the memory cap or outright (a crash) is replaced
  on the next query, the graphs still named are loaded into the new one, and a build
  whose worker dies part-way goes on to N neighbours.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections import Counter
from pathlib import Path

import pyoxigraph as ox
import pytest

from helpers.testsuite_sparql import BRICK, GOLD, GRAPH, answers  # noqa: E402
from helpers.testsuite_sparql_hostile import RUNAWAY, run_example  # noqa: E402
from queryeval.engines.query import QueryExecutionError
from queryeval.engines.query.base import QueryFailed, QueryTimeout
from queryeval.engines.query.neighbours import sparql_neighbours
from queryeval.engines.query.neighbours.runner import SparqlRunner

A = b"<urn:a:s1> <urn:p> <urn:a:o1> .\n<urn:a:s2> <urn:p> \"a secret\" .\n"
B = b"<urn:b:s1> <urn:p> <urn:b:o1> .\n<urn:b:s2> <urn:q> \"b secret\" .\n" \
    b"<urn:b:s3> <urn:p> <urn:b:o3> .\n"
ALL = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"


def triples(payload: dict) -> set[tuple[str, str, str]]:
    return {tuple(cell["value"] for cell in row) for row in payload["rows"]}


def nt(data: bytes) -> set[tuple[str, str, str]]:
    """The triples of N-Triples ``data``, parsed here (the expectation, not the worker)."""
    return {(str(t.subject.value), str(t.predicate.value), str(t.object.value))
            for t in ox.parse(data, format=ox.RdfFormat.N_TRIPLES)}


@pytest.fixture()
def runner():
    with SparqlRunner() as r:
        r.add("a", A)
        r.add("b", B)
        yield r


def ask(runner: SparqlRunner, key: str, query: str, timeout_s: float = 10.0) -> dict:
    return runner.run(key, query, prefixes={}, timeout_s=timeout_s, max_rows=1000)


HOSTILE = [
    # every graph of the store, named or default
    "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
    "SELECT ?s ?p ?o WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
    # the other graph's terms by name, and as a dataset
    "SELECT ?o WHERE { <urn:b:s2> <urn:q> ?o }",
    "SELECT ?s ?p ?o FROM <urn:b> FROM NAMED <urn:b> WHERE { ?s ?p ?o }",
    "ASK { ?s <urn:q> ?o }",
    "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "DESCRIBE <urn:b:s1>",
]
UPDATES = [
    "INSERT DATA { <urn:b:s9> <urn:p> <urn:b:o9> }",
    "DELETE WHERE { ?s ?p ?o }",
    "DROP ALL",
    "CLEAR GRAPH <urn:b>",
    "LOAD <file:///etc/hostname>",
]


def test_a_gold_sees_exactly_its_own_graph_and_cannot_change_another(runner, checks):
    assert triples(ask(runner, "a", ALL)) == nt(A)
    before_b = triples(ask(runner, "b", ALL))
    assert before_b == nt(B)
    seen: dict[str, object] = {}
    for query in HOSTILE:
        try:
            got = ask(runner, "a", query)
        except QueryExecutionError as exc:  # refused by the checks: nothing seen either
            seen[query] = type(exc).__name__
            continue
        values = {cell["value"] for row in got["rows"] for cell in row if cell} \
            if got["kind"] != "ask" else set()
        assert not any(v.startswith("urn:b") or v == "b secret" or v == "urn:q"
                       for v in values), (query, got)
        if got["kind"] == "ask":
            assert got["boolean"] is False, query  # urn:q is used in graph b only
        seen[query] = got["kind"]
    if not checks:  # every one ran (the checks refuse some): a's default graph, nothing named
        assert set(seen.values()) <= {"select", "ask", "graph"}
        assert ask(runner, "a", HOSTILE[0])["rows"] == []
        assert triples(ask(runner, "a", HOSTILE[1])) == nt(A)
    for query in UPDATES:
        with pytest.raises(QueryExecutionError):
            ask(runner, "a", query)
    assert runner.worker.starts == 1  # all of it in one worker holding both graphs
    assert triples(ask(runner, "b", ALL)) == before_b
    assert triples(ask(runner, "a", ALL)) == nt(A)


def test_a_graph_dropped_from_the_worker_is_gone(runner):
    ask(runner, "a", ALL)
    runner.discard("a")
    with pytest.raises(QueryFailed, match="no graph 'a'"):
        ask(runner, "a", ALL)  # no longer named here
    # nor held there: the worker itself answers that no such graph is loaded
    status, reason = runner.worker.request(
        {"store": "a", "query": ALL, "max_rows": 10, "checks": False}, 10)
    assert status == "error" and "no graph 'a'" in reason
    assert triples(ask(runner, "b", ALL)) == nt(B)


def test_a_deadline_kill_replaces_the_worker_and_reloads_the_graphs(runner, checks):
    big = "".join(f"<urn:c:s{i}> <urn:p> <urn:c:o{i}> .\n" for i in range(300)).encode()
    runner.add("big", big)
    assert triples(ask(runner, "b", ALL)) == nt(B)
    with pytest.raises(QueryExecutionError) as err:  # 300**6 rows: the deadline
        ask(runner, "big", RUNAWAY, timeout_s=1.0)
    if not checks:
        assert isinstance(err.value, QueryTimeout)
    killed = isinstance(err.value, QueryTimeout)
    assert runner.worker.alive() is not killed  # killed at the deadline; none started yet
    assert triples(ask(runner, "b", ALL)) == nt(B)  # loaded again into the new worker
    assert triples(ask(runner, "a", ALL)) == nt(A)
    assert len(ask(runner, "big", ALL)["rows"]) == 300
    assert runner.worker.starts == 1 + killed


def test_a_crashed_worker_is_replaced(runner):
    assert triples(ask(runner, "a", ALL)) == nt(A)
    os.kill(runner.worker.pid, signal.SIGKILL)
    runner.worker._proc.wait(10)
    assert triples(ask(runner, "b", ALL)) == nt(B)
    assert triples(ask(runner, "a", ALL)) == nt(A)
    assert runner.worker.starts == 2


def test_a_gold_over_the_memory_cap_ends_and_the_worker_is_replaced():
    """A 1 MiB literal concatenated once per row of a 300 x 300 cross product (90 GB) under
    a 256 MiB cap: the worker dies at the cap (RLIMIT_DATA), long before the deadline, and
    a fresh one answers on both graphs."""
    big = ('<urn:c:big> <urn:big> "' + "x" * (1 << 20) + '" .\n'
           + "".join(f"<urn:c:s{i}> <urn:p> <urn:c:o{i}> .\n" for i in range(300))).encode()
    balloon = ("SELECT (GROUP_CONCAT(?big) AS ?all) WHERE { ?s <urn:big> ?big . "
               "?a <urn:p> ?x . ?d <urn:p> ?y }")
    with SparqlRunner(memory_limit_bytes=256 * 1024**2) as runner:
        runner.add("b", B)
        runner.add("big", big)
        assert triples(ask(runner, "b", ALL)) == nt(B)
        with pytest.raises(QueryFailed) as err:
            ask(runner, "big", balloon, timeout_s=120.0)
        assert not isinstance(err.value, QueryTimeout)
        assert triples(ask(runner, "b", ALL)) == nt(B)
        assert len(ask(runner, "big", ALL)["rows"]) == 301
        assert runner.worker.starts == 2  # oxigraph aborts at a failed allocation


class Crashing(SparqlRunner):
    """Kills its worker (SIGKILL, as the kernel does at the memory cap) before the query
    of call ``at``."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.calls = at, 0

    def run(self, key: str, query: str, **kwargs):
        self.calls += 1
        if self.calls == self.at and self.worker.alive():
            os.kill(self.worker.pid, signal.SIGKILL)
            self.worker._proc.wait(10)
        return super().run(key, query, **kwargs)


def _in_process(path: Path) -> Counter:
    store = ox.Store()
    store.load(path=str(path), format=ox.RdfFormat.TURTLE)
    return answers(store, GOLD)


def test_one_worker_builds_every_graph_and_a_killed_one_is_replaced(tmp_path):
    graph = Path(shutil.copy(GRAPH, tmp_path / "building.ttl"))
    prefixes = {"brick": BRICK}
    with SparqlRunner() as plain:
        clean = sparql_neighbours([graph], GOLD, 4, seed=2, cache_dir=tmp_path / "a",
                                  prefixes=prefixes, runner=plain)
        assert plain.worker.starts == 1 and clean.executions >= 5
    with Crashing(at=3) as crashing:
        built = sparql_neighbours([graph], GOLD, 4, seed=2, cache_dir=tmp_path / "b",
                                  prefixes=prefixes, runner=crashing)
        assert crashing.worker.starts == 2 and crashing.calls == built.executions
    # the build went on to N neighbours; candidate 1 (the third execution) failed and was
    # skipped, so it tried one more; every kept graph is judged as pyoxigraph judges it here
    assert len(built.neighbours) == 4
    assert built.candidates >= clean.candidates
    original = _in_process(graph)
    for nb, path in zip(built.neighbours, built.paths(), strict=True):
        assert (_in_process(path) != original) == bool(nb.kills), nb


def test_a_test_suite_run_starts_only_the_pools_workers(tmp_path, monkeypatch):
    from queryeval.engines.query import sparql_worker
    from queryeval.engines.worker import WorkerProcess

    starts: list[list[str]] = []
    real = WorkerProcess.start

    def counted(self):
        starts.append(list(self.args))
        return real(self)

    monkeypatch.setattr(WorkerProcess, "start", counted)
    recs = run_example(tmp_path, monkeypatch)
    graphs = sum(r["test_suite"]["neighbours"] for r in recs)
    built = [json.loads(m.read_text()) for m in (tmp_path / "cache").rglob("manifest.json")]
    executions = sum(b["executions"] for b in built)
    assert graphs >= 8 and executions > 8  # many graphs were built and checked ...
    multi = [a for a in starts if a[0] == sparql_worker.MULTI_STORE]
    assert 1 <= len(multi) <= 4  # ... by the 4 pooled multi-store workers
    assert len(starts) - len(multi) == 1  # and the original graph's own engine
