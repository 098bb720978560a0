"""The schema and data of a sqlite or DuckDB database, read once, and neighbour databases
written with the same schema and constraints enforced.

:func:`read_schema` gives every table's columns (declared type, NOT NULL, default), its
primary key, its unique column sets and its foreign keys, the DDL that recreates it (the
database's own ``CREATE`` statements), and the values each column holds (a sample). Views
come along as DDL. :func:`write_database` recreates the schema in a new file and inserts
generated rows one at a time with every declared constraint enforced (sqlite:
``PRAGMA foreign_keys=ON``; DuckDB enforces keys always), so a row that would break one --
a CHECK this module does not read included -- is left out rather than written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAMPLE_VALUES = 50
"""Distinct values of a column read from the original database (the fuzzer's seeds)."""


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

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name.lower() == name.lower())


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
    """Schema, constraints and a sample of the values of a sqlite or DuckDB file (read only)."""
    return _read_sqlite(path) if dialect == "sqlite" else _read_duckdb(path)


def _sample(conn: Any, table: str, column: str) -> list[Any]:
    sql = (f"SELECT DISTINCT {_q(column)} FROM {_q(table)} WHERE {_q(column)} IS NOT NULL "
           f"ORDER BY 1 LIMIT {SAMPLE_VALUES}")
    return [r[0] for r in conn.execute(sql).fetchall()]


def _read_sqlite(path: Path) -> Schema:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables: list[Table] = []
        extra: list[str] = []
        for kind, name, sql in conn.execute(
                "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall():
            if kind != "table":
                if kind in ("view", "index"):
                    extra.append(sql)
                continue
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
    import duckdb

    conn = duckdb.connect(str(path), read_only=True)
    try:
        db = conn.execute("SELECT current_database(), current_schema()").fetchone()
        tables: list[Table] = []
        for name, sql in conn.execute(
                "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = ? "
                "AND schema_name = ? ORDER BY table_oid", [db[0], db[1]]).fetchall():
            cols = [Column(c, (t or "").upper(), not nullable) for c, t, nullable in conn.execute(
                "SELECT column_name, data_type, is_nullable FROM duckdb_columns() "
                "WHERE database_name = ? AND schema_name = ? AND table_name = ? "
                "ORDER BY column_index", [db[0], db[1], name]).fetchall()]
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
    finally:
        conn.close()
    return Schema("duckdb", _order(tables), extra)


def write_database(schema: Schema, path: Path,
                   rows: dict[str, Iterable[tuple]]) -> dict[str, list[tuple]]:
    """Create ``path`` with ``schema`` and insert ``rows`` (table -> value tuples in column
    order), one at a time with the constraints enforced; the rows that went in, per table."""
    path.unlink(missing_ok=True)
    if schema.dialect == "sqlite":
        conn: Any = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA foreign_keys=ON")
        error: Any = sqlite3.Error
    else:
        import duckdb

        conn = duckdb.connect(str(path))
        error = duckdb.Error
    kept: dict[str, list[tuple]] = {}
    try:
        for t in schema.tables:
            conn.execute(t.ddl)
        for t in schema.tables:
            sql = (f"INSERT INTO {_q(t.name)} ({', '.join(_q(c.name) for c in t.columns)}) "
                   f"VALUES ({', '.join('?' for _ in t.columns)})")
            kept[t.name] = []
            for row in rows.get(t.name, ()):
                try:
                    conn.execute(sql, list(row))
                except error:
                    continue  # a constraint refused it (a CHECK, a key the fuzzer missed)
                kept[t.name].append(tuple(row))
        for ddl in schema.extra_ddl:
            try:
                conn.execute(ddl)
            except error:
                pass  # an index or view this engine cannot recreate as written
    finally:
        conn.close()
    return kept
