"""Neighbour databases on PostgreSQL (docs/test-suite.md, "PostgreSQL").

The gold and the predictions are in PostgreSQL's dialect, so their neighbours run on
PostgreSQL itself, never transpiled: on the user's own server, in **temporary tables** of a
sandboxed worker's connection (:mod:`.pg_worker`), which shadow the real tables for
unqualified names (``pg_temp`` is searched first) and are seen by no other session.

* :func:`pg_neighbours` reads the schema of the tables the gold reads (and their
  foreign-key parents) from the server's catalogs, in the worker (:mod:`.pg_schema`); draws
  candidates with the fuzzer (:mod:`.fuzz`) and distils them with the mutants as for
  sqlite (:mod:`.distill`), each candidate loaded into the worker's temporary tables with
  the constraints enforced; caches the set as JSON files (one per neighbour: its DDL and
  rows) under a key of the generator version, the schema document read from the server
  (columns, constraints, sampled values), the gold, N and the seed.
* :class:`PgRunner` is the parent's handle on one worker; :class:`PgFileEngine` is one
  neighbour as the query task's ``_execute`` uses an engine.

Every query -- gold, mutant, prediction -- is checked as the engine checks it
(:func:`..postgres.check_postgres` when the query checks are on), refused when it names a
schema (:func:`.pg_names.query_names`) unless dropping that schema provably changes nothing
(:func:`.pg_names.unqualify`), and run in a READ ONLY transaction that is rolled back, under
``statement_timeout``; on a neighbour the worker also proves from the server's plan that it
reads nothing but the temporary tables. A gold is first run on an empty neighbour
(:func:`_probe`), so one the worker refuses there gets a reason, not a set. A role without
the TEMPORARY privilege gets no neighbours (:class:`NoTempPrivilege`, one line).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from queryeval.engines.query.base import QueryRefused
from queryeval.engines.query.neighbours.pg_names import query_names, table_refs, unqualify
from queryeval.engines.query.worker_handle import WorkerHandle
from queryeval.errors import ConfigError

__all__ = ["ORIGINAL", "NoTempPrivilege", "PgFileEngine", "PgRunner", "neighbour_query",
           "neighbour_rows", "pg_neighbours", "query_names", "table_refs", "unqualify"]

FORMAT = "queryeval-pg-neighbour/2"
"""/2: cells in :mod:`queryeval.io.typedjson`'s form (/1 had an encoder of its own)."""
ORIGINAL = Path("<the real database>")
"""What :meth:`PgRunner.run` takes for the user's own tables (no temporary table loaded)."""
LOAD_TIMEOUT_S = 60.0


class NoTempPrivilege(ConfigError):
    """The login role may not create temporary tables in the database."""


# ------------------------------------------------------------------ neighbour files


def encode(value: Any) -> Any:
    """A cell as a neighbour file holds it: the run log's typed, lossless JSON form
    (:func:`queryeval.io.typedjson.to_json`: dates, times, intervals, decimals, bytes, UUIDs,
    NaN/±inf tagged; :func:`decode` reads it back equal). A value of a type that form lacks
    (a psycopg range) is written as its text, as before."""
    from queryeval.io.typedjson import UnwritableValue, to_json

    try:
        return to_json(value)
    except UnwritableValue:
        return str(value)


def decode(value: Any) -> Any:
    """The value :func:`encode` wrote (:func:`queryeval.io.typedjson.from_json`)."""
    from queryeval.io.typedjson import from_json

    return from_json(value)


