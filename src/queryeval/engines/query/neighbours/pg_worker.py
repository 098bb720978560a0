"""The worker process that runs golds, mutants and predictions on PostgreSQL neighbour
databases: one connection to the user's server, then the operating-system sandbox, as
:mod:`..sql_worker` does for PostgreSQL (``python -m
queryeval.engines.query.neighbours.pg_worker MEMORY_BYTES``; the settings frame holds
``url``, ``connect_timeout_s`` and ``checks``).

A neighbour lives in this connection's **temporary tables** (``pg_temp``: session-local,
invisible to every other session, dropped with the session): ``load`` drops the previous
ones and creates the tables (the parent's DDL, one prepared statement each, so one
statement) in a read-write transaction -- or, when the DDL is the one loaded (the next
candidate of the same gold), keeps them and empties them all with one ``TRUNCATE`` (fresh
storage: the rows lie in insertion order and the planner sees a new table, as after a
create, without the catalog work of dropping and creating) --, then inserts the rows in a **READ ONLY** transaction (the
server lets a read-only transaction write temporary tables only), each row its own
``INSERT`` (a foreign key to the same table is checked row by row). A table's rows are sent
together under one savepoint; when a constraint refuses one, that savepoint is rolled back
and each row goes in under a savepoint of its own, so that only the refused rows are left
out (the temporary tables have no sequence or default a rolled-back row could have used).
Nothing of the user's tables is written. Requests:

* ``{"op": "schema", "relations", "timeout_s"}``: :func:`.pg_schema.read_catalog`;
* ``{"op": "load", "key", "ddl", "tables", "timeout_s"}``: ``{"kept": {table: [row index]}}``;
* ``{"op": "drop"}``: every temporary table of this session dropped;
* ``{"op": "query", "key", "query", "functions", "timeout_s", "max_rows"}``: the query as
  the engine runs it (READ ONLY transaction rolled back, ``statement_timeout``, a
  server-side cursor, advisory locks released), on the neighbour ``key`` (which must be
  the one loaded) or, with ``key`` None, on the real tables (no temporary table left).
  An ordinary table the query names (``relations``) that the neighbour does not hold gets
  an empty temporary copy first (:meth:`NeighbourSession.shadow`).
  On a neighbour, before the cursor and in the same transaction: a function the query
  names that exists outside ``pg_catalog`` is refused (it could read the real tables), and
  the server's own plan (``EXPLAIN (VERBOSE, FORMAT JSON)``, not executed) must scan no
  relation outside this session's temporary schema -- a schema-qualified name, a view over
  the real tables, a table the neighbour does not hold are refused, never run on the real
  data.
"""

from __future__ import annotations

import sys
from typing import Any

from queryeval.engines.query.base import QueryRefused
from queryeval.engines.query.postgres import PostgresSession, _end, _first_line, _Restart


