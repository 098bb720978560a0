"""Two of the gold audit's checks (``queryeval audit``), by execution.

* :func:`tie_at_limit` — a gold that sorts and cuts (``ORDER BY … LIMIT n [OFFSET m]``)
  whose rows at the cut tie on the sort key: row ``m+n`` and row ``m+n+1`` of the uncut
  result (or rows ``m`` and ``m+1`` at an OFFSET) have equal ORDER BY keys, so which of
  them the gold returns is the engine's choice and a right prediction can be scored wrong.
  The gold runs once more without its LIMIT/OFFSET (in the same sandbox, under the same
  deadline); its sort keys are read from the select list (by ordinal, output name or the
  same expression: also for DISTINCT and set operations) or, for a plain SELECT, added to
  it (SQL, through sqlglot); a SPARQL gold is checked when it sorts by projected variables.
* :func:`near_deadline` — a gold whose slower execution took more than
  :data:`DEADLINE_SHARE` of the per-query deadline (``--query-timeout``): on a loaded
  machine or another engine it may time out and fail every prediction.
* :func:`under_constrained_finding` (``--test-suite N``; SQL on sqlite, DuckDB or PostgreSQL) — mutants
  of the gold (a dropped predicate, DISTINCT, another constant or operator: the test suite's
  near-misses) that neither the database nor any of N neighbour databases tells apart from
  it: the question is under-constrained (a prediction may be right for another reason) or the
  gold carries a redundant clause (``DISTINCT`` over a key).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

DEADLINE_SHARE = 0.5
"""A gold whose execution takes more than this share of the deadline is reported."""
KEY_PREFIX = "__qe_sort_key_"


def near_deadline(elapsed_ms: list[float | None], timeout_s: float,
                  share: float = DEADLINE_SHARE) -> dict | None:
    """``{"elapsed_ms", "deadline_ms", "share"}`` when the slowest of ``elapsed_ms`` exceeds
    ``share`` of the deadline; ``None`` otherwise (or when no execution was timed)."""
    times = [t for t in elapsed_ms if isinstance(t, (int, float))]
    if not times:
        return None
    slowest, deadline = max(times), timeout_s * 1000.0
    if slowest <= share * deadline:
        return None
    return {"elapsed_ms": slowest, "deadline_ms": deadline, "share": slowest / deadline}


# --- ties at the LIMIT boundary --------------------------------------------------------------

def _sql_uncut(query: str, dialect: str | None) -> tuple[str, int, int, list[int]] | None:
    """The query without LIMIT/OFFSET; (sql, limit, offset, the position of each sort key
    in a row). Keys in the select list (by ordinal, output name or the same expression) are
    read there; otherwise, for a plain SELECT without DISTINCT, they are appended to the
    select list (negative positions: the last columns). ``None`` when the query does not
    sort and cut at the top level, or its keys cannot be read."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(query, read=dialect)
    except (SqlglotError, ValueError, RecursionError):
        return None
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return None
    order, limit = tree.args.get("order"), tree.args.get("limit")
    if order is None or limit is None:
        return None
    try:
        n = int(limit.expression.name if isinstance(limit, exp.Limit) else limit.name)
        offset_node = tree.args.get("offset")
        m = int(offset_node.expression.name) if offset_node is not None else 0
    except (ValueError, AttributeError):
        return None
    selects = tree.selects
    names = [s.alias_or_name.lower() for s in selects]
    bare = [(s.this if isinstance(s, exp.Alias) else s).sql() for s in selects]
    star = any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and isinstance(s.this, exp.Star))
               for s in selects)  # * or t.*: positions unknown
    positions: list[int | None] = []
    keys = []
    for ordered in order.expressions:
        key = ordered.this
        pos = None
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(selects):
            pos = int(key.name) - 1
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
            pos = names.index(key.name.lower())
        elif key.sql() in bare:
            pos = bare.index(key.sql())
        positions.append(pos)
        chosen = selects[pos] if pos is not None else key
        keys.append((chosen.this if isinstance(chosen, exp.Alias) else chosen).copy())
    uncut = tree.copy()
    uncut.set("limit", None)
    uncut.set("offset", None)
    if not star and all(p is not None for p in positions):
        return uncut.sql(dialect=dialect), n, m, [p for p in positions if p is not None]
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") is not None:
        return None  # extra columns would change the rows (DISTINCT) or break a set operation
    uncut.set("expressions", [*uncut.expressions,
                              *(exp.alias_(k, f"{KEY_PREFIX}{i}") for i, k in enumerate(keys))])
    return uncut.sql(dialect=dialect), n, m, [i - len(keys) for i in range(len(keys))]


