"""Distillation: of the candidate neighbour databases, keep those that tell apart a mutant
of the gold that no earlier database (nor the original) told apart; fill up to N with the
next candidates whose gold result is not empty. Deterministic from the seed; cached per
(database contents, dialect, gold, N, seed) in a folder of the test-suite cache.

The gold and its mutants are untrusted queries (a suite may be downloaded; a mutant is
derived from its gold): they run, on the original and on every candidate, in one sandboxed
worker process per build (:mod:`.runner`: the worker of predictions, the operating-system
sandbox, the deadline held by a kill, the memory cap), never in this process. So does every
other step that opens the user's database or writes a neighbour with an engine: reading its
schema and sampling its values, replaying its DDL, inserting the candidates' rows
(:meth:`.runner.NeighbourRunner.schema` / ``write``).

A candidate into which no row could be written is no neighbour (a gold and a prediction
that both return nothing there are not thereby equal): it is dropped, and a set left with
none names the engine's reason (:attr:`NeighbourSet.reason`). The same holds when no row
ever went into a table the gold reads: every verdict on it would come from an empty table.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from queryeval.engines.query.base import QueryExecutionError, QueryTimeout
from queryeval.engines.query.neighbours import fuzz
from queryeval.engines.query.neighbours.mutants import mutants as make_mutants
from queryeval.io.caches import read_record, write_record

GENERATOR_VERSION = 3
"""Bumped whenever the same inputs would give other databases (old cache folders are then
simply not found)."""
CANDIDATES_PER_NEIGHBOUR = 4
MIN_CANDIDATES = 24
SUFFIX = {"sqlite": ".sqlite", "duckdb": ".duckdb"}
MUTANT_TIME_FACTOR = 4.0
EXPAND_CANDIDATES = 16
"""Most candidates of the second pass (:func:`.fuzz.expand`), tried while mutants live."""
_SCHEMAS: dict[tuple, Any] = {}


class BuildTimeout(QueryTimeout):
    """The whole build of one gold's neighbour set ran past its deadline
    (:class:`BuildClock`): no set, never a verdict from a part of one."""


class BuildClock:
    """One deadline for a whole neighbour build (schema, mutants on the original, every
    candidate's write and queries): each step gets its own timeout or what is left of the
    build's, whichever is less, and a step cut short by the build's deadline -- or any step
    once it has passed -- raises :class:`BuildTimeout`. ``seconds`` None: no overall
    deadline (each step still has its own)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.until = None if seconds is None else time.monotonic() + seconds

    def overrun(self) -> BuildTimeout:
        return BuildTimeout(f"the neighbour build ran past its deadline ({self.seconds:g} s, "
                            "score_timeout_s)")

    def cap(self, timeout_s: float) -> float:
        """``timeout_s``, or what is left of the build when less; raises once none is left."""
        if self.until is None:
            return timeout_s
        left = self.until - time.monotonic()
        if left <= 0:
            raise self.overrun()
        return min(timeout_s, left)

    def check(self) -> None:
        """Raise :class:`BuildTimeout` once the deadline has passed."""
        self.cap(0.0)

    def call(self, step: Any, timeout_s: float) -> Any:
        """``step(budget)`` under :meth:`cap`; its timeout, when the build's deadline cut
        it short, is the build's."""
        budget = self.cap(timeout_s)
        try:
            return step(budget)
        except QueryTimeout:
            if budget < timeout_s:
                raise self.overrun() from None
            raise


def _schema(source: Path, dialect: str, runner: Any, timeout_s: float,
            clock: BuildClock | None = None):
    """:func:`.schema.read_schema` by the sandboxed worker ``runner``, read once per file
    version in a process (every gold of a suite shares its database)."""
    st = source.stat()
    key = (str(source), dialect, st.st_size, st.st_mtime_ns)
    if key not in _SCHEMAS:
        clock = clock or BuildClock(None)
        _SCHEMAS[key] = clock.call(lambda t: runner.schema(source, t), timeout_s)
    return _SCHEMAS[key]


@dataclass
class Neighbour:
    file: str
    """File name in the set's folder."""
    rows: int
    """Rows in all its tables."""
    kills: list[str] = field(default_factory=list)
    """The mutants (SQL) it was kept for: the first database to tell each apart."""
    tables: list[str] = field(default_factory=list)
    """The tables (lower case) it holds a row in (SQL)."""


@dataclass
class NeighbourSet:
    folder: Path
    dialect: str
    neighbours: list[Neighbour]
    mutants: list[list[str]]
    """Every mutant as [what changed, SQL]."""
    refuted_on_original: list[str]
    """Mutants whose result already differs on the original database."""
    survivors: list[str]
    """Mutants that neither the original nor any kept neighbour tells apart from the gold."""
    candidates: int = 0
    executions: int = 0
    """Queries run to generate and distil (gold and mutants, every candidate)."""
    seconds: float = 0.0
    cached: bool = False
    empty_candidates: int = 0
    """Candidates dropped because no row could be written into any of their tables."""
    reason: str = ""
    """Why the set has no neighbour (the engine's words on a refused row), when it has none."""
    tables: list[str] | None = None
    """Every table (lower case) the neighbours hold (SQL); None in a manifest written before
    it was recorded, which :func:`cached_set` then builds again."""
    filled: list[str] = field(default_factory=list)
    """The tables with a row in at least one neighbour (:func:`unseen_tables`)."""
    views: dict[str, list[str]] = field(default_factory=dict)
    """Each view of the schema (lower case) -> the names its query reads."""

    def paths(self) -> list[Path]:
        return [self.folder / n.file for n in self.neighbours]

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["folder"] = str(self.folder)
        doc.pop("cached")
        return doc


def cached_set(folder: Path, dialect: str) -> NeighbourSet | None:
    """The set built before in ``folder`` (its ``manifest.json``), or None to build it: none
    there, a neighbour file missing, or no neighbour at all -- a set whose every candidate
    failed may say more about the machine it was built on (a worker that could not open the
    candidates, as with 4491f97's relative cache folder; a gold timed out on a loaded box)
    than about the gold, and reused it would leave every later run's verdict unknown."""
    doc = read_record(folder / "manifest.json")  # absent or unreadable: build it
    if doc is None:
        return None
    try:
        out = NeighbourSet(**{**doc, "folder": folder, "dialect": dialect,
                              "neighbours": [Neighbour(**x) for x in doc["neighbours"]]})
    except (KeyError, TypeError):  # a manifest of another layout: build it again
        return None
    if not out.neighbours or not all(p.is_file() for p in out.paths()):
        return None
    if dialect != "sparql" and out.tables is None:  # which tables hold rows: not recorded
        return None
    if not any(nb.rows for nb in out.neighbours):  # all empty (a builder before the fix of
        return None  # generated columns wrote none): no neighbour set, build it again
    out.cached = True
    return out


def store_set(final: Path, folder: Path, out: NeighbourSet) -> None:
    """Install the set built in ``final`` (a sibling of ``folder``) as ``folder``: its
    manifest written (:func:`queryeval.io.caches.write_record`), then the folder renamed into
    place, so :func:`cached_set` sees a whole set or none; when another process built the
    same set first, theirs is kept."""
    write_record(final / "manifest.json", json.dumps(out.to_json(), indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    try:
        os.replace(final, folder)
    except OSError:  # another process built the same set first: use theirs
        shutil.rmtree(final, ignore_errors=True)


def _canon(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        f = float(value)
        return round(f, 9) if math.isfinite(f) else str(f)
    return str(value) if value is not None else None


def result_key(columns: list[str], rows: list, ordered: bool) -> Any:
    """A result reduced for telling queries apart: its width and its rows, as a bag (a list
    when the gold sorts)."""
    canon = [tuple(_canon(v) for v in r) for r in rows]
    return (len(columns), canon if ordered else Counter(canon))


def run_key(runner: Any, path: Path, query: str, ordered: bool, timeout_s: float,
            max_rows: int, clock: BuildClock | None = None) -> Any:
    """The :func:`result_key` of ``query`` on the file ``path`` (run by ``runner``, a
    :class:`.runner.NeighbourRunner`); None when it fails. Under ``clock`` (the build's
    deadline): :class:`BuildTimeout` when that deadline cut it short."""
    clock = clock or BuildClock(None)
    try:
        cols, rows, _ = clock.call(lambda t: runner.run(path, query, t, max_rows), timeout_s)
    except BuildTimeout:
        raise
    except QueryExecutionError:
        return None
    return result_key(cols, rows, ordered)


ANY_TABLE = "*"
"""In what a query or view reads: it may read any table (a view sqlglot cannot follow: text
it kept unparsed, a table function in its FROM)."""


def _tables_read(gold: str, dialect: str) -> set[str]:
    """The names of the tables and views ``gold`` reads (:func:`_names_in`); none when it
    does not parse."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(gold, read="postgres" if dialect == "postgres" else dialect)
    except sqlglot.errors.SqlglotError:
        return set()
    return _names_in(tree, dialect)


def table_key(name: str, dialect: str, quoted: bool = True) -> str:
    """A table's name as the engine matches it: PostgreSQL folds an unquoted name to lower
    case and keeps a quoted one as written; sqlite and DuckDB ignore case."""
    if dialect == "postgres":
        return name if quoted else name.lower()
    return name.lower()


def _ident_key(node: Any, dialect: str) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Identifier):
        return table_key(node.name, dialect, bool(node.quoted))
    return table_key(getattr(node, "name", "") or "", dialect, False)


def _names_in(tree: Any, dialect: str) -> set[str]:
    """The names (:func:`table_key`) of the tables and views a parsed query reads. A name is
    a CTE's only where a CTE of that name is in scope (a CTE's own body sees only the CTEs
    before it, unless WITH RECURSIVE), and a schema-qualified name never is. On sqlite,
    ``x IN t`` reads the table ``t`` too. Text sqlglot kept unparsed (a Command) may read
    anything: :data:`ANY_TABLE`."""
    from sqlglot import exp

    if tree.find(exp.Command) is not None:
        return {ANY_TABLE}
    out: set[str] = set()
    for t in tree.find_all(exp.Table):
        if not t.name:
            continue
        key = _ident_key(t.this, dialect)
        if (dialect == "postgres" and key in _PG_VALUE_FUNCTIONS
                and not getattr(t.this, "quoted", False)):
            continue  # FROM current_date: a function sqlglot reads as a table
        if (t.args.get("db") or t.args.get("catalog")) or not _is_cte(t, key, dialect):
            out.add(key)
    if dialect == "sqlite":  # x IN t: sqlglot reads t as a column
        for node in tree.find_all(exp.In):
            items = [node.args["field"]] if node.args.get("field") is not None else \
                node.expressions
            if len(items) == 1 and isinstance(items[0], exp.Column) and not items[0].table:
                out.add(_ident_key(items[0].this, dialect))
    return out


def _is_cte(table: Any, key: str, dialect: str) -> bool:
    """Whether the unqualified ``table`` (keyed ``key``) names a CTE in scope where it is."""
    from sqlglot import exp

    def named(ctes: Iterable[Any]) -> bool:
        return any(c.args.get("alias") is not None
                   and _ident_key(c.args["alias"].this, dialect) == key for c in ctes)

    child, node = table, table.parent
    while node is not None:
        if isinstance(node, exp.With):
            ctes = list(node.expressions)
            at = next((i for i, c in enumerate(ctes) if c is child), None)
            if at is not None and not node.args.get("recursive"):
                ctes = ctes[:at]  # a CTE's body sees the CTEs before it only
            if named(ctes):
                return True
        else:
            with_ = node.args.get("with_") or node.args.get("with")  # (sqlglot's key moved)
            if isinstance(with_, exp.With) and child is not with_ and named(with_.expressions):
                return True
        child, node = node, node.parent
    return False


def view_reads(ddl: Iterable[str], dialect: str) -> dict[str, list[str]]:
    """Each view a schema's ``CREATE VIEW`` statements make (:func:`table_key`) -> the names
    its query reads (:func:`_names_in`); :data:`ANY_TABLE` for a view sqlglot cannot follow
    (text it kept unparsed, a table function such as DuckDB's ``query_table`` in its FROM).
    A statement that does not parse at all is left out: the view it makes is then not
    recreated in the neighbours, and a query reading it fails there."""
    import sqlglot
    from sqlglot import exp

    out: dict[str, list[str]] = {}
    for statement in ddl:
        try:
            tree = sqlglot.parse_one(statement, read="postgres" if dialect == "postgres"
                                     else dialect)
        except sqlglot.errors.SqlglotError:
            continue
        if isinstance(tree, exp.Command):  # CREATE VIEW ... that sqlglot kept as text
            name = _view_name(statement)
            if name:
                out[table_key(name, dialect)] = [ANY_TABLE]
            continue
        if not isinstance(tree, exp.Create) or str(tree.args.get("kind", "")).upper() != "VIEW":
            continue
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        if not getattr(target, "name", "") or tree.expression is None:
            continue
        names = _names_in(tree.expression, dialect)
        if any(not t.name for t in tree.expression.find_all(exp.Table)):
            names = {ANY_TABLE}  # a table function: what it reads is not in the text
        out[_ident_key(target.this, dialect)] = sorted(names)
    return out


def _view_name(statement: str) -> str:
    """The name a ``CREATE [OR REPLACE] [TEMP] VIEW [IF NOT EXISTS] name`` statement makes
    (its last dotted part, unquoted), or ''."""
    import re

    m = re.match(r'\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?VIEW\s+'
                 r'(?:IF\s+NOT\s+EXISTS\s+)?((?:"[^"]+"|`[^`]+`|\[[^\]]+\]|[\w$]+)'
                 r'(?:\s*\.\s*(?:"[^"]+"|`[^`]+`|\[[^\]]+\]|[\w$]+))*)', statement, re.I)
    if not m:
        return ""
    last = re.split(r'\s*\.\s*(?=(?:"|`|\[|[\w$]))', m.group(1))[-1]
    return last.strip('"`[]')


def tables_reached(names: Iterable[str], views: dict[str, list[str]],
                   tables: Iterable[str]) -> set[str]:
    """What ``names`` read, views followed: each name that is no view, and through every
    view among them the names it reads, transitively (the views themselves left out); a
    view that may read anything (:data:`ANY_TABLE`) reads every one of ``tables``."""
    out: set[str] = set()
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name == ANY_TABLE:
            out.update(tables)
        elif name in views:
            todo.extend(views[name])
        else:
            out.add(name)
    return out


def unseen_tables(query: str | None, built: NeighbourSet) -> list[str]:
    """The tables ``query`` reads (through views too) that have no row in any neighbour of
    ``built``: on every neighbour they are empty, so the neighbours cannot tell how ``query``
    depends on their rows. On PostgreSQL a table the neighbours do not hold is one too (the
    worker gives it an empty copy); on sqlite and DuckDB a name that is neither a table
    nor a view of the schema (a shadow or catalog table) is not counted. A view that may
    read anything (:data:`ANY_TABLE`) counts every table. None are found in a query that
    does not parse, or in a set that did not record its tables."""
    if not query or built.tables is None or built.dialect == "sparql":
        return []
    names = tables_reached(_tables_read(query, built.dialect), built.views, built.tables)
    if built.dialect != "postgres":
        names &= set(built.tables)
    return sorted(names - set(built.filled))


_PG_VALUE_FUNCTIONS = frozenset({
    "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp",
    "current_user", "current_role", "session_user", "user", "current_catalog",
    "current_schema"})
"""PostgreSQL's functions called without parentheses, which sqlglot reads in a FROM as a
table (unquoted; a quoted ``"user"`` is a table)."""


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def set_key(source: Path, dialect: str, gold: str, n: int, seed: int) -> str:
    doc = json.dumps([GENERATOR_VERSION, _digest(source), dialect, gold, n, seed])
    return hashlib.sha256(doc.encode()).hexdigest()[:24]


def sql_neighbours(source: str | Path, dialect: str, gold: str, n: int, *, seed: int = 0,
                   cache_dir: Path | None = None, timeout_s: float = 30.0,
                   max_rows: int = 100_000,
                   memory_limit_bytes: int | None = None,
                   build_timeout_s: float | None = None, runner: Any = None) -> NeighbourSet:
    """``n`` neighbour databases of ``source`` (a sqlite or DuckDB file) distilled for
    ``gold``; read from the cache when built before. Raises QueryRefused when the gold is not
    one read-only query, QueryExecutionError when it fails on the original. Every query runs
    in the sandboxed worker of :mod:`.runner` under ``timeout_s`` and
    ``memory_limit_bytes`` (None: the engines' default cap); the whole build under
    ``build_timeout_s`` (:class:`BuildClock`; past it :class:`BuildTimeout`, nothing
    cached). ``runner``: a :class:`.runner.NeighbourRunner` of this dialect to use and
    leave running (a run's builds share one: one worker start per run, not per gold),
    allowed ``source`` and the cache folder; else one started for this build."""
    from queryeval.engines.query import base
    from queryeval.engines.query.neighbours import cache_root
    from queryeval.engines.query.neighbours.runner import NeighbourRunner
    from queryeval.engines.query.sql_safety import check_sql
    from queryeval.metrics.tables import query_is_ordered

    if base.QUERY_CHECKS:  # off only in tests: then the worker's sandbox alone holds
        check_sql(gold, dialect)  # type: ignore[arg-type]
    source = Path(source).resolve()
    folder = (cache_dir or cache_root()) / set_key(source, dialect, gold, n, seed)
    cached = cached_set(folder, dialect)
    if cached is not None:
        return cached
    started = time.perf_counter()
    clock = BuildClock(build_timeout_s)
    ordered = bool(query_is_ordered(gold, "sql"))
    consts = fuzz.gold_constants(gold, dialect)
    muts = make_mutants(gold, dialect)
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
    own = runner is None
    if own:
        runner = NeighbourRunner(dialect, [source, work], memory_limit_bytes=memory_limit_bytes)
    else:
        from queryeval.engines.query.sandbox import allowed

        runner.refused = {}  # this build's refusals only, for its reason
        if not all(allowed(str(p), runner.roots) for p in (source, work)):
            runner.allow([*runner.roots, source, folder.parent])  # (restarts the worker)
    try:
        schema = _schema(source, dialect, runner, timeout_s, clock)
        return _build(runner, source, work, folder, dialect, gold, n, seed, schema, consts,
                      muts, ordered, started, timeout_s, max_rows, clock=clock,
                      write=lambda sch, path, rows: clock.call(
                          lambda t: runner.write(sch, path, rows, t), timeout_s))
    finally:
        if own:
            runner.close()
        shutil.rmtree(work, ignore_errors=True)


def _build(runner: Any, source: Path, work: Path, folder: Path, dialect: str, gold: str,
           n: int, seed: int, schema: Any, consts: Any, muts: list, ordered: bool,
           started: float, timeout_s: float, max_rows: int, *,
           write: Any, suffix: str | None = None,
           clock: BuildClock | None = None) -> NeighbourSet:
    """Generate and distil (module docstring). ``write(schema, path, rows)`` makes one
    candidate and returns the rows that went in (PostgreSQL: :meth:`.pg.PgRunner.write`,
    which loads them into the runner's temporary tables); ``source`` is what ``runner.run``
    takes for the original database. ``clock``: the whole build's deadline (every query
    under it; checked once more before the set is written)."""
    suffix = suffix or SUFFIX[dialect]
    clock = clock or BuildClock(None)
    executions = 0
    runner.start()  # not counted in the gold's time, which sets the mutants' deadline
    t0 = time.perf_counter()
    cols, rows, _ = clock.call(lambda t: runner.run(source, gold, t, max_rows), timeout_s)
    # A mutant (a dropped join condition ...) may cost far more than the gold on a large
    # database: each gets a few times the gold's own time, at most timeout_s (one that
    # runs out is simply not told apart here; the neighbours are small).
    mutant_s = min(timeout_s, 1.0 + MUTANT_TIME_FACTOR * (time.perf_counter() - t0))
    gold_key = result_key(cols, rows, ordered)
    alive: list[str] = []
    refuted: list[str] = []
    for _, sql in muts:
        key = run_key(runner, source, sql, ordered, mutant_s, max_rows, clock)
        executions += 1
        (refuted if key is not None and key != gold_key else alive).append(sql)
    kept: list[Neighbour] = []
    spares: list[Neighbour] = []
    empties: list[Neighbour] = []
    seeds: list[dict[str, list[tuple]]] = []  # rows of candidates the gold answers on
    blank = 0  # candidates with no row in any table
    filled: set[str] = set()  # tables some candidate got a row into
    budget = max(MIN_CANDIDATES, CANDIDATES_PER_NEIGHBOUR * n)
    k = 0

    def judge(rows: dict[str, list[tuple]]) -> None:
        """Write candidate ``k`` and keep it when it tells a living mutant apart."""
        nonlocal k, blank, executions, alive
        name = f"candidate_{k:03d}{suffix}"
        written = write(schema, work / name, rows)
        k += 1
        filled.update(table_key(t, dialect) for t, r in written.items() if r)
        if not any(written.values()):
            blank += 1
            return  # no row went in: this database judges nothing
        key = run_key(runner, work / name, gold, ordered, timeout_s, max_rows, clock)
        executions += 1
        if key is None:
            return  # the gold fails here: this database judges nothing
        killed = []
        for sql in alive:
            other = run_key(runner, work / name, sql, ordered, mutant_s, max_rows, clock)
            executions += 1
            if other is not None and other != key:
                killed.append(sql)
        nb = Neighbour(name, sum(len(r) for r in written.values()), killed,
                       sorted({table_key(t, dialect) for t, r in written.items() if r}))
        if any(c is not None for row in key[1] for c in row):  # an answer, not only NULLs
            seeds.append(written)  # (an aggregate over no row gives one row of NULL)
        if killed:
            kept.append(nb)
            alive = [s for s in alive if s not in killed]
        elif key[1]:
            spares.append(nb)
        else:
            empties.append(nb)  # the gold returns nothing here: used only to fill up

    # Stop at N kept; or, once N are at hand, when no mutant is left or after 2N tries
    # (a mutant equivalent to the gold is never told apart: it must not eat the budget).
    while k < budget and len(kept) < n and (
            len(kept) + len(spares) < n or (alive and k < 2 * n)):
        rng = random.Random(f"{seed}:{k}:{gold}")
        size = 2 + (k * (fuzz.MAX_ROWS - 2)) // max(budget - 1, 1)  # small ones first
        judge(fuzz.generate(schema, consts, rng, size))
    # Second pass: a mutant still alive is often told apart only by the rows that
    # answer the gold, repeated or nearly (DISTINCT on a text column, MIN/MAX within a
    # group): twins of the rows of candidates the gold returned rows on (fuzz.expand).
    for extra in range(EXPAND_CANDIDATES if n else 0):
        if not alive or not seeds or len(kept) >= n:
            break
        judge(fuzz.expand(schema, seeds[extra % len(seeds)], consts,
                          random.Random(f"{seed}:expand:{extra}:{gold}")))
    chosen = (kept + spares + empties)[:n]
    reason = ""
    views = view_reads(getattr(schema, "extra_ddl", None) or (), dialect)
    tables = {table_key(t.name, dialect) for t in schema.tables}
    unfilled = sorted(tables_reached(_tables_read(gold, dialect), views, tables) & tables
                      - filled)
    if unfilled:  # every neighbour of the gold has these empty: none of them judges it
        chosen = []
    if not chosen:
        from queryeval.engines.query.neighbours.schema import NOT_RECREATED

        refused = getattr(runner, "refused", None) or {}
        why = "; ".join(f"{t}: {refused[t]}" for t in sorted(refused)
                        if not t.startswith(NOT_RECREATED)
                        and (not unfilled or table_key(t, dialect) in unfilled))
        missing = "; ".join(f"{t.removeprefix(NOT_RECREATED)} ({refused[t]})"
                            for t in sorted(refused) if t.startswith(NOT_RECREATED))
        if unfilled:
            reason = (f"no row could be written into {', '.join(unfilled)} in any candidate "
                      "database" + (f" ({why})" if why else ""))
        elif blank:
            reason = (f"no row could be written into any of {blank} candidate database(s)"
                      + (f" ({why})" if why else ""))
        elif missing:  # the gold failed on each: say what the candidates lack
            reason = ("the gold failed on every candidate database, in which this could not "
                      f"be recreated: {missing}")
    clock.check()  # past the build's deadline now: no set
    final = Path(tempfile.mkdtemp(prefix=".ready-", dir=folder.parent))
    for i, nb in enumerate(chosen):
        new = f"neighbour_{i:03d}{suffix}"
        os.replace(work / nb.file, final / new)
        nb.file = new
    out = NeighbourSet(folder, dialect, chosen, [list(m) for m in muts], refuted, alive,
                       k, executions, time.perf_counter() - started, empty_candidates=blank,
                       reason=reason, tables=sorted(tables),
                       filled=sorted({t for nb in chosen for t in nb.tables}), views=views)
    store_set(final, folder, out)
    out.folder = folder
    return out
