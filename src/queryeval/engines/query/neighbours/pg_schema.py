"""The schema of the tables a gold reads on a PostgreSQL server, read from its catalogs, and
the temporary tables that reproduce it (docs/test-suite.md, "PostgreSQL").

:func:`read_catalog` runs **in the sandboxed worker** (:mod:`.pg_worker`), on its one
connection, inside a READ ONLY transaction that is rolled back: the gold's relations
(resolved as the server resolves unqualified names, ``to_regclass``), their columns
(``format_type``, NOT NULL, generated expressions), primary and unique keys (constraints
and plain unique indexes on columns), CHECK constraints (``pg_get_constraintdef``) and
foreign keys, then the tables those keys refer to, transitively; and a sample of each
column's values. :func:`to_schema` turns that document into the :class:`.schema.Schema` the
fuzzer draws rows for, with the DDL of the ``pg_temp`` copies (names quoted, foreign keys
pointing at the other ``pg_temp`` copies).
"""

from __future__ import annotations

from typing import Any

from queryeval.engines.query.neighbours.schema import (
    SAMPLE_VALUES,
    Column,
    ForeignKey,
    Schema,
    Table,
)
from queryeval.engines.query.neighbours.schema import _order as order_tables
from queryeval.engines.query.neighbours.schema import _q as quote

_FUZZ_TYPES = {"int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "numeric": "NUMERIC",
               "float4": "REAL", "float8": "DOUBLE", "bool": "BOOLEAN", "date": "DATE",
               "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMP", "text": "TEXT",
               "varchar": "TEXT", "bpchar": "TEXT", "name": "TEXT"}
"""Types the fuzzer draws fresh values for (:func:`.fuzz._kind` reads the upper-case name);
any other type gets ``OTHER`` (its original values and the gold's constants only, no
guessed literals: ``INTERVAL`` or ``POINT`` would otherwise read as integers)."""


FULL_SCAN_ROWS = 100_000
"""Above this many rows (``reltuples``) a column's sample comes from a block sample."""


class CatalogRefusal(Exception):
    """The gold reads something the neighbours cannot reproduce (a view, a foreign table ...)."""


def read_catalog(conn: Any, relations: list[Any], timeout_s: float) -> dict:
    """The schema document of ``relations`` (names as the server reads them: a name, or a
    ``[schema, name]`` pair) and the tables their foreign keys refer to; in a READ ONLY
    transaction, rolled back. Each table says whether its unqualified name reaches it
    (``visible``: ``pg_table_is_visible``, read before any temporary table exists)."""
    conn.read_only = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT set_config('statement_timeout', %s, true)",
                        (f"{max(1, int(timeout_s * 1000))}ms",))
            cur.execute("SELECT has_database_privilege(current_database(), 'TEMPORARY'), "
                        "current_user, current_database()")
            temp, user, database = cur.fetchone()
            todo: list[int] = []
            for ref in relations:
                qualifier, name = ref if isinstance(ref, (list, tuple)) else (None, ref)
                text = f"{quote(qualifier)}.{quote(name)}" if qualifier else quote(name)
                cur.execute("SELECT c.oid, c.relkind, n.nspname FROM pg_class c JOIN "
                            "pg_namespace n ON n.oid = c.relnamespace "
                            "WHERE c.oid = to_regclass(%s)", (text,))
                row = cur.fetchone()
                if row is None:
                    continue  # not a relation here: the gold fails as it fails on the original
                oid, kind, schema = row
                if kind not in ("r", "p"):
                    what = {"v": "a view", "m": "a materialized view", "f": "a foreign table",
                            "S": "a sequence"}.get(kind, f"a relation of kind {kind!r}")
                    raise CatalogRefusal(f"reads {schema}.{name}, {what}: the neighbour "
                                         "databases hold only copies of ordinary tables")
                if schema in ("pg_catalog", "information_schema"):
                    raise CatalogRefusal(f"reads the system catalog {schema}.{name}, which "
                                         "the neighbour databases do not replace")
                todo.append(oid)
            tables: list[dict] = []
            done: set[int] = set()
            while todo:
                oid = todo.pop(0)
                if oid in done:
                    continue
                done.add(oid)
                table = _table(cur, oid)
                tables.append(table)
                todo += [fk["oid"] for fk in table["foreign_keys"] if fk["oid"] not in done]
            for t in tables:
                for fk in t["foreign_keys"]:
                    fk.pop("oid", None)
            names = [t["name"] for t in tables]
            clash = sorted({n for n in names if names.count(n) > 1})
            if clash:
                raise CatalogRefusal(f"reads two tables named {clash[0]} (in different schemas), "
                                     "which would need the same temporary name")
            for t in tables:
                t["values"] = {c["name"]: _sample(conn, cur, t, c["name"])
                               for c in t["columns"] if not c["generated"]}
                t.pop("estimate")  # the planner's guess moves with ANALYZE: not in the key
    finally:
        conn.rollback()
    return {"temp_privilege": bool(temp), "user": user, "database": database, "tables": tables}