_SPARQL_CUT_REVERSED = re.compile(r"\s*(?:\d+\s+(?:TIMIL|TESFFO)\s+)+", re.IGNORECASE)
"""``(\\s+(LIMIT|OFFSET)\\s+\\d+)+\\s*$`` read backwards from the end: searched forwards, that
expression tried every start in a whitespace run (quadratic: a gold of 30,000 tabs took
about 45 s in the evaluating process); anchored at the reversed text's start, one pass."""


def _sparql_cut_start(query: str) -> int | None:
    """Where the query's trailing ``LIMIT n`` / ``OFFSET m`` clauses (and the whitespace
    before them) begin, or None when it does not end with one."""
    m = _SPARQL_CUT_REVERSED.match(query[::-1])
    return None if m is None else len(query) - m.end()


def _sparql_uncut(query: str) -> tuple[str, int, int, list[str]] | None:
    """The query without its trailing LIMIT/OFFSET, its limit, offset and the projected
    variables it sorts by (``None`` unless every sort key is a projected variable)."""
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseQuery

    cut = _sparql_cut_start(query)
    if cut is None:
        return None
    try:
        body = parseQuery(query)[1]
    except (ParseException, RecursionError, ValueError, TypeError):
        return None
    mods = dict.get(body, "limitoffset") or {}
    order = dict.get(body, "orderby")
    if order is None or dict.get(mods, "limit") is None:
        return None
    keys = []
    for cond in dict.get(order, "condition") or ():
        expr = dict.get(cond, "expr") if isinstance(cond, dict) else cond
        while isinstance(expr, dict) and set(expr) == {"expr"}:  # a bracketed variable
            expr = dict.get(expr, "expr")
        if type(expr).__name__ != "Variable":
            return None
        keys.append(str(expr))
    return (query[:cut], int(mods["limit"]), int(dict.get(mods, "offset") or 0),
            keys)


def tie_at_limit(query: str, language: str, execute: Callable[[str], dict | None],
                 dialect: str | None = None) -> dict | None:
    """``{"rows": [i, i+1], "key": [...]}`` when the gold's rows at its cut tie on the
    sort key; ``{}`` when they do not; ``None`` when it cannot be checked (no ORDER BY …
    LIMIT at the top level, keys not readable, the uncut query failed). ``execute`` runs a
    query and returns its table (``{"columns", "rows"}`` or SPARQL JSON) or None."""
    from queryeval.metrics.tables.model import as_table, clean_normalize

    # the uncut query, its LIMIT and OFFSET, and its sort key: column positions (SQL) or
    # projected variables (SPARQL)
    found = _sql_uncut(query, dialect) if language == "sql" else _sparql_uncut(query)
    if found is None:
        return None
    uncut, n, m, key = found
    table = execute(uncut)
    if table is None:
        return None
    t = as_table(table)
    at = list(key)
    if language != "sql":  # the variables' positions in the result
        if any(v not in t.columns for v in key):
            return None
        at = [t.columns.index(v) for v in key]
    rows = t.rows

    def key_of(row: tuple) -> tuple:
        return tuple(row[i] for i in at)

    for cut in ([m] if m else []) + [m + n]:
        if 0 < cut < len(rows):
            before, after = key_of(rows[cut - 1]), key_of(rows[cut])
            if [clean_normalize(v) for v in before] == [clean_normalize(v) for v in after]:
                return {"rows": [cut, cut + 1], "key": list(before), "uncut_rows": len(rows)}
    return {}


