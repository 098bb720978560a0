"""The schema and data of a sqlite or DuckDB database, read once, and neighbour databases
written with the same schema and constraints enforced.

:func:`read_schema` gives every table's columns (declared type, NOT NULL, default), its
primary key, its unique column sets and its foreign keys, the DDL that recreates it (the
database's own ``CREATE`` statements), and the values each column holds (a sample). Views
come along as DDL. :func:`write_database` recreates the schema in a new file and inserts
generated rows one at a time with every declared constraint enforced (sqlite:
``PRAGMA foreign_keys=ON``; DuckDB enforces keys always), so a row that would break one --
a CHECK this module does not read included -- is left out rather than written.

What a schema holds beyond plain tables: generated columns (sqlite's, DuckDB's) are not
among a table's :attr:`Table.columns` -- the engine computes them in the neighbour as in
the original, and an insert naming one is refused; DuckDB sequences are recreated before
the tables (a key ``DEFAULT nextval('s')`` needs its sequence); a sqlite virtual table
(FTS5 ...) is recreated by its own ``CREATE VIRTUAL TABLE``, which makes its shadow tables,
so those are neither read nor created again. Triggers and macros are not recreated.

Both functions open a user's database or write one with an engine: they run only in the
sandboxed neighbour worker (:mod:`..sql_worker`, ``op`` ``"schema"`` / ``"write"``), under
its deadline, memory cap, Landlock and seccomp, never in the evaluating process
(docs/execution.md). DuckDB is opened there with external access and extension loading
off as well, so a view over ``read_csv('<path>')`` or a URL is not bound by the replay.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAMPLE_VALUES = 50
"""Distinct values of a column read from the original database (the fuzzer's seeds)."""


NOT_RECREATED = "not recreated: "
"""The key prefix, in a write's ``refused``, of a view or index statement the neighbour could
not run (the rest of the key: the statement), beside the tables whose rows were refused."""


@dataclass
class Column:
    name: str
    type: str
    """Declared type, upper case ('' when none)."""
    not_null: bool = False


@dataclass
class ForeignKey:
    columns: tuple[str, ...]
    table: str
    refs: tuple[str, ...]


@dataclass
class Table:
    name: str
    columns: list[Column]
    ddl: str
    primary_key: tuple[str, ...] = ()
    unique: list[tuple[str, ...]] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    values: dict[str, list[Any]] = field(default_factory=dict)
    """A sample of the distinct non-null values of each column in the original data."""
    rows: int = 0
    """Rows in the original table."""
    virtual: bool = False
    """A sqlite virtual table (``CREATE VIRTUAL TABLE``): no keys are read from it."""

    def keys(self) -> list[tuple[str, ...]]:
        """Every column set that must be unique (primary key first)."""
        return ([self.primary_key] if self.primary_key else []) + self.unique


@dataclass
class Schema:
    dialect: str
    tables: list[Table]
    """In an order where every referenced table comes before the tables that refer to it
    (self references and cycles aside)."""
    extra_ddl: list[str] = field(default_factory=list)
    """Views and indexes, created after the tables."""
    first_ddl: list[str] = field(default_factory=list)
    """Created before the tables (DuckDB sequences)."""

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name.lower() == name.lower())

    def to_wire(self) -> dict:
        """Plain lists and dicts (what a worker frame may carry, :mod:`queryeval.engines.worker`):
        ``dataclasses.asdict``'s structure (tuples stay tuples), with the containers copied and
        the sample values themselves shared, not deep-copied -- the frame is pickled at once.
        asdict deep-copied every sampled value: 10 ms a write of a 10-table schema, written
        once per candidate database."""
        return {"dialect": self.dialect, "tables": [_table_wire(t) for t in self.tables],
                "extra_ddl": list(self.extra_ddl), "first_ddl": list(self.first_ddl)}

    @classmethod
    def from_wire(cls, doc: dict) -> Schema:
        tables = []
        for t in doc["tables"]:
            tables.append(Table(**{**t, "columns": [Column(**c) for c in t["columns"]],
                                   "primary_key": tuple(t["primary_key"]),
                                   "unique": [tuple(u) for u in t["unique"]],
                                   "foreign_keys": [ForeignKey(tuple(f["columns"]), f["table"],
                                                               tuple(f["refs"]))
                                                    for f in t["foreign_keys"]]}))
        return cls(doc["dialect"], tables, list(doc["extra_ddl"]), list(doc["first_ddl"]))


