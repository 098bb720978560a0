"""Neighbour databases and graphs for test-suite accuracy (docs/test-suite.md).

A prediction that returns the gold's rows on the suite's database may be right by accident
(``WHERE name IN ('bob', 'carol')`` for ``WHERE salary > 100``). Test-suite accuracy (Zhong,
Yu & Klein, EMNLP 2020) runs both queries on more databases, distilled so that they tell
near-misses of the gold apart. This package builds those databases from the suite's own:

* :func:`sql_neighbours` (sqlite, DuckDB): the same schema; rows fuzzed per column type with
  the gold's constants and the original values (:mod:`.fuzz`), the declared constraints
  enforced on insert (:mod:`.schema`); among the candidates, those that tell apart a mutant
  of the gold (:mod:`.mutants`) the earlier ones did not are kept (:mod:`.distill`).
* :func:`pg_neighbours` (:mod:`.pg`): the same for a PostgreSQL database, each neighbour
  a set of rows loaded into temporary tables of a sandboxed worker's connection.
* :func:`sparql_neighbours` (:mod:`.graphs`): the suite's graph with the triples the gold's
  patterns touch perturbed (dropped, duplicated onto fresh IRIs, retyped, rewired).

Both are deterministic from a seed and cached per gold under the queryeval cache folder
(``testsuite`` under :func:`queryeval.io.caches.cache_root`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from queryeval.engines.query.neighbours.distill import NeighbourSet, sql_neighbours
    from queryeval.engines.query.neighbours.graphs import sparql_neighbours
    from queryeval.engines.query.neighbours.pg import pg_neighbours

# Imported when first asked for: a sandboxed worker that imports one module of this package
# (pg_worker, the neighbour runner's) does not pay for the builders it never runs.
_LAZY = {
    "NeighbourSet": "queryeval.engines.query.neighbours.distill",
    "sql_neighbours": "queryeval.engines.query.neighbours.distill",
    "sparql_neighbours": "queryeval.engines.query.neighbours.graphs",
    "pg_neighbours": "queryeval.engines.query.neighbours.pg",
}

__all__ = ["NeighbourSet", "cache_root", "database_rows", "pg_neighbours", "sparql_neighbours",
           "sql_neighbours", "under_constrained"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def cache_root() -> Path:
    """``testsuite`` under the root of every queryeval cache
    (:func:`queryeval.io.caches.cache_root`), resolved: the sandboxed workers that read and
    write it are told its real path."""
    from queryeval.io.caches import cache_dir

    return cache_dir("testsuite").resolve()


def plain(value: Any) -> Any:
    """A cell as the run log holds it, losslessly: JSON's own values as they are, the rest
    (UUID, interval, decimal, bytes, dates and times, NaN/±inf) in the typed form of
    :mod:`queryeval.io.typedjson` (``from_json`` reads it back equal). A value with no
    typed form is left as it is: the run log makes its case an error naming the field."""
    from queryeval.io.typedjson import UnwritableValue, to_json

    try:
        return to_json(value)
    except UnwritableValue:
        return value


def database_rows(path: Path, dialect: str, runner: Any = None,
                  timeout_s: float = 30.0) -> dict[str, dict[str, list]]:
    """Every table of a (small) neighbour database: ``{table: {"columns", "rows"}}``. A
    sqlite or DuckDB file is read by a sandboxed worker (``runner``, a
    :class:`.runner.NeighbourRunner`, else one started for this call), never here."""
    if dialect == "json":  # a PostgreSQL neighbour: its rows, loaded into temporary tables
        from queryeval.engines.query.neighbours.pg import neighbour_rows

        return neighbour_rows(path)
    if dialect == "sparql":
        from queryeval.engines.query.neighbours.graphs import nt_lines

        return {"triples": {"columns": ["triple"], "rows": [[t] for t in sorted(nt_lines([path]))]}}
    from queryeval.engines.query.neighbours.runner import NeighbourRunner
    from queryeval.engines.query.sandbox import allowed

    # sqlite, DuckDB: read in a sandboxed worker (the run's own, or one for this call)
    own = runner is None
    runner = runner or NeighbourRunner(dialect, [path])
    try:
        if not own and not allowed(str(path), runner.roots):
            runner.allow([*runner.roots, path])
        tables = runner.rows(path, timeout_s)
    finally:
        if own:
            runner.close()
    return {name: {"columns": t["columns"], "rows": [[plain(v) for v in r] for r in t["rows"]]}
            for name, t in tables.items()}


def under_constrained(gold: str, source: str | Path, n: int = 20, seed: int = 0, *,
                      cache_dir: Path | None = None) -> list[str]:
    """The mutants of a SQL ``gold`` (:mod:`.mutants`) that neither ``source`` (a sqlite or
    DuckDB file) nor any of its ``n`` neighbour databases tells apart from it: a gold whose
    trivial variants no database separates asks an under-constrained question (or carries a
    redundant clause, e.g. ``DISTINCT`` over a key). For ``queryeval audit``. A
    ``postgresql://`` URL builds them on the server (:func:`.pg.pg_neighbours`); a gold
    the neighbours cannot run there (a schema-qualified name, a view, no TEMPORARY
    privilege) has none to report."""
    from queryeval.engines.query.neighbours.distill import sql_neighbours

    if str(source).startswith(("postgresql://", "postgres://")):
        from queryeval.engines.query.base import QueryRefused
        from queryeval.engines.query.neighbours.pg import NoTempPrivilege, pg_neighbours

        try:
            built = pg_neighbours(str(source), gold, n, seed=seed, cache_dir=cache_dir)
        except (QueryRefused, NoTempPrivilege):
            return []
        return list(built.survivors)
    dialect = "duckdb" if Path(source).suffix.lower() == ".duckdb" else "sqlite"
    return list(sql_neighbours(source, dialect, gold, n, seed=seed, cache_dir=cache_dir).survivors)