class NeighbourSession(PostgresSession):
    """The worker's connection: the neighbour loaded in its temporary tables, and queries."""

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0) -> None:
        super().__init__(url, connect_timeout_s=connect_timeout_s)
        self.key: str | None = None
        self.tables: set[str] = set()
        """The temporary tables of the loaded neighbour (its own and empty copies)."""
        self.temp_schema: str | None = None
        self._query, self._functions = "", ()
        self._ddl: list[str] | None = None
        """The DDL of the temporary tables now created (None: none are)."""

    # --- requests ------------------------------------------------------------------------
    def handle(self, request: dict[str, Any]) -> tuple[str, Any]:
        import psycopg

        from queryeval.engines.query.neighbours.pg_schema import CatalogRefusal, read_catalog
        from queryeval.engines.query.sql_worker import handle

        op = request.get("op")
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return ("error", {"kind": "restart", "reason": "postgres: connection lost"})
        try:
            if op == "schema":
                self.drop()
                return ("ok", read_catalog(conn, list(request["relations"]),
                                           float(request["timeout_s"])))
            if op == "load":
                return ("ok", {"kept": self.load(str(request["key"]), list(request["ddl"]),
                                                 request["tables"], float(request["timeout_s"]))})
            if op == "drop":
                self.drop()
                return ("ok", {})
            if op == "query":
                key = request.get("key")
                if key is None:
                    self.drop()  # the real tables: nothing may shadow them
                elif key != self.key:
                    return ("error", {"kind": "failed", "reason": "neighbour not loaded"})
                if key is not None:
                    self.shadow([str(r) for r in request.get("relations") or ()])
                self._query = str(request["query"])
                self._functions = tuple(str(f).lower() for f in request.get("functions") or ())
                return handle(self, request)
        except CatalogRefusal as exc:
            return ("error", {"kind": "refused", "reason": str(exc)})
        except psycopg.Error as exc:
            self._recover()
            if conn.broken:
                return ("error", {"kind": "restart", "reason": f"postgres: {_first_line(exc)}"})
            return ("error", {"kind": "failed", "reason": f"postgres: {_first_line(exc)}"})
        return ("error", {"kind": "failed", "reason": f"unknown request {op!r}"})

    def _recover(self) -> None:
        import psycopg

        try:
            self._read_only()
        except psycopg.Error:
            pass

    def _read_only(self) -> None:
        """End any open transaction (rolled back) and make the next ones READ ONLY again."""
        self._conn.rollback()
        self._conn.read_only = True

    def _rw(self, timeout_s: float) -> Any:
        """The connection in a fresh READ WRITE transaction (creating and dropping temporary
        tables needs one) with ``statement_timeout``."""
        conn = self._conn
        conn.rollback()
        conn.read_only = False
        conn.execute("SELECT set_config('statement_timeout', %s, true)",
                     (f"{max(1, int(timeout_s * 1000))}ms",))
        return conn

    def drop(self) -> None:
        """Drop every temporary table of this session (committed: the session goes on)."""
        try:
            _every_temp_table(self._rw(30.0), "DROP TABLE {} CASCADE")
        finally:
            self._read_only()
            self.key = None
            self.tables = set()
            self._ddl = None

    def load(self, key: str, ddl: list[str], tables: list[dict], timeout_s: float) -> dict:
        """Create the neighbour's temporary tables and insert its rows (module docstring);
        the index of every row that went in, per table."""
        import psycopg
        from psycopg import sql
        from psycopg.types.json import Jsonb

        if ddl == self._ddl:
            self._empty(timeout_s)
        else:
            self._create(ddl, timeout_s)
        conn = self._conn
        kept: dict[str, list[int]] = {}
        conn.execute("SELECT set_config('statement_timeout', %s, true)",  # BEGIN READ ONLY
                     (f"{max(1, int(timeout_s * 1000))}ms",))
        for t in tables:
            insert = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                sql.Identifier("pg_temp", t["name"]),
                sql.SQL(", ").join(sql.Identifier(c) for c in t["columns"]),
                sql.SQL(", ").join(sql.Placeholder() for _ in t["columns"]))
            rows = [[Jsonb(v) if isinstance(v, dict) else v for v in row] for row in t["rows"]]
            try:  # each row its own INSERT, as below, sent together under one savepoint
                with conn.transaction():
                    conn.cursor().executemany(insert, rows)
                kept[t["name"]] = list(range(len(rows)))
                continue
            except psycopg.Error:  # a row was refused: all rolled back, then one by one
                if conn.broken:
                    raise
            kept[t["name"]] = []
            for i, values in enumerate(rows):
                try:
                    with conn.transaction():  # a savepoint: a refused row is left out
                        conn.execute(insert, values)
                except psycopg.Error:
                    if conn.broken:
                        raise
                    continue
                kept[t["name"]].append(i)
        conn.commit()
        self.key = key
        self.tables |= {t["name"] for t in tables}
        return kept

    def _create(self, ddl: list[str], timeout_s: float) -> None:
        """Drop every temporary table, then create the neighbour's from its DDL."""
        self.drop()
        conn = self._rw(timeout_s)
        try:
            for statement in ddl:
                if not statement.startswith(("CREATE TEMPORARY TABLE pg_temp.",
                                             "ALTER TABLE pg_temp.")):
                    raise QueryRefused("a neighbour's DDL creates only temporary tables")
                conn.execute(statement, prepare=True)  # prepared: exactly one statement
            self._commit_temp_tables(conn)
        finally:
            self._read_only()
        self._ddl = list(ddl)

    def _empty(self, timeout_s: float) -> None:
        """Empty every temporary table of this session (committed) and keep the tables, for
        a neighbour with the DDL of the one loaded. ``TRUNCATE`` gives each table fresh
        storage and statistics, so its rows lie in the order they are inserted and the
        planner sees what it would in a table just created (``DELETE`` would leave them
        after the dead rows or in their space, in more pages)."""
        self.key = None
        try:
            names = _every_temp_table(self._rw(timeout_s), "TRUNCATE {}")
        finally:
            self._read_only()
        self.tables = set(names)

    def shadow(self, names: list[str]) -> None:
        """An empty temporary copy (``LIKE``: its columns and NOT NULL) of each ordinary
        table the query names that the neighbour does not hold: on every neighbour the
        tables the gold does not reach are empty (a database the schema allows -- an empty
        table breaks no key), never the real ones. A view or catalog is left alone (the
        plan check refuses it)."""
        from psycopg import sql

        from queryeval.engines.query.neighbours.schema import _q

        missing = [n for n in names if n not in self.tables]
        if not missing:
            return
        conn = self._rw(30.0)
        try:
            for name in missing:
                row = conn.execute("SELECT c.relkind, n.nspname FROM pg_class c JOIN "
                                   "pg_namespace n ON n.oid = c.relnamespace "
                                   "WHERE c.oid = to_regclass(%s)", (_q(name),)).fetchone()
                if row is None or row[0] not in ("r", "p") or row[1].startswith("pg_") \
                        or row[1] == "information_schema":
                    continue  # no such table, a view, a catalog: the plan check decides
                conn.execute(sql.SQL("CREATE TEMPORARY TABLE {} (LIKE {})").format(
                    sql.Identifier("pg_temp", name), sql.Identifier(row[1], name)),
                    prepare=True)
                self.tables.add(name)
            self._commit_temp_tables(conn)
        finally:
            self._read_only()

    def _commit_temp_tables(self, conn: Any) -> None:
        """Note this session's temporary schema (the plan check names it) and commit the
        temporary tables just created."""
        found = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()").fetchone()
        self.temp_schema = found[0] if found else None
        conn.commit()

    # --- queries -------------------------------------------------------------------------
    def _begin(self, timeout_s: float) -> Any:
        conn = super()._begin(timeout_s)
        if self.key is not None:
            try:
                self._verify(conn)
            except BaseException:
                _end(conn)
                raise
        return conn

    def _verify(self, conn: Any) -> None:
        """Refuse, before the query runs, what would read the user's real data (module
        docstring); in the query's READ ONLY transaction, under its statement_timeout."""
        import psycopg

        with conn.cursor() as cur:
            if self._functions:
                cur.execute("SELECT n.nspname, p.proname FROM pg_proc p JOIN pg_namespace n "
                            "ON n.oid = p.pronamespace WHERE lower(p.proname) = ANY(%s) "
                            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
                            "ORDER BY 1, 2 LIMIT 1", (list(self._functions),))
                found = cur.fetchone()
                if found:
                    raise QueryRefused(f"it calls {found[0]}.{found[1]}(), a function outside "
                                       "pg_catalog, which could read the real tables")
            try:
                with conn.transaction():  # a savepoint: the error is the query's own
                    cur.execute("EXPLAIN (VERBOSE, FORMAT JSON) " + self._query, prepare=True)
                    plan = cur.fetchone()[0]
            except psycopg.Error as exc:
                raise _query_error(exc) from None
        for node in _nodes(plan):
            # EXPLAIN names this session's own temporary schema "pg_temp" (no other schema
            # may be called so: the pg_ prefix is reserved), another session's pg_temp_N
            if "Relation Name" in node and node.get("Schema") not in ("pg_temp",
                                                                       self.temp_schema):
                raise QueryRefused(f"it reads {node.get('Schema')}.{node['Relation Name']} of "
                                   "the real database, which the neighbour databases do not "
                                   "replace (only unqualified names of the tables the gold "
                                   "reads reach the neighbour's temporary copies)")

    def close(self) -> None:
        import psycopg

        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            try:
                self.drop()
            except psycopg.Error:
                pass
        super().close()