def under_constrained_finding(query: str, source: str, language: str, n: int,
                              seed: int = 0) -> dict | None:
    """``{"mutants": [...], "neighbours": n}`` when some mutant of a SQL gold survives the
    database and its ``n`` neighbours (:func:`~queryeval.engines.query.neighbours.
    under_constrained`); ``None`` when every mutant is told apart, or the check does not apply
    (SPARQL, several sources)."""
    from pathlib import Path

    if n <= 0 or language != "sql" or "," in source or (
            Path(source).suffix.lower() not in (".sqlite", ".db", ".sqlite3", ".duckdb")
            and not source.startswith(("postgresql://", "postgres://"))):
        return None
    from queryeval.engines.query.neighbours import under_constrained

    survivors = under_constrained(query, source, n, seed)
    dialect = "duckdb" if source.lower().endswith(".duckdb") else (
        "postgres" if source.startswith(("postgresql://", "postgres://")) else "sqlite")
    dropped = {m: why for m in survivors
               if (why := equivalent_mutant(query, m, dialect)) is not None}
    schema: list[Any] = []  # read once, when a survivor is left to prove by keys

    def keys() -> Any:
        if not schema:
            schema.append(key_schema(source, dialect))
        return schema[0]

    left = [m for m in survivors if m not in dropped]
    # a mutant that adds DISTINCT over a key is dropped; one that removes the gold's own
    # DISTINCT over a key stays: it is the proof that the gold carries a redundant clause
    if left and not _key_distinct_in(query, dialect, keys):
        dropped.update({m: why for m in left
                        if (why := equivalent_mutant(query, m, dialect, keys)) is not None})
    kept = [m for m in survivors if m not in dropped]
    if not kept:
        return None
    out: dict[str, Any] = {"mutants": kept, "neighbours": n}
    if dropped:
        out["equivalent_dropped"] = dropped
    return out


def _redundant_distinct(select: Any) -> str | None:
    """Why DISTINCT on this SELECT cannot change its result, or None: a single row (every
    projection an aggregate, no GROUP BY; or LIMIT 1), or its rows feed something that
    deduplicates or only tests membership (IN / NOT IN, EXISTS, UNION/INTERSECT/EXCEPT
    without ALL)."""
    from sqlglot import exp

    if select.args.get("group") is None and select.expressions and all(
            isinstance(e.unalias() if isinstance(e, exp.Alias) else e, exp.AggFunc)
            for e in select.expressions):
        return "a single-row aggregate"
    limit = select.args.get("limit")
    if limit is not None:
        value = limit.expression if isinstance(limit, exp.Limit) else limit
        order = select.args.get("order")
        projected = {(e.unalias() if isinstance(e, exp.Alias) else e).sql()
                     for e in select.expressions} | {e.alias_or_name for e in select.expressions}
        # sorted by what it returns (or not sorted): the first row is the first distinct row;
        # a sort key outside the select list may rank the deduplicated rows otherwise
        if isinstance(value, exp.Literal) and value.name == "1" and (
                order is None or all(o.this.sql() in projected for o in order.expressions)):
            return "LIMIT 1"
    parent = select.parent
    while isinstance(parent, (exp.Subquery, exp.Paren)):
        parent = parent.parent
    if isinstance(parent, exp.In):
        return "inside IN / NOT IN"
    if isinstance(parent, exp.Exists):
        return "inside EXISTS"
    if isinstance(parent, exp.SetOperation) and parent.args.get("distinct") is not False:
        return "under a set operator without ALL"
    return None


def _key_distinct(select: Any, schema: Any) -> str | None:
    """Why DISTINCT on this SELECT cannot change its result by a key of the one table it
    reads, or None: FROM a single table of ``schema`` (unqualified, no JOIN, no CTE of that
    name), no GROUP BY / HAVING, no aggregate or window in the select list, which projects
    (by plain column or ``*``) every column of a primary or unique key whose columns are NOT
    NULL (or a sqlite ``INTEGER PRIMARY KEY``, or a DuckDB primary key): every row the WHERE
    keeps differs from the others on the key, so no two output rows are equal. With ORDER
    BY or LIMIT/OFFSET the sort keys must cover that key too (a total order: the same rows
    in the same order). Not proven (None) when the table's or an index's DDL names a
    COLLATE (equality of the key and of DISTINCT may differ), or, for a unique key that is
    not the primary key, when an index DDL has a WHERE (a partial index is no key)."""
    from sqlglot import exp

    source = select.args.get("from_") or select.args.get("from")
    if schema is None or source is None or select.args.get("joins") or \
            select.args.get("group") is not None or select.args.get("having") is not None:
        return None
    table_ref = source.this
    if not isinstance(table_ref, exp.Table) or table_ref.args.get("db") or \
            table_ref.args.get("catalog"):
        return None
    name = table_ref.name.lower()
    if any(cte.alias_or_name.lower() == name for cte in select.root().find_all(exp.CTE)):
        return None
    table = next((t for t in schema.tables if t.name.lower() == name), None)
    ddl = [getattr(table, "ddl", "") or ""] + list(schema.extra_ddl)
    if table is None or getattr(table, "virtual", False) or \
            any("COLLATE" in d.upper() for d in ddl):
        return None
    alias = table_ref.alias_or_name.lower()

    def plain(node: Any) -> str | None:
        node = node.unalias() if isinstance(node, exp.Alias) else node
        if isinstance(node, exp.Column) and (not node.table or node.table.lower() == alias):
            return node.name.lower()
        return None

    projected: set[str] = set()
    for e in select.expressions:
        if e.find(exp.AggFunc) or e.find(exp.Window):
            return None
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)
                                       and (not e.table or e.table.lower() == alias)):
            projected |= {c.name.lower() for c in table.columns}
        elif (col := plain(e)) is not None:
            projected.add(col)
    order = select.args.get("order")
    sorted_by = {c for o in (order.expressions if order is not None else [])
                 if (c := plain(o.this)) is not None}
    cut = select.args.get("limit") is not None or select.args.get("offset") is not None
    columns = {c.name.lower(): c for c in table.columns}
    partial = any("WHERE" in d.upper() and "UNIQUE" in d.upper() for d in schema.extra_ddl)
    for key in table.keys():
        if not key or any(not isinstance(c, str) for c in key):
            continue  # an index on an expression
        is_pk = tuple(key) == tuple(table.primary_key)
        cols = [c.lower() for c in key]
        if (not is_pk and partial) or not set(cols) <= projected or \
                ((order is not None or cut) and not set(cols) <= sorted_by):
            continue
        rowid = schema.dialect == "sqlite" and is_pk and len(cols) == 1
        if all(_never_null(columns.get(c), schema.dialect, is_pk, rowid, ddl[0]) for c in cols):
            return f"over the key {table.name}({', '.join(key)})"
    return None


