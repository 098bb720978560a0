"""Arity (column count) of a query or a result, and arity F1.

Two ways to count a query's columns:

* :func:`sparql_arity` (clean rules) parses the query with a complete SPARQL 1.1 grammar
  (rdflib's parser and algebra; :func:`sparql_shape`) and counts the projected variables, so
  ``SELECT *`` counts the in-scope variables and ``SELECT ?x {...}`` (no ``WHERE`` keyword)
  counts 1. The text is only parsed, never evaluated. The scorer does not even parse a
  predicted query: under clean rules it counts the columns of the result the sandboxed
  worker returned (see :func:`.scores.table_scores`), which is the same number.
* :func:`buildingqa_arity` (BuildingQA rules) reproduces the reference's regular
  expression: the whitespace-separated tokens (parentheses kept whole) between ``SELECT``
  and the first ``WHERE``, other than ``DISTINCT``. ``SELECT *`` is 1; no ``WHERE`` is 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_BQA_SELECT = re.compile(r"SELECT\s+(.+?)\s+WHERE", re.IGNORECASE | re.DOTALL)
# the reference's expression backtracks in cubic time over long whitespace runs (a predicted
# query of SELECT and 4,000 spaces: about 100 s, holding the GIL). Its result depends on a
# whitespace run only through min(length, 3) and the count ignores whitespace amounts, so
# runs are cut to three characters first; and nothing after the last whitespace + WHERE can
# be part of a match, so the text ends there (else each later SELECT scanned to the end:
# quadratic), and without one it cannot match at all
_LONG_SPACE = re.compile(r"(\s{3})\s+")
_SPACE_WHERE = re.compile(r"\sWHERE", re.IGNORECASE)


def buildingqa_arity(query: str) -> int:
    """The reference's projection count (see the module docstring), reproduced exactly."""
    query = _LONG_SPACE.sub(r"\1", query)
    end = None
    for end in _SPACE_WHERE.finditer(query):  # noqa: B007 - the last one is wanted
        pass
    if end is None:
        return 0
    query = query[:end.end()]
    match = _BQA_SELECT.search(query)
    if not match:
        return 0
    tokens: list[str] = []
    depth, current = 0, ""
    for char in match.group(1).strip():
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char.isspace() and depth == 0:
            if current:
                tokens.append(current)
                current = ""
        else:
            current += char
    if current:
        tokens.append(current)
    return len([t for t in tokens if t.upper() != "DISTINCT"])


@dataclass(frozen=True)
class SparqlShape:
    """What one parse of a SPARQL query says about its result: ``arity`` (columns: SELECT
    the projected variables, ASK 1, CONSTRUCT / DESCRIBE 3), ``ordered`` (a top-level ORDER
    BY) and ``limited`` (a top-level LIMIT or OFFSET)."""

    arity: int
    ordered: bool
    limited: bool


def sparql_shape(query: str, prefixes: Mapping[str, str] | None = None) -> SparqlShape | None:
    """One parse of ``query`` (rdflib's SPARQL 1.1 grammar; nothing is evaluated, no request
    can be sent); ``None`` when it is not a query (an update, a syntax error, over
    :data:`MAX_PARSE_CHARS`). Prefixes the query uses without declaring them (BuildingQA's
    gold queries rely on the graph's prefixes) get placeholder IRIs: they cannot change the
    shape."""
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseQuery

    if not isinstance(query, str) or len(query) > MAX_PARSE_CHARS:
        return None
    try:
        parsed = parseQuery(query)
    except (ParseException, RecursionError, ValueError, TypeError):
        return None
    body = parsed[1]
    form = str(body.name)
    ordered = dict.get(body, "orderby") is not None
    limited = dict.get(body, "limitoffset") is not None
    if form != "SelectQuery":
        return SparqlShape(1 if form == "AskQuery" else 3, ordered, limited)
    names = dict(prefixes or {})
    for node in walk_parse_tree(body):
        if getattr(node, "name", None) == "pname":
            names.setdefault(str(dict.get(node, "prefix") or ""),
                             f"urn:queryeval:prefix:{len(names)}#")
    count = projection_count(parsed, names)
    return None if count is None else SparqlShape(count, ordered, limited)


def projection_count(parsed: Any, prefixes: Mapping[str, str]) -> int | None:
    """The projected variables of a parsed SELECT (rdflib's algebra: ``SELECT *`` gives the
    in-scope variables); None when the algebra rejects it (a variable projected twice ...).
    Prefixed names are expanded here with ``prefixes`` (which must cover every one used),
    not by rdflib's namespace manager, which keeps one prefix per IRI (two prefixes bound to
    one IRI would make the first "unknown")."""
    from rdflib import URIRef
    from rdflib.plugins.sparql.algebra import translateQuery, traverse

    def expand(node: Any) -> Any:
        if getattr(node, "name", None) == "pname":
            prefix = str(dict.get(node, "prefix") or "")
            return URIRef(prefixes.get(prefix, "urn:queryeval:prefix:unknown#")
                          + str(dict.get(node, "localname") or ""))
        return None

    try:
        body = traverse(parsed[1], visitPost=expand)
        algebra = translateQuery([[], body]).algebra
    except Exception:  # noqa: BLE001 - not a valid query for the algebra
        return None
    return len(dict.get(algebra, "PV") or ())


MAX_PARSE_CHARS = 100_000
"""Longer text is not parsed (the engines refuse it as well)."""


def walk_parse_tree(node: Any) -> Iterator[Any]:
    """Every node of an rdflib/pyparsing SPARQL parse tree (dicts, lists, ParseResults)."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)) or type(item).__name__ == "ParseResults":
            stack.extend(item)


def sparql_arity(query: str, prefixes: Mapping[str, str] | None = None) -> int | None:
    """The number of columns a SPARQL query returns (:func:`sparql_shape`); ``None`` when
    the text is not a valid query."""
    shape = sparql_shape(query, prefixes)
    return None if shape is None else shape.arity


def arity_f1_from_counts(pred_count: int, gold_count: int) -> float:
    """F1 of two column counts: ``2·min / (pred + gold)``; 1.0 when both are 0."""
    if pred_count < 0 or gold_count < 0:
        raise ValueError("column counts cannot be negative")
    total = pred_count + gold_count
    if total == 0:
        return 1.0
    return 2 * min(pred_count, gold_count) / total
