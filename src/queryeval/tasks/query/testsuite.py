"""Test-suite accuracy for the query task (``--test-suite N``, docs/test-suite.md).

Per case, :func:`verdict` gives ``test_suite_match``:

* **1** -- the prediction equals a gold on the original database (exact match 1) and, for
  the same gold, on every one of the N neighbour databases (graphs for SPARQL);
* **0** -- refuted: it differs on the original, or on a neighbour; the smallest
  distinguishing neighbour (its rows) and both results there are recorded;
* **None** -- unknown: a query failed or timed out on a neighbour and none refuted it, the
  prediction timed out on the original, it matched only a gold given as a table (which
  no neighbour can recompute), or the system call failed (no prediction to judge).

Golds and prediction run on each neighbour in sandboxed workers (the run's pool of
multi-file SQL workers or multi-store SPARQL workers, :meth:`TestSuite.runners`), under
the task's ``timeout_s`` and ``max_rows``, smallest neighbour first (so
the first refuting neighbour is the smallest); the comparison is the case's own (order,
tolerances, required columns: :func:`queryeval.metrics.tables.best_of_golds` with the
task's modes). The neighbours of a gold are built once and cached
(:mod:`queryeval.engines.query.neighbours`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from queryeval.engines.query.base import QueryRefused
from queryeval.errors import ConfigError

REFUTED_ROWS = 20
"""Rows of each table of the distinguishing database kept on the record."""
WORKERS = 4
"""Neighbours checked at once (each in a sandboxed worker of its own; fixed, not the machine's
CPU count, so a case's recorded ``executions`` is the same on every machine)."""


def _worker(dialect: str, memory_limit_bytes: int | None, url: str | None) -> Any:
    """One sandboxed worker of a :meth:`TestSuite.runners` pool."""
    from queryeval.engines.query.base import DEFAULT_MAX_RESULT_BYTES

    if dialect == "sparql":
        from queryeval.engines.query.neighbours.runner import SparqlRunner

        return SparqlRunner(memory_limit_bytes=memory_limit_bytes)
    if dialect == "postgres":
        from queryeval.engines.query.neighbours.pg import PgRunner

        runner: Any = PgRunner(url, memory_limit_bytes=memory_limit_bytes)
    else:
        from queryeval.engines.query.neighbours.runner import NeighbourRunner

        runner = NeighbourRunner(dialect, [], memory_limit_bytes=memory_limit_bytes)
    runner.max_result_bytes = DEFAULT_MAX_RESULT_BYTES
    return runner


class TestSuite:
    """The neighbour sets of one run's golds, built once per (source, gold)."""

    __test__ = False  # not a pytest class

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.seed = n, seed
        self._sets: dict[tuple[str, str], Any] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()
        self._runners: dict[tuple[str, int | None], Any] = {}
        self.cache_dir: Path | None = None
        if n:  # absolute, taken at start: the sandboxed workers are allowed this folder by
            # path
            from queryeval.engines.query.neighbours import cache_root

            self.cache_dir = cache_root()

    def runners(self, dialect: str, memory_limit_bytes: int | None,
                url: str | None = None) -> Any:
        """A queue of :data:`WORKERS` sandboxed workers for this dialect and cap, reused by
        every case of the run (one worker start per thread, not per neighbour): SQL,
        multi-file workers; SPARQL (``"sparql"``), multi-store workers, which also build
        the neighbour graphs; PostgreSQL (``"postgres"``, the server's ``url``), workers
        with a connection each, in which a neighbour is loaded as temporary tables."""
        import queue

        key = (dialect if url is None else f"{dialect}:{url}", memory_limit_bytes)
        with self._lock:
            if key not in self._runners:
                pool: queue.Queue = queue.Queue()
                for _ in range(WORKERS):
                    pool.put(_worker(dialect, memory_limit_bytes, url))
                self._runners[key] = pool
            return self._runners[key]

    def release(self) -> list[Any]:
        """Forget every worker this run holds and return those idle now, for the caller to
        close (:func:`queryeval.engines.query.worker_handle.close_all`, side by side); one
        still lent out or building (a check a deadline cut short) is left to its
        finalizer. A later case starts new ones."""
        import queue

        with self._lock:
            held, self._runners = self._runners, {}
        idle: list[Any] = []
        for entry in held.values():
            if isinstance(entry, tuple):  # a build worker and its lock
                runner, lock = entry
                if lock.acquire(blocking=False):
                    lock.release()
                    idle.append(runner)
                continue
            while True:
                try:
                    idle.append(entry.get_nowait())
                except queue.Empty:
                    break
        return idle

    @contextmanager
    def runner(self, dialect: str, memory_limit_bytes: int | None,
               url: str | None = None) -> Iterator[Any]:
        """One worker of :meth:`runners`, lent for the block."""
        pool = self.runners(dialect, memory_limit_bytes, url)
        runner = pool.get()
        try:
            yield runner
        finally:
            pool.put(runner)

    def _pg_builder(self, url: str, memory_limit_bytes: int | None) -> tuple[Any, Any]:
        """The one worker (and its lock) that reads the schema and builds every gold's
        neighbours on this server in this run: one worker start per run, not per gold."""
        from queryeval.engines.query.neighbours.pg import PgRunner

        key = ("postgres-build:" + url, memory_limit_bytes)
        with self._lock:
            if key not in self._runners:
                self._runners[key] = (PgRunner(url, memory_limit_bytes=memory_limit_bytes),
                                      threading.Lock())
            return self._runners[key]

    def _sql_builder(self, dialect: str, memory_limit_bytes: int | None) -> tuple[Any, Any]:
        """The one sandboxed worker (and its lock) that builds every gold's neighbours of
        this dialect and cap in this run (allowed each source and the test-suite cache):
        one worker start per run, not per gold."""
        from queryeval.engines.query.neighbours.runner import NeighbourRunner

        key = (f"{dialect}-build", memory_limit_bytes)
        with self._lock:
            if key not in self._runners:
                roots = [self.cache_dir] if self.cache_dir else []
                self._runners[key] = (NeighbourRunner(dialect, roots,
                                                      memory_limit_bytes=memory_limit_bytes),
                                      threading.Lock())
            return self._runners[key]

    def neighbours(self, task: Any, source: str, gold: str, language: str):
        """The neighbour set of ``gold`` on ``source``, built once per run: the cases that
        share a gold wait for its one build and share its set -- or its error (a build past
        its deadline, a gold that fails on the original), which is not tried again."""
        key = (source, gold)
        with self._lock:
            if key in self._sets:
                return _unless_error(self._sets[key])
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._sets:
                try:
                    built = self._build(task, source, gold, language)
                except Exception as exc:  # noqa: BLE001 - each case sharing it says why
                    built = exc
                with self._lock:
                    self._sets[key] = built
        return _unless_error(self._sets[key])

    def _build(self, task: Any, source: str, gold: str, language: str) -> Any:
        """Build (or read from the cache) one gold's neighbour set; the whole build under
        the task's ``score_timeout_s`` (:class:`~queryeval.engines.query.neighbours.distill.BuildClock`)."""
        from queryeval.engines.query import neighbours as nb

        limit = task.options.score_timeout_s
        if language == "sparql":
            engine = task.engine(source)
            if not hasattr(engine, "info"):
                raise ConfigError("--test-suite needs the graph's files (--graph): "
                                  "an endpoint's graph cannot be copied")
            memory = getattr(engine, "memory_limit_bytes", None)
            with self.runner("sparql", memory) as runner:  # the gold: sandboxed
                built = nb.sparql_neighbours(
                    _paths(source), gold, self.n, seed=self.seed,
                    cache_dir=self.cache_dir, prefixes=getattr(engine, "prefixes", None),
                    timeout_s=task.options.timeout_s, max_rows=task.options.max_rows,
                    memory_limit_bytes=memory, runner=runner, build_timeout_s=limit)
        elif getattr(task.engine(source), "dialect", "") == "postgres":
            memory = getattr(task.engine(source), "memory_limit_bytes", None)
            runner, runner_lock = self._pg_builder(source, memory)
            with runner_lock:  # on the server: a sandboxed worker's temp tables
                built = nb.pg_neighbours(
                    source, gold, self.n, seed=self.seed, cache_dir=self.cache_dir,
                    timeout_s=task.options.timeout_s, max_rows=task.options.max_rows,
                    memory_limit_bytes=memory, runner=runner, build_timeout_s=limit)
        else:
            dialect = getattr(task.engine(source), "dialect", "")
            if dialect not in ("sqlite", "duckdb"):
                raise ConfigError("--test-suite builds neighbour databases for sqlite "
                                  "and DuckDB files and PostgreSQL servers")
            memory = getattr(task.engine(source), "memory_limit_bytes", None)
            runner, runner_lock = self._sql_builder(dialect, memory)
            with runner_lock:  # gold and mutants: in the run's sandboxed build worker
                built = nb.sql_neighbours(
                    _paths(source)[0], dialect, gold, self.n, seed=self.seed,
                    cache_dir=self.cache_dir,
                    timeout_s=task.options.timeout_s, max_rows=task.options.max_rows,
                    memory_limit_bytes=memory, build_timeout_s=limit, runner=runner)
        return built


def _unless_error(built: Any) -> Any:
    if isinstance(built, Exception):
        raise built
    return built


def _paths(source: str) -> list[str]:
    return [p.strip() for p in source.split(",") if p.strip()]


@contextmanager
def _open(task: Any, path: Path, language: str, original: Any) -> Iterator[Any]:
    """An engine on one neighbour: SPARQL, its own store's worker; SQL, one of the run's
    multi-file sandboxed workers (the test-suite cache folder allowed), lent for this
    neighbour."""
    from queryeval.engines.query.neighbours.runner import FileEngine, GraphEngine
    from queryeval.engines.query.sparql_store import CORE_PREFIXES, read_prefixes

    memory = getattr(original, "memory_limit_bytes", None)
    if language == "sparql":
        # the prefixes a store engine on this file would have: the core set, the file's
        # own, the original engine's (which hold the user's)
        import pyoxigraph as ox

        prefixes = {**CORE_PREFIXES, **read_prefixes(path, ox.RdfFormat.TURTLE),
                    **dict(getattr(original, "prefixes", None) or {})}
        with task.test_suite.runner("sparql", memory) as runner, \
                GraphEngine(runner, path, prefixes) as engine:
            yield engine
        return
    if getattr(original, "dialect", "") == "postgres":
        from queryeval.engines.query.neighbours.pg import PgFileEngine

        # the neighbour's temporary tables stay loaded after its check: the next neighbour
        # of the same tables empties them with one TRUNCATE instead of a drop and a create,
        # a query on the real tables drops them first, and they end with the run's workers
        with task.test_suite.runner("postgres", memory, original.url) as runner:
            yield PgFileEngine(runner, path)
        return
    dialect = "duckdb" if path.suffix == ".duckdb" else "sqlite"
    with task.test_suite.runner(dialect, memory) as runner:
        runner.allow([path.parent.parent])  # the test-suite cache: every set of the run
        yield FileEngine(runner, path)


def _exact(task: Any, record: dict, pred: dict, gold: dict, query: str | None) -> tuple[bool, Any]:
    """Whether ``pred`` matches ``gold`` exactly under the case's rules, and the scores."""
    from queryeval.metrics.tables import Budget, best_of_golds

    by_text = record["language"] == "sparql" and task.options.rules == "buildingqa"
    engine = task.engine(record["source"])
    modes = task._modes(record, ordered=task._ordered(record, query))
    _, ts = best_of_golds([gold], pred, gold_queries=[query if by_text else None],
                          rules=task.options.rules,
                          budget=Budget(max_nodes=task.options.search_nodes, max_seconds=None),
                          pred_query=record["predicted_query"] if by_text else None,
                          prefixes=getattr(engine, "prefixes", None), **modes)
    return ts.exact_match_f1 == 1.0, ts


def verdict(task: Any, record: dict, golds: list[tuple[dict, str | None]], pred: dict | None,
            info: dict, sample: Callable[[dict, dict, list | None], dict],
            deadline: Any = None) -> float | None:
    """``test_suite_match`` of one scored case; the details go to ``record["test_suite"]``
    (``sample``: the task's :func:`~queryeval.tasks.query.task.result_sample`, for the results on
    the distinguishing neighbour). ``deadline`` (the case's
    :class:`~queryeval.metrics.deadline.Deadline`): the neighbour checks get what is left of
    it when they start; past that the verdict is unknown, ``timed_out`` with the reason (the
    checks still running are told to stop; the case's other scores stand)."""
    suite: TestSuite = task.test_suite
    out: dict[str, Any] = {"neighbours": suite.n, "seed": suite.seed, "checked": 0,
                           "executions": 0}
    record["test_suite"] = out

    def done(match: float | None, reason: str) -> float | None:
        out.update({"match": match, "reason": reason})
        return match

    if record.get("error"):  # no prediction to judge: never correct, never a refutation
        return done(None, "the system call failed: there is no prediction to judge")
    if pred is None:
        if info.get("status") == "timeout":
            return done(None, "the prediction timed out on the original database")
        return done(0.0, f"the prediction did not run on the original ({info.get('status')})")
    alive = [q for table, q in golds if q is not None and _exact(task, record, pred, table, q)[0]]
    if not alive:
        if any(_exact(task, record, pred, t, None)[0] for t, q in golds if q is None):
            return done(None, "it matches only a gold given as a table, which no neighbour "
                              "database can recompute")
        return done(0.0, "its result differs from the gold's on the original database")
    from queryeval.engines.query.neighbours.distill import BuildTimeout

    try:
        built = suite.neighbours(task, record["source"], record["gold_query"], record["language"])
    except ConfigError as exc:  # a source kind without neighbours: said on every case
        return done(None, str(exc))
    except QueryRefused as exc:  # a gold the neighbours cannot judge (PostgreSQL: a schema)
        return done(None, f"no neighbour databases: the gold {exc.reason}")
    except BuildTimeout as exc:  # the whole build's deadline: no set, never a verdict
        out["timed_out"] = True
        return done(None, f"no neighbour databases: {exc.reason}")
    except Exception as exc:  # noqa: BLE001 - no neighbours: unknown, the reason recorded
        return done(None, f"no neighbour databases: {type(exc).__name__}: {exc}")
    out["neighbours"] = len(built.neighbours)
    if not built.neighbours:  # "equal on all 0 neighbours" would be a verdict without evidence
        return done(None, "no neighbour database can judge it: " + (
            getattr(built, "reason", "") or "the gold failed on every candidate database"))
    if not any(nb.rows for nb in built.neighbours):  # all empty: no neighbour set either
        return done(None, "no neighbour database can judge it: every table of every "
                          "neighbour is empty")
    if built.dialect == "postgres" and record["predicted_query"]:
        from queryeval.engines.query.neighbours.pg import neighbour_query

        try:  # a schema-qualified name would reach the real table, not the neighbour's
            neighbour_query(built.paths()[0], record["predicted_query"])
        except QueryRefused as exc:
            return done(None, f"the prediction {exc.reason}")
    order = sorted(range(len(built.neighbours)), key=lambda i: (built.neighbours[i].rows, i))
    unknown: list[str] = []
    original = task.engine(record["source"])
    stop = threading.Event()  # set when the deadline passed: the checks left stop early

    def check(i: int, golds_left: list[str]) -> tuple[int, int, list[str], Any, Any, list[str]]:
        """Neighbour ``i``: (i, executions, golds still equal, (gold, scores) of one that
        differs, the prediction's result, what failed)."""
        runs, failed, still, last = 0, [], [], None
        if stop.is_set():
            return i, runs, list(golds_left), None, None, [f"neighbour {i}: not checked"]
        with _open(task, built.paths()[i], record["language"], original) as engine:
            got, pinfo = task._execute(record["source"], record["predicted_query"], engine=engine)
            runs += 1
            if got is None:
                return i, runs, list(golds_left), None, None, [
                    f"neighbour {i}: the prediction {pinfo['status']}: {pinfo.get('reason')}"]
            for q in golds_left:
                if stop.is_set():
                    return i, runs, list(golds_left), None, got, [f"neighbour {i}: stopped"]
                gold, ginfo = task._execute(record["source"], q, engine=engine)
                runs += 1
                if gold is None:
                    failed.append(f"neighbour {i}: the gold {ginfo['status']}: "
                                  f"{ginfo.get('reason')}")
                    still.append(q)  # this neighbour cannot judge it
                    continue
                same, ts = _exact(task, record, got, gold, q)
                if same:
                    still.append(q)
                else:
                    last = (gold, ts)
        return i, runs, still, last, got, failed

    # Neighbours run in batches of WORKERS at once, smallest first: the first batch with a
    # refutation names its smallest refuting neighbour (the smallest of all).
    import time
    from concurrent.futures import ThreadPoolExecutor, wait

    seconds = getattr(deadline, "seconds", None)
    left = None if seconds is None else max(0.0, seconds - deadline.spent)
    until = None if left is None else time.monotonic() + left
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    try:
        for start in range(0, len(order), WORKERS):
            futures = [pool.submit(check, i, list(alive)) for i in order[start:start + WORKERS]]
            _, pending = wait(futures, timeout=None if until is None
                              else max(0.0, until - time.monotonic()))
            if pending:  # past the deadline: no verdict from the checks that finished
                stop.set()
                out["timed_out"] = True
                out["executions"] += sum(f.result()[1] for f in futures if f.done())
                return done(None, f"timed out: the neighbour checks ran past the case's "
                                  f"scoring deadline ({seconds:g} s, score_timeout_s; "
                                  f"{left:.3g} s were left when they began)")
            batch = [f.result() for f in futures]
            refuting = None
            for i, runs, still, last, got, failed in batch:
                out["executions"] += runs
                unknown += failed
                if got is not None and not failed:
                    out["checked"] += 1
                alive = [q for q in alive if q in still]
                if last is not None and refuting is None:
                    refuting = (i, last, got)
            if not alive and refuting is not None:
                from queryeval.engines.query.neighbours import database_rows

                i, (gold, ts), got = refuting
                path = built.paths()[i]
                if record["language"] == "sparql":  # what the neighbour changed in the graph
                    from queryeval.engines.query.neighbours.graphs import graph_diff

                    rows = graph_diff(_paths(record["source"]), path)
                elif built.dialect in ("sqlite", "duckdb"):  # read by a sandboxed worker
                    from queryeval.engines.query.base import QueryExecutionError

                    with suite.runner(built.dialect, getattr(original, "memory_limit_bytes",
                                                             None)) as runner:
                        runner.allow([path.parent.parent])
                        try:
                            rows = database_rows(path, built.dialect, runner,
                                                 task.options.timeout_s)
                        except QueryExecutionError:  # the verdict stands; rows not shown
                            rows = {}
                else:
                    rows = database_rows(path, path.suffix.lstrip("."))
                out["refuted_by"] = {
                    "neighbour": i, "rows": built.neighbours[i].rows,
                    "database": {t: {"columns": v["columns"], "rows": v["rows"][:REFUTED_ROWS],
                                     "total": len(v["rows"])} for t, v in rows.items()},
                    "result_sample": sample(
                        gold, got, list(ts.mapping) if ts.mapping is not None else None)}
                return done(0.0, f"refuted by neighbour {i} ({built.neighbours[i].rows} rows): "
                                 "gold and prediction give different results there")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # a check still running stops early
    if unknown:
        out["unknown"] = unknown[:5]
        return done(None, f"equal where it could be checked; {len(unknown)} execution(s) "
                          "failed on the neighbours")
    loose = unproven_near_miss(record["gold_query"], record["predicted_query"], built,
                               record["source"])
    if loose:
        out["near_miss"] = loose
        return done(None, f"equal on the original and all {len(built.neighbours)} neighbours, "
                          f"but it is a near-miss of the gold ({loose}) that no neighbour "
                          "tells apart from it and that is not provably equivalent: unproven")
    from queryeval.engines.query.neighbours.distill import unseen_tables

    unseen = unseen_tables(record["predicted_query"], built)
    if unseen:  # empty on every neighbour: its rows were never put to the prediction
        out["unseen_tables"] = unseen
        return done(None, f"equal on the original and all {len(built.neighbours)} neighbours, "
                          f"but the prediction reads {', '.join(unseen)}, which no neighbour "
                          "holds a row of: they cannot tell how it depends on those rows")
    return done(1.0, f"equal on the original and all {len(built.neighbours)} neighbours")


_JOIN_FLIPS = ("JOIN made LEFT", "LEFT JOIN made inner")


def unproven_near_miss(gold: str, predicted: str | None, built: Any,
                       source: str | None = None) -> str | None:
    """What separates ``predicted`` from ``gold`` when equal results on the neighbours prove
    nothing about it: the prediction is one of the gold's mutants that survived the
    distillation (no neighbour tells it apart), or it differs from the gold only by LEFT
    against inner joins while a join mutant of the gold survived (no neighbour holds the
    unmatched row the two would differ on) -- either unless the two are provably
    equivalent (:func:`queryeval.tasks.query.audit.equivalent_mutant`; with ``source``, a
    sqlite or DuckDB file, also by its keys). None otherwise, and for a SPARQL set (its
    survivors are not recorded as SQL)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from queryeval.tasks.query.audit import equivalent_mutant, key_schema

    dialect = getattr(built, "dialect", "")
    if dialect not in ("sqlite", "duckdb", "postgres") or not predicted:
        return None
    survivors = set(getattr(built, "survivors", []) or [])
    try:
        pred_tree = sqlglot.parse_one(predicted, read=dialect)
        gold_tree = sqlglot.parse_one(gold, read=dialect)
        rendered = pred_tree.sql(dialect=dialect)
    except (SqlglotError, ValueError, RecursionError):
        return None
    if rendered == gold_tree.sql(dialect=dialect):
        return None
    why = None
    if rendered in survivors:
        labels = {sql: label for label, sql in getattr(built, "mutants", [])}
        why = f"mutant: {labels.get(rendered, 'one change')}"
    else:
        def sides_dropped(tree: Any) -> str:
            copy = tree.copy()
            for join in copy.find_all(exp.Join):
                if (join.args.get("side") or "").upper() == "LEFT":
                    join.set("side", None)
            return copy.sql(dialect=dialect)

        flips = [sql for label, sql in getattr(built, "mutants", []) if label in _JOIN_FLIPS]
        if sides_dropped(pred_tree) == sides_dropped(gold_tree) and (
                not flips or any(sql in survivors for sql in flips)):
            why = "LEFT against inner join"
    keys = (lambda: key_schema(source, dialect)) if source else None
    if why is None or equivalent_mutant(gold, predicted, dialect, keys) is not None:
        return None
    return why


class TestSuiteTally:
    """``test_suite_accuracy`` (mean of the known verdicts) and the counts beside it."""

    __test__ = False

    def __init__(self) -> None:
        self.values: list[float] = []
        self.refuted = self.unknown = 0

    def add(self, record: dict) -> None:
        value = (record.get("scores") or {}).get("test_suite_match")
        if value is None:
            self.unknown += 1
            return
        self.values.append(float(value))
        self.refuted += value == 0.0

    def figures(self) -> dict:
        from queryeval.tasks.accum import Values

        mean = Values()
        for v in self.values:
            mean.add(v)
        return {"test_suite_accuracy": mean.mean(), "test_suite_refuted": self.refuted,
                "test_suite_unknown": self.unknown}


def summary_note(overall: dict) -> Any:
    """The console's sentence on the test-suite verdicts (from the run's figures)."""
    from queryeval.tasks.content import Note

    # counts: means per attempt with --repeats, written as figures (as the other notes do)
    refuted, unknown = overall.get("test_suite_refuted", 0), overall.get("test_suite_unknown", 0)
    text = (f"test suite: gold and prediction also ran on {overall.get('test_suite')} "
            f"neighbour database(s) per case (seed {overall.get('test_suite_seed')}); "
            f"{refuted:g} case(s) refuted, {unknown:g} unknown (a query failed or timed out there, or "
            "the system call failed; not counted in test_suite_accuracy). Each case's test_suite field (HTML details) "
            "gives the reason and, for a refutation, the distinguishing rows.")
    return Note(text, "warning" if refuted or unknown else "info")
