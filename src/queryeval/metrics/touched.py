"""What a query touched: the schema elements it reads, against the gold's.

* SQL, through sqlglot's scope analysis: the query is qualified (``qualify``, with the
  database's schema when known, so ``*`` expands and an unqualified column in a join finds
  its table), then every scope's columns are traced to the base table they come from —
  through CTEs, derived tables and set operations, alias by alias (the same walk as
  sqlglot's ``lineage``, done for every column at once; a correlated subquery's column of an
  enclosing query is traced in that query). **tables**: the base tables read;
  **columns**: ``table.column`` of every column read anywhere (select list, joins, filters,
  grouping, ordering); **filters**: the columns read in a ``WHERE``, ``HAVING`` or join
  condition of their own scope.
* SPARQL, through rdflib's SPARQL 1.1 parser: **tables** are the classes (objects of
  ``rdf:type`` / ``a``), **columns** the predicates (every IRI of a predicate path other
  than ``rdf:type``), **filters** the predicates whose object variable a ``FILTER`` reads.

Names are compared lower-cased for SQL (sqlite, DuckDB and unquoted PostgreSQL names fold
case) and as full IRIs for SPARQL. :func:`touched_scores` gives precision and recall of
each set against the gold's: ``|P ∩ G| / |P|`` and ``|P ∩ G| / |G|``, 1.0 for an empty
set (the rule of the entity-set F1's per-column sets). Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from queryeval.metrics.protocol import ratio
from queryeval.metrics.tables.arity import walk_parse_tree

ELEMENTS = ("table", "column", "filter")
SCORE_KEYS = tuple(f"schema_{e}_{m}" for e in ELEMENTS for m in ("precision", "recall"))
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
UNKNOWN_TABLE = "?"
"""The table of a column no schema resolves (an unqualified column of a join without one)."""


def touched_scores(gold: Mapping[str, Iterable[str]],
                   pred: Mapping[str, Iterable[str]] | None) -> dict[str, float]:
    """``schema_{table,column,filter}_{precision,recall}`` of ``pred``'s touched elements
    against ``gold``'s (:func:`sql_touched` / :func:`sparql_touched`); a prediction that
    could not be read (``None``) touched nothing it can be credited for: 0.0 each."""
    out: dict[str, float] = {}
    for element, key in zip(ELEMENTS, ("tables", "columns", "filters"), strict=True):
        g = set(gold[key])
        if pred is None:
            out[f"schema_{element}_precision"] = out[f"schema_{element}_recall"] = 0.0
            continue
        p = set(pred[key])
        both = len(p & g)
        out[f"schema_{element}_precision"] = ratio(both, len(p), zero_division=1.0)
        out[f"schema_{element}_recall"] = ratio(both, len(g), zero_division=1.0)
    return out


def touched(query: str, language: str, *, schema: Mapping[str, Iterable[str]] | None = None,
            dialect: str | None = None, prefixes: Mapping[str, str] | None = None
            ) -> dict[str, list[str]] | None:
    """The elements ``query`` touches (sorted lists under ``tables``, ``columns``,
    ``filters``), or ``None`` when it does not parse."""
    if language == "sparql":
        return sparql_touched(query, prefixes)
    return sql_touched(query, schema=schema, dialect=dialect)


# --- SQL -----------------------------------------------------------------------------------

def sql_touched(query: str, *, schema: Mapping[str, Iterable[str]] | None = None,
                dialect: str | None = None) -> dict[str, list[str]] | None:
    """Tables, ``table.column`` columns and filter columns of one SQL query (module
    docstring); ``schema``: table name -> column names, used to resolve columns."""
    import sqlglot
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import traverse_scope

    try:
        trees = [t for t in sqlglot.parse(query, read=dialect) if t is not None]
        if len(trees) != 1 or not isinstance(trees[0], sqlglot.exp.Query):
            return None
        typed = ({str(t).lower(): {str(c).lower(): "text" for c in cols}
                  for t, cols in schema.items()} if schema else None)
        try:
            tree = qualify(trees[0].copy(), schema=typed, dialect=dialect,
                           validate_qualify_columns=False, identify=False)
        except SqlglotError:  # a column no schema places: leave columns as written
            tree = qualify(trees[0], schema=typed, dialect=dialect, qualify_columns=False,
                           validate_qualify_columns=False, identify=False)
        scopes = list(traverse_scope(tree))
    except (SqlglotError, ValueError, RecursionError, KeyError, AttributeError, TypeError):
        return None
    defaults = DEFAULT_SCHEMAS.get(dialect or "", ("main", "public"))
    known = {id(s.expression): s for s in scopes}  # a recursive CTE's self-reference: below
    tables: set[str] = set()
    columns: set[str] = set()
    filters: set[str] = set()
    for scope in scopes:
        for source in scope.sources.values():
            if isinstance(source, sqlglot.exp.Table):
                tables.add(_table_name(source, defaults))
        for col in scope.columns:
            found = _resolve(scope, col.table, col.name, 0, defaults, known)
            columns |= found
            if _in_filter(col, scope.expression):
                filters |= found
    return {"tables": sorted(tables), "columns": sorted(columns), "filters": sorted(filters)}


DEFAULT_SCHEMAS = {"sqlite": ("main",), "duckdb": ("main",), "postgres": ("public",)}
"""The schema an unqualified table is in: ``main.emp`` on sqlite is the table ``emp``."""


def _table_name(table: Any, defaults: tuple[str, ...] = ()) -> str:
    db = "" if table.db.lower() in defaults and not table.catalog else table.db
    return ".".join(p for p in (db, table.name) if p).lower()


def _resolve(scope: Any, alias: str, name: str, depth: int,
             defaults: tuple[str, ...] = (), known: Mapping[int, Any] | None = None,
             seen: frozenset = frozenset()) -> set[str]:
    """The base ``table.column`` names a column of ``scope`` reads (a derived table's or a
    CTE's column: the columns of its defining expression, recursively). ``known``: the
    traversed scopes by expression, for a recursive CTE's reference to itself (sqlglot gives
    it a bare copy of the anchor's scope, with no sources: resolved in the whole CTE, anchor
    and recursive branch, each column once)."""
    from sqlglot import exp

    name = name.lower()
    source = scope.sources.get(alias) if alias else None
    outer = getattr(scope, "parent", None)
    while source is None and alias and outer is not None:
        # a correlated subquery reads a column of an enclosing scope (``e.dept`` inside
        # ``EXISTS (SELECT ... WHERE d.id = e.dept)``): resolve it there
        source, scope, outer = outer.sources.get(alias), outer, getattr(outer, "parent", None)
    if source is None:
        # the sources of this scope's FROM and joins (a WITH RECURSIVE anchor also sees the
        # CTE itself among its sources, which it does not read)
        read = [src for _, src in scope.selected_sources.values()]
        if not alias and len(read) == 1 and isinstance(read[0], exp.Table):
            return {f"{_table_name(read[0], defaults)}.{name}"}
        return {f"{UNKNOWN_TABLE}.{name}"}
    if isinstance(source, exp.Table):
        return {f"{_table_name(source, defaults)}.{name}"}
    if known and not source.sources and isinstance(source.expression.parent, exp.SetOperation):
        source = known.get(id(source.expression.parent), source)  # WITH RECURSIVE r: all of r
    key = (id(source.expression), name)
    if depth > 64 or key in seen:  # a recursive CTE's branch reads the CTE itself
        return set()
    seen = seen | {key}
    out: set[str] = set()
    branches = [known.get(id(b.expression), b) if known else b for b in _branches(source)]
    first = [s.alias_or_name.lower() for s in branches[0].expression.selects] if branches else []
    # a set operation's columns are named by its first branch and matched by position; a
    # column list (``WITH r(id) AS ...``) names them where the selects were not renamed
    listed = _column_list(source.expression)
    position = (first.index(name) if name in first else
                listed.index(name) if name in listed else None)
    for inner in branches:
        selects = inner.expression.selects
        chosen = ([selects[position]] if position is not None and position < len(selects)
                  else [s for s in selects if isinstance(s, exp.Star)])
        for select in chosen:
            for col in select.find_all(exp.Column):
                out |= _resolve(inner, col.table, col.name, depth + 1, defaults, known, seen)
    return out


def _column_list(expression: Any) -> list[str]:
    """The column list a CTE or derived table gives its query (``r(id, lvl)``), or []."""
    from sqlglot import exp

    node = expression.parent
    while isinstance(node, exp.SetOperation):
        node = node.parent
    alias = node.args.get("alias") if isinstance(node, (exp.CTE, exp.Subquery)) else None
    return [c.name.lower() for c in alias.columns] if isinstance(alias, exp.TableAlias) else []


def _branches(scope: Any) -> Iterator[Any]:
    """The SELECT scopes a source scope stands for (each branch of a UNION)."""
    stack = [scope]
    while stack:
        s = stack.pop()
        branches = getattr(s, "set_operation_scopes", None) or getattr(s, "union_scopes", None)
        if branches:
            stack.extend(reversed(branches))  # first branch first: it names the columns
        else:
            yield s


def _in_filter(column: Any, top: Any) -> bool:
    from sqlglot import exp

    node = column
    while node is not None and node is not top:
        parent = node.parent
        if isinstance(node, (exp.Where, exp.Having)):
            return True
        if isinstance(parent, exp.Join) and node.arg_key in ("on", "using"):
            return True
        node = parent
    return False


# --- SPARQL -------------------------------------------------------------------------------

def sparql_touched(query: str, prefixes: Mapping[str, str] | None = None
                   ) -> dict[str, list[str]] | None:
    """Classes, predicates and filter predicates of one SPARQL query (module docstring)."""
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseQuery

    try:
        parsed = parseQuery(query)
    except (ParseException, RecursionError, ValueError, TypeError):
        return None
    prologue, body = parsed[0], parsed[1]
    known = dict(prefixes or {})
    base = None
    for decl in prologue:
        if decl.name == "PrefixDecl":
            known[str(dict.get(decl, "prefix") or "")] = str(decl["iri"])
        elif decl.name == "Base":
            base = str(decl["iri"])
    classes: set[str] = set()
    predicates: set[str] = set()
    object_vars: dict[str, set[str]] = {}
    filter_vars: set[str] = set()
    for node in walk_parse_tree(body):
        name = getattr(node, "name", None)
        if name in ("Filter", "Having"):
            filter_vars |= {str(v) for v in walk_parse_tree(node) if _is_var(v)}
    for _subject, verb, obj in _triples(body):
        iris = [_iri(t, known, base) for t in _path_terms(verb)]
        for iri in iris:
            if iri is None:
                continue
            if iri == RDF_TYPE:
                cls = _iri(obj, known, base)
                if cls is not None:
                    classes.add(cls)
            else:
                predicates.add(iri)
                if _is_var(obj):
                    object_vars.setdefault(str(obj), set()).add(iri)
    filters = {p for v in filter_vars for p in object_vars.get(v, ())}
    return {"tables": sorted(classes), "columns": sorted(predicates), "filters": sorted(filters)}


def _is_var(term: Any) -> bool:
    return type(term).__name__ == "Variable"


def _triples(body: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(subject, verb, object) of every triple pattern: rdflib's parse keeps a block's
    triples as flat lists ``s p o [p o ...]``, with ``;`` and ``,`` already expanded."""
    for node in walk_parse_tree(body):
        if getattr(node, "name", None) == "TriplesBlock":
            for triples in dict.get(node, "triples") or ():
                flat = list(triples)
                for i in range(0, len(flat) - 2, 3):
                    yield flat[i], flat[i + 1], flat[i + 2]


def _path_terms(verb: Any) -> Iterator[Any]:
    """The IRIs (or prefixed names) of a predicate or property path."""
    if getattr(verb, "name", None) == "pname" or type(verb).__name__ == "URIRef":
        yield verb
        return
    if _is_var(verb):
        return
    for node in walk_parse_tree(verb):
        if getattr(node, "name", None) == "pname" or type(node).__name__ == "URIRef":
            yield node


def _iri(term: Any, prefixes: Mapping[str, str], base: str | None) -> str | None:
    from urllib.parse import urljoin

    if getattr(term, "name", None) == "pname":
        prefix = str(dict.get(term, "prefix") or "")
        if prefix not in prefixes:
            return None
        return prefixes[prefix] + str(dict.get(term, "localname") or "")
    if type(term).__name__ == "URIRef":
        text = str(term)
        return urljoin(base, text) if base else text
    return None
