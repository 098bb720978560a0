"""Neighbour graphs for SPARQL golds: the suite's graph with the triples the gold's patterns
touch perturbed.

The gold's basic graph patterns (rdflib's algebra of the query, the graph's own prefixes
supplied) name predicates and, through ``rdf:type``, classes; a triple is *touched* when its
predicate is one of those predicates, or it types a subject with one of those classes. Each
candidate graph applies, from a seeded :class:`random.Random`: **drop** (each touched triple
with probability 0.2), **duplicate** (one or two touched subjects copied, with all their
triples, onto fresh IRIs ``urn:queryeval:neighbour:K:I``), **retype** (a touched type triple
given another class the gold or the graph names) and **rewire** (a touched triple given
another object seen with its predicate). Distillation keeps the candidates on which the
gold's result differs from its result on the original graph and from those of the graphs
kept before (each kept graph shows the gold something new), then fills up to N. The gold
is the suite's query, untrusted: it runs where predictions run, in a sandboxed SPARQL
worker (:class:`.runner.SparqlRunner`: the OS sandbox, the task's deadline held by a kill,
its row and memory caps), one worker for the whole build (or the run's), each graph in an
in-memory store of its own there, never in this process.
"""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from queryeval.engines.query.neighbours.distill import (
    GENERATOR_VERSION,
    Neighbour,
    NeighbourSet,
    cached_set,
    store_set,
)
from queryeval.engines.query.neighbours.runner import SparqlRunner
from queryeval.engines.query.sparql_store import CORE_PREFIXES

DROP_RATE = 0.2
RETYPE_RATE = 0.15
REWIRE_RATE = 0.15
FRESH = "urn:queryeval:neighbour:"


def _load(sources: Sequence[str | Path]):
    import rdflib
    from rdflib.util import guess_format

    g = rdflib.Graph()
    for src in sources:
        g.parse(str(src), format=guess_format(str(src)) or "turtle")
    return g


def touched_terms(gold: str, prefixes: Mapping[str, str]) -> tuple[set, set]:
    """(predicates, classes) the gold's triple patterns name (rdflib terms)."""
    from rdflib import RDF, URIRef
    from rdflib.paths import Path as RPath
    from rdflib.plugins.sparql import prepareQuery

    query = prepareQuery(gold, initNs=dict(prefixes))
    preds: set = set()
    classes: set = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key == "triples" and isinstance(value, list):
                    for _s, p, o in value:
                        if isinstance(p, RPath):
                            preds.update(t for t in _path_iris(p))
                        elif isinstance(p, URIRef):
                            if p == RDF.type and isinstance(o, URIRef):
                                classes.add(o)
                            else:
                                preds.add(p)
                else:
                    walk(value)
        elif isinstance(node, (list, tuple)):
            for x in node:
                walk(x)

    walk(query.algebra)
    return preds, classes


def _path_iris(path: Any) -> list:
    from rdflib import URIRef

    out = []
    for attr in ("arg", "args", "path"):
        value = getattr(path, attr, None)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, URIRef):
                out.append(v)
            elif v is not None and not isinstance(v, (str, int)):
                out.extend(_path_iris(v))
    return out


def perturb(graph, preds: set, classes: set, rng: random.Random, k: int):
    """One candidate neighbour graph (a new rdflib Graph, the namespaces kept)."""
    import rdflib
    from rdflib import RDF, URIRef

    def touched(t: tuple) -> bool:
        return t[1] in preds or (t[1] == RDF.type and t[2] in classes)

    triples = sorted(graph, key=lambda t: tuple(str(x) for x in t))
    hit = [t for t in triples if touched(t)]
    all_classes = sorted(classes | {o for _, p, o in hit if p == RDF.type}, key=str)
    objects: dict[Any, list] = {}
    for _, p, o in hit:
        objects.setdefault(p, []).append(o)
    out = rdflib.Graph()
    for prefix, ns in graph.namespaces():
        out.bind(prefix, ns, override=True)
    for t in triples:
        s, p, o = t
        if touched(t):
            r = rng.random()
            if r < DROP_RATE:
                continue
            if p == RDF.type and r < DROP_RATE + RETYPE_RATE and len(all_classes) > 1:
                o = rng.choice(all_classes)
            elif p != RDF.type and r < DROP_RATE + REWIRE_RATE and len(objects[p]) > 1:
                o = rng.choice(objects[p])
        out.add((s, p, o))
    subjects = sorted({s for s, _, _ in hit}, key=str)
    for i in range(min(len(subjects), rng.randint(1, 2))):
        subject = rng.choice(subjects)
        fresh = URIRef(f"{FRESH}{k}:{i}")
        for _, p, o in graph.triples((subject, None, None)):
            out.add((fresh, p, o))
    return out