def _table_wire(t: Table) -> dict:
    return {"name": t.name,
            "columns": [{"name": c.name, "type": c.type, "not_null": c.not_null} for c in t.columns],
            "ddl": t.ddl, "primary_key": tuple(t.primary_key), "unique": [tuple(u) for u in t.unique],
            "foreign_keys": [{"columns": tuple(f.columns), "table": f.table, "refs": tuple(f.refs)}
                             for f in t.foreign_keys],
            "values": {k: list(v) for k, v in t.values.items()}, "rows": t.rows, "virtual": t.virtual}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _order(tables: list[Table]) -> list[Table]:
    """Referenced tables first (a stable topological order; a cycle keeps the given order)."""
    by_name = {t.name.lower(): t for t in tables}
    out: list[Table] = []
    seen: set[str] = set()

    def visit(t: Table, path: set[str]) -> None:
        key = t.name.lower()
        if key in seen or key in path:
            return
        path.add(key)
        for fk in t.foreign_keys:
            parent = by_name.get(fk.table.lower())
            if parent is not None and parent is not t:
                visit(parent, path)
        seen.add(key)
        out.append(t)

    for t in tables:
        visit(t, set())
    return out


def read_schema(path: Path, dialect: str) -> Schema:
    """Schema, constraints and a sample of the values of a sqlite or DuckDB file (read only).
    In the sandboxed worker only (module docstring)."""
    return _read_sqlite(path) if dialect == "sqlite" else _read_duckdb(path)


MEMORY_LIMIT_BYTES = 0
"""DuckDB's ``memory_limit`` here (0: DuckDB's default); the worker sets half its cap."""


def _duckdb_config() -> dict[str, Any]:
    import os

    config: dict[str, Any] = {"enable_external_access": False, "threads": 1,
                              "autoload_known_extensions": False,
                              "autoinstall_known_extensions": False}
    if os.environ.get("TMPDIR"):
        config["temp_directory"] = os.environ["TMPDIR"]
    if MEMORY_LIMIT_BYTES:
        config["memory_limit"] = f"{max(MEMORY_LIMIT_BYTES // 2 // 1024**2, 64)}MB"
    return config


def duckdb_connect(path: Path, *, read_only: bool) -> Any:
    """A DuckDB connection that reaches no file but ``path`` (external access off), loads
    and installs no extension, spills to the worker's temporary folder."""
    import duckdb

    return duckdb.connect(str(path), read_only=read_only, config=_duckdb_config())


_PLAIN_CREATE = re.compile(r"\s*CREATE\s+(UNIQUE\s+)?(TABLE|VIEW|SEQUENCE|INDEX)\s", re.IGNORECASE)
_LEFTOVERS = ("SELECT (SELECT count(*) FROM duckdb_tables()) "
              "+ (SELECT count(*) FROM duckdb_views() WHERE NOT internal) "
              "+ (SELECT count(*) FROM duckdb_sequences()) "
              "+ (SELECT count(*) FROM duckdb_indexes()) "
              "+ (SELECT count(*) FROM duckdb_databases() WHERE NOT internal "
              "AND database_name <> 'memory')")
"""Objects left outside a detached candidate (0 on a clean writer connection)."""


_BLOCK_SIZE = 16384
"""The block size of a candidate DuckDB file (DuckDB's smallest; its default is 256 KiB)."""