def _table(cur: Any, oid: int) -> dict:
    cur.execute("SELECT n.nspname, c.relname, c.reltuples, pg_table_is_visible(c.oid) "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.oid = %s", (oid,))
    schema, name, estimate, visible = cur.fetchone()
    # a column's collation where it is not its type's own (COLLATE "C", an ICU one): it
    # decides comparisons and sort order, so the neighbour's copy declares it too
    cur.execute("SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), t.typname, "
                "a.attnotnull, a.attgenerated, pg_get_expr(d.adbin, d.adrelid), "
                "CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation THEN "
                "quote_ident(cn.nspname) || '.' || quote_ident(co.collname) END "
                "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                "LEFT JOIN pg_collation co ON co.oid = a.attcollation "
                "LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace "
                "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped "
                "ORDER BY a.attnum", (oid,))
    cols, by_num = [], {}
    for num, col, typ, typname, not_null, generated, expr, collation in cur.fetchall():
        by_num[num] = col
        cols.append({"name": col, "type": typ, "fuzz": _FUZZ_TYPES.get(typname, "OTHER"),
                     "not_null": bool(not_null),
                     "generated": expr if generated == "s" else None})
        if collation:  # only then: the schema document (and so each set's key) as before
            cols[-1]["collation"] = collation
    cur.execute("SELECT contype, conkey, confrelid, confkey, pg_get_constraintdef(oid) "
                "FROM pg_constraint WHERE conrelid = %s AND contype IN ('p', 'u', 'f', 'c') "
                "ORDER BY contype, conname", (oid,))
    out: dict[str, Any] = {"schema": schema, "name": name, "columns": cols, "primary_key": [],
                           "unique": [], "foreign_keys": [], "checks": [],
                           "estimate": float(estimate or 0), "visible": bool(visible)}
    for kind, key, parent, parent_key, definition in cur.fetchall():
        names = [by_num[k] for k in key or []]
        if kind == "p":
            out["primary_key"] = names
        elif kind == "u":
            out["unique"].append(names)
        elif kind == "c":
            out["checks"].append(definition)
        else:
            cur.execute("SELECT c.relname, array_agg(a.attname ORDER BY k.i) FROM pg_class c "
                        "CROSS JOIN unnest(%s::int2[]) WITH ORDINALITY k(num, i) "
                        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.num "
                        "WHERE c.oid = %s GROUP BY c.relname", (parent_key, parent))
            parent_name, refs = cur.fetchone()
            out["foreign_keys"].append({"columns": names, "table": parent_name,
                                        "refs": list(refs), "oid": parent})
    # unique indexes that are not constraints (CREATE UNIQUE INDEX on plain columns)
    cur.execute("SELECT i.indkey::int2[] FROM pg_index i WHERE i.indrelid = %s AND i.indisunique "
                "AND i.indpred IS NULL AND i.indexprs IS NULL AND NOT EXISTS (SELECT 1 FROM "
                "pg_constraint c WHERE c.conindid = i.indexrelid) ORDER BY i.indexrelid", (oid,))
    for (key,) in cur.fetchall():
        names = [by_num[k] for k in key if k in by_num]
        if names and names not in out["unique"]:
            out["unique"].append(names)
    return out


def _sample(conn: Any, cur: Any, table: dict, column: str) -> list[Any]:
    """Up to :data:`.schema.SAMPLE_VALUES` distinct non-null values, in the server's order
    (a type without ordering or equality: its text); none when even that fails. A table of
    more than :data:`FULL_SCAN_ROWS` rows (the planner's estimate) is read through a
    repeatable block sample of about that many rows, not scanned whole per column."""
    src = f"{quote(table['schema'])}.{quote(table['name'])}"
    estimate = float(table.get("estimate") or 0)
    if estimate > FULL_SCAN_ROWS:
        src += (f" TABLESAMPLE SYSTEM ({100.0 * FULL_SCAN_ROWS / estimate:.6f}) "
                "REPEATABLE (0)")
    col = quote(column)
    for expr in (col, f"{col}::text"):
        try:
            with conn.transaction():  # a savepoint: a failed form leaves the transaction usable
                cur.execute(f"SELECT DISTINCT {expr} FROM {src} WHERE {col} IS NOT NULL "
                            f"ORDER BY 1 LIMIT {SAMPLE_VALUES}")
                return [r[0] for r in cur.fetchall()]
        except Exception:  # noqa: BLE001 - psycopg.Error; the next form, then none
            continue
    return []


def to_schema(doc: dict) -> Schema:
    """The fuzzer's :class:`.schema.Schema` (generated columns left out: the server computes
    them) with each table's ``ddl``: its ``CREATE TEMPORARY TABLE pg_temp.…``. A foreign key
    to a table created later (a cycle: ``emp.dept_id`` → dept, ``dept.head_id`` → emp) is
    added after every table exists (``ALTER TABLE pg_temp.… ADD FOREIGN KEY``, in
    ``extra_ddl``)."""
    tables, docs = [], {}
    for t in doc["tables"]:
        cols = [Column(c["name"], c["fuzz"], c["not_null"]) for c in t["columns"]
                if not c["generated"]]
        table = Table(t["name"], cols, "", tuple(t["primary_key"]),
                      [tuple(u) for u in t["unique"]],
                      [ForeignKey(tuple(f["columns"]), f["table"], tuple(f["refs"]))
                       for f in t["foreign_keys"]])
        table.values = {k: list(v) for k, v in t.get("values", {}).items()}
        tables.append(table)
        docs[t["name"]] = t
    ordered = order_tables(tables)
    made: set[str] = set()
    later: list[str] = []
    for table in ordered:
        t = docs[table.name]
        now = [f for f in t["foreign_keys"] if f["table"] in made or f["table"] == t["name"]]
        table.ddl = _ddl(t, now)
        later += [f"ALTER TABLE pg_temp.{quote(t['name'])} ADD {_fk(f)}"
                  for f in t["foreign_keys"] if f not in now]
        made.add(t["name"])
    return Schema("postgres", ordered, later)


def _cols(names: list[str]) -> str:
    return ", ".join(quote(n) for n in names)


def _fk(f: dict) -> str:
    return (f"FOREIGN KEY ({_cols(f['columns'])}) REFERENCES pg_temp.{quote(f['table'])} "
            f"({_cols(f['refs'])})")


def _ddl(t: dict, foreign_keys: list[dict]) -> str:
    parts = []
    for c in t["columns"]:
        part = f"{quote(c['name'])} {c['type']}"
        if c.get("collation"):  # quoted by the server (quote_ident), schema-qualified
            part += f" COLLATE {c['collation']}"
        if c["not_null"]:
            part += " NOT NULL"
        if c["generated"]:
            part += f" GENERATED ALWAYS AS ({c['generated']}) STORED"
        parts.append(part)
    if t["primary_key"]:
        parts.append(f"PRIMARY KEY ({_cols(t['primary_key'])})")
    parts += [f"UNIQUE ({_cols(u)})" for u in t["unique"]]
    parts += [_fk(f) for f in foreign_keys]
    parts += list(t["checks"])
    return f"CREATE TEMPORARY TABLE pg_temp.{quote(t['name'])} ({', '.join(parts)})"