def _result_key(runner: Any, graph: Any, gold: str, prefixes: Mapping[str, str], k: int,
                timeout_s: float, max_rows: int, clock: Any) -> Any:
    """The gold's result on ``graph`` as a comparable key (None when it fails), run where
    predictions run: in the build's sandboxed SPARQL worker (:class:`.runner.SparqlRunner`:
    the graph alone in an in-memory store of its own, the OS sandbox, killed at
    ``timeout_s``, RLIMIT_DATA at the memory cap), the store dropped after; under
    ``clock``, the build's deadline (:class:`.distill.BuildClock`)."""
    from queryeval.engines.query.base import QueryExecutionError
    from queryeval.engines.query.neighbours.distill import BuildTimeout

    key = f"candidate_{k}"
    runner.add(key, graph.serialize(format="nt", encoding="utf-8"))
    try:
        res = clock.call(lambda t: runner.run(key, gold, prefixes=dict(prefixes), timeout_s=t,
                                              max_rows=max_rows), timeout_s)
    except BuildTimeout:
        raise
    except (QueryExecutionError, OSError):
        return None
    finally:
        runner.discard(key)
    if res["kind"] == "ask":
        return bool(res["boolean"])
    return Counter(tuple(json.dumps(cell, sort_keys=True) for cell in row) for row in res["rows"])


def sparql_neighbours(sources: Sequence[str | Path], gold: str, n: int, *, seed: int = 0,
                      prefixes: Mapping[str, str] | None = None,
                      cache_dir: Path | None = None, timeout_s: float = 30.0,
                      max_rows: int = 100_000, memory_limit_bytes: int | None = None,
                      runner: Any = None, build_timeout_s: float | None = None) -> NeighbourSet:
    """``n`` neighbour graphs (Turtle files) of the graph in ``sources`` for ``gold``,
    from the cache when built before; the graph's own prefixes and ``prefixes`` resolve the
    gold's prefixed names as the engine does. The gold runs in a sandboxed SPARQL worker
    under ``timeout_s`` and ``memory_limit_bytes`` (None: the engines' default cap):
    ``runner``'s (a :class:`.runner.SparqlRunner`, e.g. the run's, whose own memory cap then
    holds), else one started for this build; the whole build under ``build_timeout_s``
    (:class:`.distill.BuildClock`)."""
    from queryeval.engines.query.neighbours import cache_root
    from queryeval.engines.query.neighbours.distill import BuildClock, _digest

    paths = [Path(s).resolve() for s in sources]
    key = hashlib.sha256(json.dumps([GENERATOR_VERSION, "sparql", [_digest(p) for p in paths],
                                     gold, n, seed, sorted((prefixes or {}).items())]).encode())
    folder = (cache_dir or cache_root()) / key.hexdigest()[:24]
    cached = cached_set(folder, "sparql")
    if cached is not None:
        return cached
    started = time.perf_counter()
    clock = BuildClock(build_timeout_s)
    graph = _load(paths)
    ns = {**{p: str(u) for p, u in graph.namespaces() if p}, **dict(prefixes or {})}
    preds, classes = touched_terms(gold, ns)
    engine_prefixes = {**CORE_PREFIXES, **ns}  # as LocalSparqlEngine on an N-Triples file
    with (nullcontext(runner) if runner is not None
          else SparqlRunner(memory_limit_bytes=memory_limit_bytes)) as worker:
        def run(g: Any, k: int) -> Any:
            return _result_key(worker, g, gold, engine_prefixes, k, timeout_s, max_rows, clock)

        original = run(graph, -1)
        seen = [original]
        kept: list[tuple[Neighbour, Any]] = []
        spares: list[tuple[Neighbour, Any]] = []
        # a gold that fails on the original graph (refused, deadline, memory) tells no
        # neighbour apart: stop rather than spend a deadline on every candidate
        executions, k, budget = 1, 0, max(24, 4 * n) if original is not None else 0
        while k < budget and len(kept) < n:
            rng = random.Random(f"{seed}:{k}:{gold}")
            cand = perturb(graph, preds, classes, rng, k)
            res = run(cand, k)
            executions += 1
            nb = Neighbour(f"neighbour_{k:03d}.ttl", len(cand),
                           ["gold result changed"] if res is not None and res != original else [])
            k += 1
            if res is None:
                continue
            if res not in seen:
                seen.append(res)
                kept.append((nb, cand))
            else:
                spares.append((nb, cand))
    clock.check()  # past the build's deadline now: no set
    chosen = (kept + spares)[:n]
    folder.parent.mkdir(parents=True, exist_ok=True)
    final = Path(tempfile.mkdtemp(prefix=".ready-", dir=folder.parent))
    for i, (nb, cand) in enumerate(chosen):
        nb.file = f"neighbour_{i:03d}.ttl"
        cand.serialize(final / nb.file, format="turtle")
    out = NeighbourSet(folder, "sparql", [nb for nb, _ in chosen], [], [], [], k, executions,
                       time.perf_counter() - started)
    store_set(final, folder, out)
    return out


def nt_lines(paths: Sequence[str | Path]) -> set[str]:
    """Every triple of the files as an N-Triples line."""
    import pyoxigraph as ox

    store = ox.Store()
    for p in paths:
        fmt = ox.RdfFormat.from_extension(Path(p).suffix.lstrip(".")) or ox.RdfFormat.TURTLE
        store.load(path=str(p), format=fmt)
    return {f"{q.subject} {q.predicate} {q.object} ." for q in store}


def graph_diff(original: Sequence[str | Path], neighbour: str | Path) -> dict[str, dict]:
    """What a neighbour graph changed: its ``added`` and ``removed`` triples (N-Triples
    lines, sorted), as tables of one column."""
    before, after = nt_lines(original), nt_lines([neighbour])
    return {"added": {"columns": ["triple"], "rows": [[t] for t in sorted(after - before)]},
            "removed": {"columns": ["triple"], "rows": [[t] for t in sorted(before - after)]}}