class DuckDBWriter:
    """One in-memory DuckDB connection that writes candidate files one after another in
    ``folder`` (``ATTACH`` the new file under its own stem -- the catalog name a direct
    open gives it -- ``USE`` it, write, ``DETACH``: a checkpoint into the one file), so a
    build pays DuckDB's start and shutdown once rather than per candidate (about
    20 ms of 30 a candidate). The same statements in the same order go into each
    file, so each holds what a fresh connection would have written (the bytes may differ).

    The connection reaches no file outside ``folder`` (``allowed_directories``, then external
    access off, then the configuration locked: no replayed statement can change a setting).
    It is used only for a schema whose every DDL is one plain ``CREATE TABLE / VIEW /
    SEQUENCE / INDEX`` (:meth:`fits`): nothing else can leave an object outside the
    candidate for the next one to see; and after each candidate it checks that nothing
    was (``_LEFTOVERS``), else it starts afresh. A DuckDB without ``allowed_directories``
    (before 1.3) or any other schema: a fresh connection per file, as before."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.conn: Any = None
        self.broken = False
        self.small_blocks = True  # until this DuckDB refuses BLOCK_SIZE
        self._fits: dict[tuple, bool] = {}

    def _connect(self) -> Any:
        import duckdb

        self.folder.mkdir(parents=True, exist_ok=True)
        conn = duckdb.connect(":memory:", config={**_duckdb_config(),
                                                  "enable_external_access": True})
        try:
            conn.execute("SET allowed_directories = ?", [[str(self.folder.resolve()) + "/"]])
            conn.execute("SET enable_external_access = false")
            conn.execute("SET lock_configuration = true")
        except duckdb.Error:
            conn.close()
            raise
        return conn

    def fits(self, schema: Schema, path: Path) -> bool:
        """Whether this writer writes ``path`` with ``schema`` (module docstring above)."""
        import duckdb

        if self.broken or path.parent.resolve() != self.folder.resolve():
            return False
        ddl = (*schema.first_ddl, *(t.ddl for t in schema.tables), *schema.extra_ddl)
        if ddl not in self._fits:
            try:
                self.conn = self.conn or self._connect()
            except duckdb.Error:
                self.broken = True  # (no allowed_directories in this DuckDB)
                return False
            try:
                self._fits = {ddl: all(_PLAIN_CREATE.match(d) and
                                       len(self.conn.extract_statements(d)) == 1 for d in ddl)}
            except duckdb.Error:
                self._fits = {ddl: False}
        return self._fits[ddl]

    def attach(self, path: Path) -> Any:
        import duckdb

        self.conn = self.conn or self._connect()
        attach = f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS {_q(path.stem)}"
        try:
            if self.small_blocks:  # a candidate holds a few rows: 16 KiB blocks, not 256
                try:  # (1.8 MB -> 124 KB a 3-table file, 30% less time to write it)
                    self.conn.execute(attach + f" (BLOCK_SIZE {_BLOCK_SIZE})")
                except duckdb.Error:  # a DuckDB before 1.2: no BLOCK_SIZE
                    self.small_blocks = False
                    Path(path).unlink(missing_ok=True)
            if not self.small_blocks:
                self.conn.execute(attach)
            self.conn.execute(f"USE {_q(path.stem)}")
        except Exception:
            self.close()
            raise
        return self.conn

    def detach(self, path: Path) -> None:
        """Close the candidate ``path`` (its checkpoint); a connection left with any object
        outside it, or that cannot detach, is dropped (the next write opens a fresh one)."""
        conn = self.conn
        try:
            conn.execute("USE memory")
            conn.execute(f"DETACH {_q(path.stem)}")
            clean = conn.execute(_LEFTOVERS).fetchone()[0] == 0
        except Exception:  # noqa: BLE001 - then the file is not to be trusted either
            self.close()
            raise
        if not clean:
            self.close()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None


def table_rows(path: Path, dialect: str) -> dict[str, dict[str, list]]:
    """Every table of a (small) neighbour database, ``{table: {"columns", "rows"}}``, the
    values as the engine gives them. In the sandboxed worker only (module docstring)."""
    if dialect == "sqlite":
        conn: Any = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        kinds = _sqlite_kinds(conn)
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name").fetchall() if kinds.get(r[0]) != "shadow"]
    else:
        conn = duckdb_connect(path, read_only=True)
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall()]
    try:
        out = {}
        for name in names:
            cur = conn.execute(f"SELECT * FROM {_q(name)}")
            out[name] = {"columns": [d[0] for d in cur.description],
                         "rows": [list(r) for r in cur.fetchall()]}
        return out
    finally:
        conn.close()


def _sqlite_kinds(conn: Any) -> dict[str, str]:
    """Table name -> ``table`` / ``virtual`` / ``shadow`` (``PRAGMA table_list``, sqlite
    3.37+; an older sqlite tells none apart, and a virtual table's shadow tables then fail
    the replay: the case is unknown with the engine's reason)."""
    try:
        return {r[1]: r[2] for r in conn.execute("PRAGMA main.table_list").fetchall()}
    except sqlite3.Error:
        return {}


def _sample(conn: Any, table: str, column: str) -> list[Any]:
    sql = (f"SELECT DISTINCT {_q(column)} FROM {_q(table)} WHERE {_q(column)} IS NOT NULL "
           f"ORDER BY 1 LIMIT {SAMPLE_VALUES}")
    return [r[0] for r in conn.execute(sql).fetchall()]


def _read_sqlite(path: Path) -> Schema:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables: list[Table] = []
        extra: list[str] = []
        kinds = _sqlite_kinds(conn)
        for kind, name, sql in conn.execute(
                "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall():
            if kind != "table":
                if kind in ("view", "index"):
                    extra.append(sql)
                continue
            if kinds.get(name) == "shadow":  # made by its virtual table's CREATE
                continue
            if kinds.get(name) == "virtual":
                info = conn.execute(f"PRAGMA table_info({_q(name)})").fetchall()
                t = Table(name, [Column(r[1], (r[2] or "").upper(), bool(r[3])) for r in info],
                          sql, virtual=True)
                t.values = {c.name: _sample(conn, name, c.name) for c in t.columns}
                t.rows = conn.execute(f"SELECT count(*) FROM {_q(name)}").fetchone()[0]
                tables.append(t)
                continue
            # table_info leaves out generated columns (table_xinfo shows them): they are
            # computed by the engine, never inserted
            info = conn.execute(f"PRAGMA table_info({_q(name)})").fetchall()
            cols = [Column(r[1], (r[2] or "").upper(), bool(r[3])) for r in info]
            pk = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
            unique = []
            for idx in conn.execute(f"PRAGMA index_list({_q(name)})").fetchall():
                if idx[2] and idx[3] != "pk":  # unique, not the primary key's own index
                    unique.append(tuple(r[2] for r in conn.execute(
                        f"PRAGMA index_info({_q(idx[1])})").fetchall()))
            fks: dict[int, list[tuple]] = {}
            for r in conn.execute(f"PRAGMA foreign_key_list({_q(name)})").fetchall():
                fks.setdefault(r[0], []).append(r)
            foreign = []
            for parts in fks.values():
                parts.sort(key=lambda r: r[1])
                parent = parts[0][2]
                refs = tuple(r[4] for r in parts)
                if any(x is None for x in refs):  # REFERENCES t: its primary key
                    prow = conn.execute(f"PRAGMA table_info({_q(parent)})").fetchall()
                    refs = tuple(r[1] for r in sorted((r for r in prow if r[5]), key=lambda r: r[5]))
                foreign.append(ForeignKey(tuple(r[3] for r in parts), parent, refs))
            t = Table(name, cols, sql, pk, unique, foreign)
            t.values = {c.name: _sample(conn, name, c.name) for c in cols}
            t.rows = conn.execute(f"SELECT count(*) FROM {_q(name)}").fetchone()[0]
            tables.append(t)
    finally:
        conn.close()
    return Schema("sqlite", _order(tables), extra)


def _read_duckdb(path: Path) -> Schema:
    conn = duckdb_connect(path, read_only=True)
    try:
        db = conn.execute("SELECT current_database(), current_schema()").fetchone()
        tables: list[Table] = []
        generated = {(t, c) for t, c in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_catalog = ? AND table_schema = ? AND is_generated = 'ALWAYS'",
            [db[0], db[1]]).fetchall()}
        for name, sql in conn.execute(
                "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = ? "
                "AND schema_name = ? ORDER BY table_oid", [db[0], db[1]]).fetchall():
            cols = [Column(c, (t or "").upper(), not nullable) for c, t, nullable in conn.execute(
                "SELECT column_name, data_type, is_nullable FROM duckdb_columns() "
                "WHERE database_name = ? AND schema_name = ? AND table_name = ? "
                "ORDER BY column_index", [db[0], db[1], name]).fetchall()
                if (name, c) not in generated]  # computed by the engine, never inserted
            t = Table(name, cols, sql)
            for kind, names, parent, refs in conn.execute(
                    "SELECT constraint_type, constraint_column_names, referenced_table, "
                    "referenced_column_names FROM duckdb_constraints() WHERE database_name = ? "
                    "AND schema_name = ? AND table_name = ? ORDER BY constraint_index",
                    [db[0], db[1], name]).fetchall():
                if kind == "PRIMARY KEY":
                    t.primary_key = tuple(names)
                elif kind == "UNIQUE" and tuple(names) not in t.unique:
                    t.unique.append(tuple(names))
                elif kind == "FOREIGN KEY":
                    t.foreign_keys.append(ForeignKey(tuple(names), parent, tuple(refs)))
                elif kind == "NOT NULL":
                    for c in t.columns:
                        if c.name in names:
                            c.not_null = True
            t.values = {c.name: _sample(conn, name, c.name) for c in t.columns}
            t.rows = conn.execute(f"SELECT count(*) FROM {_q(name)}").fetchone()[0]
            tables.append(t)
        extra = [r[0] for r in conn.execute(
            "SELECT sql FROM duckdb_views() WHERE database_name = ? AND schema_name = ? "
            "AND NOT internal", [db[0], db[1]]).fetchall() if r[0]]
        extra += [r[0] for r in conn.execute(
            "SELECT sql FROM duckdb_indexes() WHERE database_name = ? AND schema_name = ?",
            [db[0], db[1]]).fetchall() if r[0]]
        first = [r[0] for r in conn.execute(
            "SELECT sql FROM duckdb_sequences() WHERE database_name = ? AND schema_name = ? "
            "AND NOT temporary", [db[0], db[1]]).fetchall() if r[0]]
    finally:
        conn.close()
    return Schema("duckdb", _order(tables), extra, first)


def write_database(schema: Schema, path: Path, rows: dict[str, Iterable[tuple]],
                   refused: dict[str, str] | None = None,
                   writer: DuckDBWriter | None = None) -> dict[str, list[tuple]]:
    """Create ``path`` with ``schema`` and insert ``rows`` (table -> value tuples in column
    order), one at a time with the constraints enforced; the rows that went in, per table.
    ``refused`` (when given) gets, per table, the engine's words on the first row it
    refused. ``writer``: a DuckDB file through that :class:`DuckDBWriter` when it
    :meth:`~DuckDBWriter.fits`. In the sandboxed worker only (module docstring)."""
    path.unlink(missing_ok=True)
    done: Any = None
    if schema.dialect == "sqlite":
        conn: Any = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA foreign_keys=ON")
        # a throwaway candidate, moved only once closed: no fsync and no journal file per
        # row (each row its own transaction, as before: the same file, byte for byte)
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA journal_mode=MEMORY")
        error: Any = sqlite3.Error
    else:
        import duckdb

        if writer is not None and writer.fits(schema, path):
            conn, done = writer.attach(path), lambda: writer.detach(path)
        else:
            conn = duckdb_connect(path, read_only=False)
        error = duckdb.Error
    kept: dict[str, list[tuple]] = {}
    try:
        for ddl in schema.first_ddl:
            conn.execute(ddl)
        for t in schema.tables:
            conn.execute(t.ddl)
        for t in schema.tables:
            sql = (f"INSERT INTO {_q(t.name)} ({', '.join(_q(c.name) for c in t.columns)}) "
                   f"VALUES ({', '.join('?' for _ in t.columns)})")
            kept[t.name] = []
            for row in rows.get(t.name, ()):
                try:
                    conn.execute(sql, list(row))
                except error as exc:  # a constraint refused it (a CHECK, a key, a type)
                    if refused is not None:
                        refused.setdefault(t.name, _words(exc))
                    continue
                kept[t.name].append(tuple(row))
        for ddl in schema.extra_ddl:
            try:
                conn.execute(ddl)
            except error as exc:  # an index or view this engine cannot recreate as written
                if refused is not None:  # (a view calling a macro, one over a file)
                    refused.setdefault(NOT_RECREATED + " ".join(ddl.split())[:120],
                                       _words(exc))
    finally:
        (done or conn.close)()
    return kept


def _words(exc: Exception) -> str:
    """The engine's words on ``exc`` for a reason: its class and first line (DuckDB adds a
    hint and the statement with a caret below), at most 300 characters."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]