def _every_temp_table(conn: Any, statement: str) -> list[str]:
    """``statement`` (``DROP TABLE {}``, ``TRUNCATE {}``) on all of this session's temporary
    tables at once, committed; their names, oldest first."""
    from psycopg import sql

    names = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relnamespace = pg_my_temp_schema() "
        "AND c.relkind IN ('r', 'p') ORDER BY c.oid").fetchall()]
    if names:
        conn.execute(sql.SQL(statement).format(sql.SQL(", ").join(
            sql.Identifier("pg_temp", n) for n in names)))
    conn.commit()
    return names


def _query_error(exc: Exception) -> Exception:
    """A server error of planning the query as the engine reports one of running it."""
    from psycopg import errors as pg_errors

    from queryeval.engines.query.base import QueryFailed, QueryTimeout

    first = f"postgres: {_first_line(exc)}"
    if isinstance(exc, pg_errors.QueryCanceled):
        return QueryTimeout("query ran longer than its time limit; cancelled")
    if isinstance(exc, (pg_errors.ReadOnlySqlTransaction, pg_errors.InsufficientPrivilege)):
        return QueryRefused(first)
    return QueryFailed(first, syntax_error=isinstance(exc, pg_errors.SyntaxError))


def _nodes(plan: Any):
    if isinstance(plan, dict):
        yield plan
        for v in plan.values():
            yield from _nodes(v)
    elif isinstance(plan, list):
        for v in plan:
            yield from _nodes(v)


def worker_main(memory: int) -> int:
    """The connection first, then the sandbox (:func:`queryeval.engines.worker.serve`): the open socket
    works, no new one can be made, and no file can be read."""
    from queryeval.engines.worker import serve

    return serve(memory, lambda settings: NeighbourSession(
        str(settings["url"]), connect_timeout_s=float(settings.get("connect_timeout_s") or 10)),
        _answer)


def _answer(session: NeighbourSession, request: dict[str, Any]) -> tuple[str, Any]:
    """One reply; never raises (a lost connection is ``restart``)."""
    try:
        return session.handle(request)
    except _Restart as exc:
        return ("error", {"kind": "restart", "reason": exc.reason})
    except Exception as exc:  # noqa: BLE001 - an error must become a reply
        return ("error", {"kind": "failed", "reason": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python -m queryeval.engines.query.neighbours.pg_worker "
                         "MEMORY_BYTES\n")
        sys.exit(2)
    sys.exit(worker_main(int(sys.argv[1])))