def _never_null(col: Any, dialect: str, is_pk: bool, rowid: bool, ddl: str) -> bool:
    """Whether a key column can hold no NULL: declared NOT NULL, a DuckDB primary key, or
    sqlite's one-column INTEGER PRIMARY KEY (the rowid; "DESC" anywhere in the table's DDL:
    perhaps the INTEGER PRIMARY KEY DESC that is no rowid, so not proven)."""
    if col is None:
        return False
    if col.not_null or (is_pk and dialect == "duckdb"):
        return True
    return rowid and col.type == "INTEGER" and "DESC" not in ddl.upper()


def _key_distinct_in(query: str, dialect: str | None, schema: Callable[[], Any]) -> bool:
    """Whether a SELECT of ``query`` has a DISTINCT that a key makes redundant
    (:func:`_key_distinct`)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(query, read=dialect)
    except (SqlglotError, ValueError, RecursionError):
        return False
    return any(_key_distinct(select, schema()) is not None
               for select in tree.find_all(exp.Select) if _plain_distinct(select))


def _plain_distinct(select: Any) -> bool:
    """A SELECT DISTINCT (not DISTINCT ON)."""
    distinct = select.args.get("distinct")
    return distinct is not None and distinct.args.get("on") is None


def key_schema(source: str, dialect: str | None) -> Any:
    """The schema of a sqlite or DuckDB file as the sandboxed neighbour worker reads it
    (keys, NOT NULL; read once per file version in a process), for :func:`_key_distinct`;
    None for another source, or when it cannot be read (then nothing is proven by keys)."""
    from pathlib import Path

    if dialect not in ("sqlite", "duckdb") or "," in source or "://" in source:
        return None
    from queryeval.engines.query.neighbours.distill import _schema
    from queryeval.engines.query.neighbours.runner import NeighbourRunner

    path = Path(source).resolve()
    runner = NeighbourRunner(dialect, [path])  # its worker starts only if the schema is read
    try:
        return _schema(path, dialect, runner, 30.0)
    except Exception:  # noqa: BLE001 - unreadable here: no key is known, nothing proven by one
        return None
    finally:
        runner.close()


_NULL_REJECTING = ("EQ", "NEQ", "GT", "GTE", "LT", "LTE", "Like", "ILike", "In", "Between")
"""Predicates that are NULL (so reject the row in a WHERE) when their first operand, or
either side of a comparison, is NULL."""


def _rejects_nulls_of(where: Any, alias: str) -> bool:
    """Whether a top-level conjunct of ``where`` is false or NULL whenever every column of
    the relation ``alias`` is NULL: a comparison, LIKE, IN, BETWEEN with a column of it as
    an operand (not inside a function, COALESCE, OR or IS), or ``col IS NOT NULL``."""
    from sqlglot import exp

    def ours(node: Any) -> bool:
        return isinstance(node, exp.Column) and node.table.lower() == alias

    for conjunct in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        name = type(conjunct).__name__
        if name in _NULL_REJECTING and isinstance(conjunct, exp.Expression):
            operands = [conjunct.this] + ([conjunct.expression]
                                          if isinstance(conjunct, exp.Binary) else [])
            if any(ours(o) for o in operands):
                return True
        if isinstance(conjunct, exp.Not) and isinstance(conjunct.this, exp.Is) \
                and isinstance(conjunct.this.expression, exp.Null) and ours(conjunct.this.this):
            return True
    return False


def _redundant_left(select: Any) -> list[Any]:
    """The LEFT JOINs of ``select`` that equal an inner join on every database: the WHERE
    rejects the NULLs an unmatched row would carry (:func:`_rejects_nulls_of` on the joined
    relation's alias). None when the select has a RIGHT or FULL join."""
    from sqlglot import exp

    joins = select.args.get("joins") or []
    where = select.args.get("where")
    if where is None or any((j.args.get("side") or "").upper() in ("RIGHT", "FULL")
                            for j in joins):
        return []
    out = []
    for join in joins:
        if (join.args.get("side") or "").upper() != "LEFT" or join.args.get("kind"):
            continue
        target = join.this
        if isinstance(target, (exp.Table, exp.Subquery)) and target.alias_or_name and \
                _rejects_nulls_of(where, target.alias_or_name.lower()):
            out.append(join)
    return out


def equivalent_mutant(gold: str, mutant: str, dialect: str | None = None,
                      schema: Callable[[], Any] | None = None) -> str | None:
    """Why ``mutant`` is provably equivalent to ``gold``, or None: the two differ only by
    DISTINCT where it cannot change the result (:func:`_redundant_distinct`; with
    ``schema``, a function giving the database's schema (:func:`key_schema`), called only
    when a DISTINCT is left to prove: also over a NOT NULL key, :func:`_key_distinct`), or by
    a LEFT JOIN made inner (or an inner join made LEFT) where the WHERE rejects the unmatched
    rows' NULLs (:func:`_redundant_left`). Such a mutant survives every database, so its
    surviving is no evidence about the gold."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    read: list[Any] = []  # the schema, asked for once

    def keys() -> Any:
        if not read:
            read.append(schema() if schema is not None else None)
        return read[0]

    def stripped(text: str, reasons: list[str]) -> str | None:
        try:
            tree = sqlglot.parse_one(text, read=dialect)
        except (SqlglotError, ValueError, RecursionError):
            return None
        for select in list(tree.find_all(exp.Select)):
            if _plain_distinct(select):
                why = _redundant_distinct(select)
                if why is None and schema is not None:
                    why = _key_distinct(select, keys())
                if why is not None:
                    select.set("distinct", None)
                    reasons.append(f"DISTINCT {why}")
            for join in _redundant_left(select):
                join.set("side", None)
                reasons.append("LEFT JOIN under a WHERE that rejects its unmatched rows' "
                               "NULLs")
        return tree.sql(dialect=dialect)

    ra: list[str] = []
    rb: list[str] = []
    a, b = stripped(gold, ra), stripped(mutant, rb)
    if a is None or b is None or a != b or not (ra or rb):
        return None
    # the reason where the two differ (a clause the gold has too is not what was changed)
    return next((r for r in ra + rb if ra.count(r) != rb.count(r)), (ra + rb)[0])


def audit_findings(task: Any, record: dict, query: str, elapsed_ms: list[float | None],
                   neighbours: int = 0, *, timing: dict | None = None,
                   read_cache: bool = True) -> dict[str, Any]:
    """The checks for one gold that ran: ``{"tie_order": ..., "near_deadline": ...,
    "under_constrained": ...}`` with the entries that apply (see :func:`tie_at_limit`,
    :func:`near_deadline`, :func:`under_constrained_finding` with ``neighbours`` > 0).
    ``timing``: where ``elapsed_ms`` come from (:func:`timing_of`), copied into a
    ``near_deadline`` finding when they were cached; ``read_cache``: as :func:`cached_execute`'s."""
    from queryeval.tasks.query.explain import _dialect

    source, language = record["source"], record["language"]
    out: dict[str, Any] = {}
    slow = near_deadline(elapsed_ms, task.options.timeout_s)
    if slow is not None:
        out["near_deadline"] = {**slow, **(timing or {})}
    dialect = _dialect(source) if language == "sql" else None
    steady = not volatile_functions(query, language, dialect)  # its results may be cached
    tie = tie_at_limit(query, language,
                       lambda q: cached_execute(task, source, q, 0, use_cache=steady,
                                                read=read_cache)[0],
                       dialect=dialect)
    if tie:
        out["tie_order"] = tie
    loose = under_constrained_finding(query, source, language, neighbours)
    if loose is not None:
        out["under_constrained"] = loose
    return out


# --- every gold of a suite, as a prediction (queryeval audit) ------------------------------

def fingerprint(table: Any) -> str:
    """sha256 of the canonical sorted result: its rows (cells as text, NULL as null, each
    row written as JSON) sorted. Column names are left out, as scoring leaves them out."""
    from queryeval.metrics.tables.model import as_table

    t = as_table(table)
    rows = sorted(json.dumps([None if c is None else str(c) for c in row], ensure_ascii=False)
                  for row in t.rows)
    text = json.dumps(rows, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_SPARQL_VOLATILE = re.compile(r"\b(NOW|RAND|UUID|STRUUID|BNODE)\s*\(", re.IGNORECASE)
_SQL_NOW_ARG = {"now", "localtime"}


def volatile_functions(query: str, language: str, dialect: str | None = None) -> list[str]:
    """The functions of a gold that read the clock or a random source (its result changes
    between runs however the data stays): SQL through sqlglot (CURRENT_DATE/TIME/TIMESTAMP,
    NOW(), RANDOM(), sqlite's ``date('now')``), SPARQL's NOW(), RAND(), UUID(), STRUUID(),
    BNODE(). Empty when none, or when the query cannot be parsed."""
    if language != "sql":
        # strings and comments are not calls: drop them before looking
        text = re.sub(r"\"[^\"\n]*\"|'[^'\n]*'|#[^\n]*", " ", query)
        return sorted({m.group(1).upper() for m in _SPARQL_VOLATILE.finditer(text)})
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(query, read=dialect)
    except (SqlglotError, ValueError, RecursionError):
        return []
    found: set[str] = set()
    clock = tuple(getattr(exp, n) for n in ("CurrentDate", "CurrentTime", "CurrentTimestamp",
                                            "CurrentDatetime") if hasattr(exp, n))
    random = tuple(getattr(exp, n) for n in ("Rand", "Random") if hasattr(exp, n))
    for node in tree.walk():
        if clock and isinstance(node, clock):
            found.add(node.key.upper())
        elif random and isinstance(node, random):
            found.add("RANDOM")
        elif isinstance(node, exp.Anonymous) and node.name.lower() in ("now", "random",
                                                                       "uuid", "newid"):
            found.add(node.name.upper())
        elif isinstance(node, exp.Func) and any(
                isinstance(a, exp.Literal) and a.is_string and a.name.lower() in _SQL_NOW_ARG
                for a in node.args.values() if isinstance(a, exp.Expression)):
            found.add(f"{node.sql_name() if hasattr(node, 'sql_name') else node.key}('now')")
        elif isinstance(node, exp.Func) and any(
                isinstance(a, exp.Literal) and a.is_string and a.name.lower() in _SQL_NOW_ARG
                for a in node.expressions):
            found.add(f"{node.name or node.key}('now')")
    return sorted(found)


# --- gold results cached across audits -----------------------------------------------------

GOLD_CACHE_VERSION = 1
CACHED_STATUSES = ("ok", "failed", "refused")
"""What an execution may end in to be cached: a result, or the engine's refusal or error. A
timeout (the machine's load) or a result over the scoring budget is run again next time."""
_FILE_PRINTS: dict[tuple, str] = {}


def source_fingerprint(source: str) -> str | None:
    """sha256 over the bytes of every file of a file source (a sqlite or DuckDB database
    with its write-ahead log, RDF files), or None for an endpoint or a server (no file to
    fingerprint: never cached). Read once per file version in a process."""
    from pathlib import Path

    if "://" in source:
        return None
    h = hashlib.sha256()
    for part in (p.strip() for p in source.split(",")):
        if not part:
            continue
        path = Path(part).resolve()
        for f in (path, Path(f"{path}-wal"), Path(f"{path}.wal")):
            if f is not path and not f.is_file():
                continue
            try:
                st = f.stat()
            except OSError:
                return None
            memo = (str(f), st.st_size, st.st_mtime_ns)
            if memo not in _FILE_PRINTS:
                d = hashlib.sha256()
                with open(f, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        d.update(block)
                _FILE_PRINTS[memo] = d.hexdigest()
            h.update(f"{f.name}\0{_FILE_PRINTS[memo]}\0".encode())
    return h.hexdigest()


def _engine_versions() -> dict[str, str]:
    import sqlite3

    from queryeval._version import __version__

    out = {"queryeval": __version__, "sqlite": sqlite3.sqlite_version}
    for name in ("duckdb", "pyoxigraph"):
        try:
            out[name] = getattr(__import__(name), "__version__", "")
        except ImportError:
            out[name] = ""
    return out


def cached_execute(task: Any, source: str, query: str, nth: int = 0,
                   use_cache: bool = True, read: bool = True) -> tuple[dict | None, dict]:
    """``task._execute(source, query)`` -- the ``nth`` execution of that gold in an audit --
    from the disk cache of gold results (``audit`` under
    :func:`queryeval.io.caches.cache_root`) when an audit ran it before on the same files:
    keyed by the source's :func:`source_fingerprint`, the query, ``nth``, every task option
    (deadline, row limit, cell budget ...) and the engines' versions. What ran is written
    there (:mod:`queryeval.io.atomic`; values in :mod:`queryeval.io.typedjson`'s form) when
    it ended in :data:`CACHED_STATUSES`, with when it was timed (``measured_at``, UTC). A
    cached execution's info says ``cached: true`` and keeps that audit's time and
    ``measured_at`` (None for an entry written before it was stored). ``read`` False
    (``queryeval audit --no-cache``): executed now and the entry refreshed with this
    execution. ``use_cache`` False (a gold that reads the clock or a random source), or a
    source without files: executed, never cached."""
    from queryeval.io.caches import CacheFiles, cache_dir
    from queryeval.io.typedjson import UnwritableValue, from_json, to_json

    fp = source_fingerprint(source) if use_cache else None
    if fp is None:
        return task._execute(source, query)
    options = task.options.model_dump(mode="json") if hasattr(task.options, "model_dump") \
        else {}
    key = hashlib.sha256(json.dumps([GOLD_CACHE_VERSION, fp, query, nth, options,
                                     _engine_versions()], sort_keys=True,
                                    default=str).encode()).hexdigest()
    files = CacheFiles(cache_dir("audit"), fan_out=True, fsync=True)
    try:
        doc = files.read(key) if read else None
        if doc is not None:
            return from_json(doc["table"]), {**doc["info"], "cached": True,
                                             "measured_at": doc.get("measured_at")}
    except (ValueError, KeyError, TypeError):
        pass  # not there (or unreadable): run it
    from datetime import datetime, timezone

    measured_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    table, info = task._execute(source, query)
    if info.get("status") in CACHED_STATUSES:
        try:
            text = json.dumps({"table": to_json(table), "info": to_json(info),
                               "measured_at": measured_at})
        except (UnwritableValue, TypeError, ValueError):
            return table, info  # a value with no JSON form: not cached
        try:
            files.write(key, text)
        except OSError:
            pass  # a read-only cache folder: the audit goes on uncached
    return table, info


def timing_of(*infos: dict) -> dict:
    """Where a gold's times come from: ``{"timing": "measured"}`` when every execution ran in
    this audit, else ``{"timing": "cached", "measured_at": ...}`` (the earliest recorded
    time of the cached ones; None when an entry predates it)."""
    cached = [i for i in infos if i.get("cached")]
    if not cached:
        return {"timing": "measured"}
    when = sorted(str(i["measured_at"]) for i in cached if i.get("measured_at"))
    return {"timing": "cached", "measured_at": when[0] if when else None}


def cached_note(timing: dict) -> str:
    """The words a warning adds about a cached time."""
    when = timing.get("measured_at")
    return (f"timing cached from the audit of {when}" if when else
            "timing cached from an earlier audit") + "; --no-cache measures it now"


BROKEN = ("failed", "timeout", "refused", "empty", "nondeterministic", "row_limit", "tie_order")
CEILING_KEYS = ("arity_f1", "entity_set_f1", "row_matching_f1", "exact_match_f1")


def _audit_gold(task: Any, record: dict, query: str, neighbours: int = 0,
                read_cache: bool = True) -> dict:
    from queryeval.metrics.tables import Budget, table_scores
    from queryeval.metrics.tables.modes import query_has_limit
    from queryeval.tasks.query.explain import _dialect

    source, language = record["source"], record["language"]
    volatile = volatile_functions(query, language, _dialect(source) if language == "sql" else None)
    first, info1 = cached_execute(task, source, query, 0, use_cache=not volatile,
                                  read=read_cache)
    second, info2 = cached_execute(task, source, query, 1, use_cache=not volatile,
                                   read=read_cache)
    timing = timing_of(info1, info2)
    out: dict[str, Any] = {"query": query, "elapsed_ms": [info1.get("elapsed_ms"),
                                                          info2.get("elapsed_ms")], **timing}
    warnings = []
    ordered = task._modes({**record, "gold_query": query})
    if query_has_limit(query, language) and not ordered["ordered"]:
        warnings.append("LIMIT/OFFSET without ORDER BY")
    out["warnings"] = warnings
    if first is None or second is None:
        bad = info1 if first is None else info2
        status = bad.get("status", "failed")
        out.update(status=status if status in BROKEN else "failed", reason=bad.get("reason"),
                   rows=None, ceiling=None)
        return out
    out["rows"] = info1.get("rows")
    out["fingerprint"] = fingerprint(first)
    if volatile:
        out["volatile"] = volatile
    sparql = language == "sparql"
    scores = table_scores(first, second, rules=task.options.rules,
                          budget=Budget(max_nodes=task.options.search_nodes, max_seconds=None),
                          pred_query=query if sparql else None,
                          gold_query=query if sparql else None,
                          prefixes=getattr(task.engine(source), "prefixes", None), **ordered)
    out["ceiling"] = {k: getattr(scores, k) for k in CEILING_KEYS}
    out["ceiling"]["mapping_exact"] = scores.exact
    if info1.get("truncated") or info2.get("truncated"):
        out.update(status="row_limit", reason=f"reached the row limit ({task.options.max_rows})")
    elif not info1.get("rows"):
        out.update(status="empty", reason="no rows")
    elif (scores.row_matching_f1 < 1.0 or scores.exact_match_f1 < 1.0
          or info1.get("rows") != info2.get("rows")):
        out.update(status="nondeterministic", reason="the two executions returned different rows")
    else:
        out.update(status="ok", reason=None)
    found = audit_findings(task, record, query, out["elapsed_ms"], neighbours,
                           timing=timing if timing["timing"] == "cached" else None,
                           read_cache=read_cache)
    out.update(found)
    if "near_deadline" in found:
        slow = found["near_deadline"]
        warnings.append(f"close to the deadline: {slow['elapsed_ms']:.0f} ms of "
                        f"{slow['deadline_ms']:.0f} ms ({slow['share']:.0%})"
                        + (f" ({cached_note(slow)})" if slow.get("timing") == "cached" else ""))
    if "under_constrained" in found:
        loose = found["under_constrained"]
        warnings.append(f"no database (this one and {loose['neighbours']} neighbours) tells it "
                        f"apart from {len(loose['mutants'])} near-miss mutant(s), e.g. "
                        f"{loose['mutants'][0]}: an under-constrained question or a redundant "
                        "clause")
    if "tie_order" in found:
        tie = found["tie_order"]
        reason = (f"rows {tie['rows'][0]} and {tie['rows'][1]} of the uncut result tie on the "
                  f"sort key {tie['key']}: the rows kept by LIMIT depend on tie order")
        if out["status"] == "ok":
            out.update(status="tie_order", reason=reason)
        else:
            warnings.append(reason)
    return out


def audit_cases(task: Any, cases: list, neighbours: int = 0, *,
                read_cache: bool = True) -> list[dict]:
    """One entry per gold query of every case (a case's ``gold`` is number 0, its
    ``alternatives`` 1, 2, ...). A gold that several cases share (same source, comparison
    modes and query: BuildingQA's paraphrases) runs once and each case gets its entry.
    ``read_cache`` False: every gold executed now (:func:`cached_execute`)."""
    import copy

    from queryeval.tasks.query.engines import _lang_of

    results = []
    done: dict[str, dict] = {}  # the same gold on the same source, modes and checks: run once
    for case in task.select_cases(cases):
        target = task.target_of(case)
        source = task._source(target)
        record = {"source": source, "language": target.language or _lang_of(source),
                  "modes": {k: getattr(target, k) for k in ("ordered", "abs_tol", "rel_tol",
                                                            "columns")
                            if getattr(target, k) is not None}}
        for number, query in enumerate([target.gold, *target.alternatives]):
            entry = {"case_id": case.id, "gold": number}
            key = json.dumps([record, query, neighbours], sort_keys=True, default=str)
            if key not in done:
                done[key] = _audit_gold(task, record, query, neighbours, read_cache)
            entry.update(copy.deepcopy(done[key]))
            results.append(entry)
    return results