def neighbour_rows(path: Path) -> dict[str, dict[str, list]]:
    """Every table of a PostgreSQL neighbour file: ``{table: {"columns", "rows"}}`` (cells
    as :func:`..neighbours.plain` gives them: the file already holds that form)."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: {"columns": list(t["columns"]), "rows": [list(row) for row in t["rows"]]}
            for name, t in doc["tables"].items()}


# ------------------------------------------------------------------ the worker's handle


class PgRunner(WorkerHandle):
    """One sandboxed :mod:`.pg_worker` on ``url``: the schema, loads and queries; use as a
    context manager (closing stops the worker, which drops its temporary tables first; the
    server drops any left when the session ends). ``run`` raises QueryRefused /
    QueryTimeout / QueryFailed as the engine does."""

    max_result_bytes = 0

    def __init__(self, url: str, *, memory_limit_bytes: int | None = None,
                 connect_timeout_s: float = 10.0) -> None:
        from queryeval.engines.query.base import DEFAULT_MEMORY_LIMIT_BYTES, check_memory_limit
        from queryeval.engines.worker import WorkerProcess

        self.url, self.connect_timeout_s = url, connect_timeout_s
        memory = check_memory_limit(memory_limit_bytes or DEFAULT_MEMORY_LIMIT_BYTES)
        self.memory_limit_bytes = memory
        self._hold(WorkerProcess("queryeval.engines.query.neighbours.pg_worker",
                                 [str(memory or 0)]))
        self._worker.name = "postgres neighbour worker"
        self._schemas: dict[tuple, dict] = {}
        self._visible: list[list[str]] = []
        """The loaded neighbour's tables that their unqualified names reach on the server."""
        self._loaded: tuple[str, str, int] | None = None
        """(the key the worker holds, the neighbour file's key, the worker's start count)."""
        self.dialect = "postgres"

    def _init(self) -> dict[str, Any]:
        from queryeval.engines.query import base

        return {"url": self.url, "connect_timeout_s": self.connect_timeout_s,
                "checks": base.QUERY_CHECKS}

    def start(self) -> None:
        self._ensure_started(self._init())

    def _request(self, request: dict, timeout_s: float) -> Any:
        """The payload of ``request``; a lost connection is retried by a fresh worker except
        for a query (the temporary tables it ran on went with the connection)."""
        from queryeval.engines.query.sql import KILL_GRACE_S, raise_worker_error

        status, payload, _ms = self._ask(self._init(), request, timeout_s + KILL_GRACE_S,
                                         retry_lost=request.get("op") != "query")
        if status != "ok":
            raise_worker_error(payload)
        return payload

    def schema(self, relations: list[Any], timeout_s: float) -> dict:
        """:func:`.pg_schema.read_catalog` in the worker, read once per set of relations by
        this runner (a run's builds share one: its golds see the same schema)."""
        key = tuple(tuple(r) if isinstance(r, list) else r for r in relations)
        if key not in self._schemas:
            self._schemas[key] = self._request(
                {"op": "schema", "relations": relations, "timeout_s": timeout_s},
                timeout_s * 4)
        return self._schemas[key]

    def release(self) -> None:
        """Drop the loaded neighbour's temporary tables now."""
        if self._loaded is not None and self._worker.alive():
            self._request({"op": "drop"}, LOAD_TIMEOUT_S)
        self._loaded = None

    def _load(self, key: str, doc: dict) -> dict[str, list[int]]:
        tables = [{"name": name, "columns": t["columns"],
                   "rows": [[decode(v) for v in row] for row in t["rows"]]}
                  for name, t in doc["tables"].items()]
        self._loaded = None
        kept = self._request({"op": "load", "key": key, "ddl": doc["ddl"], "tables": tables,
                              "timeout_s": LOAD_TIMEOUT_S}, LOAD_TIMEOUT_S * 2)
        self._loaded = (key, key, self._worker.starts)
        self._visible = [list(v) for v in doc.get("visible", [])]
        return kept["kept"]

    def write(self, schema: Any, path: Path, rows: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
        """For :func:`.distill._build`: load a candidate's rows (the constraints refuse what
        breaks them) and write the rows that went in to ``path``; they stay loaded."""
        doc = {"format": FORMAT, "ddl": [t.ddl for t in schema.tables] + schema.extra_ddl,
               "visible": getattr(schema, "visible", []),
               "tables": {t.name: {"columns": [c.name for c in t.columns],
                                   "rows": [[encode(v) for v in r] for r in rows.get(t.name, ())]}
                          for t in schema.tables}}
        kept = self._load(f"{path}:candidate", doc)
        out: dict[str, list[tuple]] = {}
        for name, t in doc["tables"].items():
            t["rows"] = [t["rows"][i] for i in kept.get(name, [])]
            out[name] = [tuple(rows[name][i]) for i in kept.get(name, [])]
        text = json.dumps(doc, sort_keys=False)
        Path(path).write_text(text, encoding="utf-8")
        assert self._loaded is not None
        self._loaded = (self._loaded[0], _file_key(path, text), self._worker.starts)
        return out

    def ensure(self, path: Path) -> str:
        """Load the neighbour file ``path`` unless it is what the worker holds; its key."""
        from queryeval.engines.query.base import QueryFailed

        text = Path(path).read_text(encoding="utf-8")
        key = _file_key(path, text)
        if self._loaded is not None and self._loaded[1:] == (key, self._worker.starts) \
                and self._worker.alive():
            return self._loaded[0]
        doc = json.loads(text)
        kept = self._load(key, doc)
        if any(len(kept.get(n, [])) != len(t["rows"]) for n, t in doc["tables"].items()):
            self.release()
            raise QueryFailed(f"the neighbour {Path(path).name} no longer fits the server's "
                              "schema (rows refused on load)")
        return key

    def run(self, path: Path, query: str, timeout_s: float,
            max_rows: int) -> tuple[list[str], list[Any], bool]:
        """(columns, rows, truncated) of ``query`` on the neighbour file ``path``, or on the
        real tables when ``path`` is :data:`ORIGINAL`."""
        from queryeval.engines.query import base
        from queryeval.engines.query.postgres import check_postgres
        from queryeval.engines.query.sql import check_sql_length

        check_sql_length(query)
        if base.QUERY_CHECKS:
            check_postgres(query)
        key = None
        if Path(path) != ORIGINAL:
            key = self.ensure(path)
            query = unqualify(query, self._visible)  # public.emp -> emp, when provably so
        else:
            self._loaded = None  # the worker drops the temporary tables first
        relations, functions = query_names(query)
        request = {"op": "query", "key": key, "query": query, "functions": functions,
                   "relations": relations, "timeout_s": timeout_s, "max_rows": max_rows}
        if self.max_result_bytes:
            request["max_result_bytes"] = self.max_result_bytes
        payload = self._request(request, timeout_s)
        return payload["columns"], payload["rows"], payload["truncated"]


def neighbour_query(path: Path, query: str) -> str:
    """``query`` as it runs on the neighbour file ``path`` (its provably equivalent
    qualifiers dropped: :func:`unqualify`); QueryRefused when it still names a schema."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    query = unqualify(query, [list(v) for v in doc.get("visible", [])])
    query_names(query)
    return query


def _file_key(path: Path, text: str) -> str:
    return f"{Path(path).name}:{hashlib.sha256(text.encode()).hexdigest()[:20]}"


class PgFileEngine:
    """One neighbour file through a (pooled) :class:`PgRunner`, as ``_execute`` uses an
    engine."""

    dialect = "postgres"

    def __init__(self, runner: PgRunner, path: Path) -> None:
        self.runner, self.path = runner, Path(path)

    @property
    def sandbox(self) -> dict[str, str] | None:
        return self.runner.sandbox

    def execute(self, query: str, *, timeout_s: float, max_rows: int) -> Any:
        from queryeval.engines.query.base import QueryResult, check_limits

        check_limits(timeout_s, max_rows)
        start = time.perf_counter()
        columns, rows, truncated = self.runner.run(self.path, query, timeout_s, max_rows)
        return QueryResult(columns=columns, rows=rows, truncated=truncated,
                           elapsed_ms=(time.perf_counter() - start) * 1000.0, kind="sql",
                           extra={"sandbox": self.runner.sandbox})


# ------------------------------------------------------------------ the build


def set_key(doc: dict, gold: str, n: int, seed: int) -> str:
    from queryeval.engines.query.neighbours.distill import GENERATOR_VERSION

    schema = {k: v for k, v in doc.items() if k not in ("user", "database")}
    text = json.dumps([GENERATOR_VERSION, "postgres", schema, gold, n, seed],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _probe(runner: PgRunner, schema: Any, gold: str, where: Path, timeout_s: float) -> None:
    """Run the gold on an empty neighbour (every table, no rows): raise QueryRefused when
    the worker refuses it there -- it would read the real tables (a role whose search_path
    puts pg_temp after public, a function outside pg_catalog) -- before any set is built or
    read from the cache, so such a gold gets a reason, never a set it cannot run on."""
    handle, name = tempfile.mkstemp(prefix=".probe-", suffix=".json", dir=where)
    os.close(handle)
    path = Path(name)
    try:
        runner.write(schema, path, {})
        try:
            runner.run(path, gold, timeout_s, 1)
        except QueryRefused as exc:
            raise QueryRefused(f"would read the real tables on a neighbour: {exc.reason}") \
                from None
        except Exception:  # noqa: BLE001 - failing on no rows is the candidates' business
            pass
    finally:
        path.unlink(missing_ok=True)
        runner.release()


def pg_neighbours(url: str, gold: str, n: int, *, seed: int = 0, cache_dir: Path | None = None,
                  timeout_s: float = 30.0, max_rows: int = 100_000,
                  memory_limit_bytes: int | None = None, runner: PgRunner | None = None,
                  build_timeout_s: float | None = None) -> Any:
    """``n`` neighbour databases of the PostgreSQL database at ``url`` distilled for
    ``gold`` (a :class:`.distill.NeighbourSet` of JSON files); read from the cache when
    built before for the same schema. Raises QueryRefused when the gold is not one
    read-only query, names a schema or reads what the neighbours cannot hold (a view, a
    system catalog), :class:`NoTempPrivilege`, QueryExecutionError when it fails on the
    real tables. ``runner``: a worker to use (and leave running, its temporary tables
    dropped) instead of one started for this build -- the schema is read on every call, so
    a run's builds share one (``TestSuite``). ``build_timeout_s``: the whole build's
    deadline (:class:`.distill.BuildClock`)."""
    from queryeval.engines.query import base
    from queryeval.engines.query.neighbours import cache_root, fuzz
    from queryeval.engines.query.neighbours.distill import BuildClock, _build, cached_set
    from queryeval.engines.query.neighbours.mutants import mutants as make_mutants
    from queryeval.engines.query.neighbours.pg_schema import to_schema
    from queryeval.engines.query.postgres import check_postgres
    from queryeval.metrics.tables import query_is_ordered

    if base.QUERY_CHECKS:  # off only in tests: then the worker, sandbox and server hold
        check_postgres(gold)
    refs = table_refs(gold)
    started = time.perf_counter()
    clock = BuildClock(build_timeout_s)
    own = runner is None
    runner = runner or PgRunner(url, memory_limit_bytes=memory_limit_bytes)
    try:
        doc = clock.call(lambda t: runner.schema(refs, t), timeout_s)
        if not doc["temp_privilege"]:
            raise NoTempPrivilege(
                f"the role {doc['user']} may not create temporary tables in database "
                f"{doc['database']} (GRANT TEMPORARY ON DATABASE … TO {doc['user']}): no "
                "neighbour databases")
        folder = (cache_dir or cache_root()) / set_key(doc, gold, n, seed)
        folder.parent.mkdir(parents=True, exist_ok=True)
        schema = to_schema(doc)
        schema.visible = [[t["schema"], t["name"]] for t in doc["tables"]  # type: ignore[attr-defined]
                          if t["visible"]]
        gold = unqualify(gold, schema.visible)  # type: ignore[attr-defined]
        query_names(gold)  # a schema-qualified name left: refused, with the reason
        clock.call(lambda t: _probe(runner, schema, gold, folder.parent, t), timeout_s)
        cached = cached_set(folder, "postgres")
        if cached is not None:
            return cached
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
        try:
            out = _build(runner, ORIGINAL, work, folder, "postgres", gold, n, seed, schema,
                         fuzz.gold_constants(gold, "postgres"), make_mutants(gold, "postgres"),
                         bool(query_is_ordered(gold, "sql")), started, timeout_s, max_rows,
                         write=runner.write, suffix=".json", clock=clock)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return out
    finally:
        if own:
            runner.close()
        else:
            try:
                runner.release()
            except Exception:  # noqa: BLE001 - a worker that died took its tables with it
                pass

