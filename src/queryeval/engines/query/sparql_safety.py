"""SPARQL decisions from one real parse: safety, form, arity and order.

:func:`check_sparql` parses the text once with a complete SPARQL 1.1 grammar (rdflib's
parser and algebra) and reads every decision off that parse, never off rewritten text:

* **refused** (:class:`QueryRefused`): a ``SERVICE`` clause anywhere (federated queries make
  an engine send requests), a ``FROM`` / ``FROM NAMED`` clause naming a graph outside
  ``allowed_graphs`` (engines may fetch it), and SPARQL Update (``INSERT``, ``DELETE``,
  ``LOAD``, ``CLEAR`` ...: the text parses as an update, not as a query), and a ``\\u``
  escape of an ASCII character other than a letter or digit (the grammar expands escapes
  before parsing, oxigraph and endpoints do not: an escaped newline would end a comment for
  one parser only) or a bare carriage return (it ends a comment for oxigraph, not for
  rdflib; :func:`_refuse_ambiguous_text`);
* **syntax** (:class:`SparqlSyntaxError`): text that is neither a query nor an update, or a
  prefix that is neither declared nor supplied (``lenient_prefixes`` -- remote endpoints,
  which predefine prefixes -- accepts the names in :data:`ENDPOINT_PREFIXES` undeclared and
  refuses any other);
* otherwise a :class:`SparqlCheck`: the form, the prefixes the query declares, its dataset
  clauses, the number of columns it returns (``arity``) and whether it sorts or slices at
  the top level.

Where this parse and the executing engine's own parser may disagree -- oxigraph's parser
backtracks, so ``?s ?p trueSERVICE:x { ... }`` is ``true SERVICE :x { ... }`` for it while
the grammar reads an undeclared prefixed name -- the decision does not rest on the parse
alone: the embedded engines run every query in the operating-system sandbox
(:mod:`.sandbox`), where the engine cannot open a socket or write a file whatever it reads.
Text the grammar rejects is handed to the engine only on an empty store inside that sandbox,
to tell a plain syntax error from text it reads differently (which is refused). See
:mod:`.sparql_worker` and docs/reliability.md.

The parse runs inside the worker process, under the query's deadline and memory cap; the
caller checks only the type and the length (:func:`check_length`, linear).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from queryeval.engines.query.base import QueryRefused

__all__ = ["MAX_QUERY_CHARS", "QueryRefused", "SparqlCheck", "SparqlSyntaxError",
           "check_length", "check_sparql"]

MAX_QUERY_CHARS = 100_000
"""Longest query text accepted (characters). Generated queries are a few hundred characters;
checking and planning cost grows with the length (pyoxigraph plans a 4,000-pattern BGP for
minutes), so longer text is refused before any work is done."""

QUERY_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
PLACEHOLDER_PREFIX = "http://queryeval.invalid/prefix/"
ENDPOINT_PREFIXES = frozenset("""
brick csvw dc dcam dcat dcmitype dcterms doap foaf geo odrl org owl prof prov qb rdf rdfs
schema sh skos sosa ssn time vann void wgs xml xsd
dbo dbr dbp dbc dbpedia yago wd wdt wds wdv wdref wikibase p ps pq pr prv bd psv pqv
""".split())
"""Prefixes a remote endpoint may predefine (rdflib's well-known vocabularies, DBpedia's and
Wikidata's): with ``lenient_prefixes`` a query may use these undeclared. Any other
undeclared prefix is refused, even for an endpoint: a parser that does not know the prefix
may read the name differently (oxigraph reads an unknown ``trueSERVICE:x`` as
``true SERVICE :x``), so only names that are plain vocabulary names are let through."""


class SparqlSyntaxError(Exception):
    """The text is not a SPARQL query (nor an update)."""


@dataclass
class SparqlCheck:
    """What one parse learned about a query that may run.

    ``form``: SELECT, ASK, CONSTRUCT or DESCRIBE; ``prefixes``: the prefixes the query
    declares itself; ``datasets``: the ``(named, iri)`` pairs of its FROM clauses;
    ``arity``: the number of columns it returns (SELECT: projected variables, ``SELECT *``
    the in-scope ones; ASK 1; CONSTRUCT / DESCRIBE 3: subject, predicate, object);
    ``ordered`` / ``limited``: a top-level ORDER BY / LIMIT or OFFSET.
    """

    form: str
    prefixes: dict[str, str] = field(default_factory=dict)
    datasets: list[tuple[bool, str]] = field(default_factory=list)
    arity: int = 0
    ordered: bool = False
    limited: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"form": self.form, "prefixes": dict(self.prefixes),
                "datasets": [list(d) for d in self.datasets], "arity": self.arity,
                "ordered": self.ordered, "limited": self.limited}


def check_length(text: object, max_chars: int = MAX_QUERY_CHARS) -> str:
    """``text`` when it is a string of at most ``max_chars`` characters; else QueryRefused."""
    if not isinstance(text, str):
        raise QueryRefused(f"query must be text, got {type(text).__name__}")
    if len(text) > max_chars:
        raise QueryRefused(f"query is {len(text):,} characters long; the limit is {max_chars:,}")
    return text


def check_sparql(
    text: str,
    *,
    allowed_graphs: Collection[str] = (),
    prefixes: Mapping[str, str] | None = None,
    base_iri: str | None = None,
    lenient_prefixes: bool = False,
    max_chars: int = MAX_QUERY_CHARS,
) -> SparqlCheck:
    """Parse ``text`` once and decide (module docstring); raise :class:`QueryRefused` or
    :class:`SparqlSyntaxError`. ``prefixes``: the default prefixes the engine supplies
    (``FROM ex:g`` is expanded with them); ``allowed_graphs``: the graph IRIs a FROM /
    FROM NAMED clause may name."""
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseQuery, parseUpdate

    check_length(text, max_chars)
    _refuse_ambiguous_text(text)
    try:
        parsed = parseQuery(text)
    except (ParseException, RecursionError, ValueError, TypeError) as exc:
        try:
            update = parseUpdate(text)
        except Exception:  # noqa: BLE001 - neither a query nor an update
            raise SparqlSyntaxError(_first_line(exc)) from None
        names = sorted({re.sub(r"(?<=[a-z])(?=[A-Z])", " ", str(getattr(op, "name", "") or "UPDATE")).upper()
                        for op in _get(update, "request") or ()})
        raise QueryRefused(f"SPARQL Update is not allowed ({', '.join(names) or 'UPDATE'})") \
            from None
    prologue, query = parsed[0], parsed[1]
    declared: dict[str, str] = {}
    base = base_iri
    for decl in prologue:
        if decl.name == "PrefixDecl":
            declared[str(_get(decl, "prefix") or "")] = str(decl["iri"])
        elif decl.name == "Base":
            base = str(decl["iri"])
    known = {**dict(prefixes or {}), **declared}
    init_ns = dict(known)
    for node in _walk(query):
        name = getattr(node, "name", None)
        if name == "ServiceGraphPattern":
            raise QueryRefused("SERVICE (federated query to another endpoint) is not allowed")
        if name == "pname":
            prefix = str(_get(node, "prefix") or "")
            if prefix not in init_ns:
                if not lenient_prefixes:
                    raise SparqlSyntaxError(f"prefix {prefix + ':'!r} is not declared")
                if prefix not in ENDPOINT_PREFIXES:
                    raise QueryRefused(
                        f"prefix {prefix + ':'!r} is neither declared nor one an endpoint "
                        "predefines; an endpoint's parser may read it differently "
                        "(declare it with PREFIX)")
                init_ns[prefix] = f"{PLACEHOLDER_PREFIX}{len(init_ns)}#"
    allowed = set(allowed_graphs)
    datasets: list[tuple[bool, str]] = []
    for clause in _get(query, "datasetClause") or ():
        named = "named" in clause
        iri = _resolve(clause["named"] if named else clause["default"], known, base)
        keyword = "FROM NAMED" if named else "FROM"
        if iri is None or iri not in allowed:
            shown = "an undeclared prefixed name" if iri is None else f"<{iri}>"
            raise QueryRefused(f"{keyword} {shown} names a graph outside the store "
                               "(engines may fetch it)")
        datasets.append((named, iri))
    form = str(query.name).removesuffix("Query").upper()
    if form not in QUERY_FORMS:  # pragma: no cover - parseQuery yields only these
        raise SparqlSyntaxError(f"not a SPARQL query form: {query.name}")
    return SparqlCheck(form=form, prefixes=declared, datasets=datasets,
                       arity=_arity(parsed, form, base, init_ns),
                       ordered=_get(query, "orderby") is not None,
                       limited=_get(query, "limitoffset") is not None)


_BARE_CR = re.compile(r"\r(?!\n)")


def _refuse_ambiguous_text(text: str) -> None:
    """Refuse a bare carriage return: rdflib ends a comment at a line feed only, oxigraph (as
    the grammar's EOL says) at a carriage return too, so text after a bare CR in a comment
    is code for the engine only. Refuse a ``\\u`` / ``\\U`` escape of an ASCII character
    that is not a letter or a digit. The grammar (rdflib's ``expandUnicodeEscapes``, by the
    same pattern) expands escapes in the whole text before parsing; oxigraph and most
    endpoints do not outside strings and IRIs. An escaped newline in a comment ends the
    comment for the grammar only, an escaped quote ends a string for it only: the text
    would be code for one parser and a comment or a string for the other (a SERVICE or
    FROM the grammar never sees). Letters, digits and non-ASCII characters cannot move a
    token boundary."""
    from rdflib.plugins.sparql.parser import expandUnicodeEscapes_re

    bare_cr = _BARE_CR.search(text)
    if bare_cr is not None:
        raise QueryRefused(
            f"a carriage return not followed by a line feed (character {bare_cr.start()}): "
            "it ends a comment for the engine but not for the grammar, so the query cannot "
            "be verified")
    for match in expandUnicodeEscapes_re.finditer(text):
        code = int(match.group(1), 16)
        if code < 0x80 and not chr(code).isalnum():
            raise QueryRefused(
                f"the escape {match.group(0)!r} (U+{code:04X}) spells SPARQL syntax; parsers "
                "disagree on where it applies (the grammar expands it everywhere, the engine "
                "only inside strings and IRIs), so the query cannot be verified; write the "
                "character itself")


def _arity(parsed: Any, form: str, base: str | None, init_ns: Mapping[str, str]) -> int:
    if form == "ASK":
        return 1
    if form != "SELECT":
        return 3
    from queryeval.metrics.tables.arity import projection_count

    count = projection_count(parsed, init_ns)
    if count is None:
        raise SparqlSyntaxError("the SELECT clause is not valid (a variable projected twice?)")
    return count


def _walk(node: Any) -> Iterator[Any]:
    """Every node of a parse (CompValue, ParseResults, lists), depth first, no recursion."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict):  # CompValue is an OrderedDict
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)) or type(item).__name__ == "ParseResults":
            stack.extend(item)


def _resolve(term: Any, prefixes: Mapping[str, str], base: str | None) -> str | None:
    from urllib.parse import urljoin

    if getattr(term, "name", None) == "pname":
        prefix = str(_get(term, "prefix") or "")
        if prefix not in prefixes:
            return None
        return prefixes[prefix] + str(_get(term, "localname") or "")
    text = str(term)
    return urljoin(base, text) if base else text


def _get(node: Any, key: str) -> Any:
    """``node[key]`` or None (rdflib's ``CompValue.get`` returns the key when it is missing)."""
    return dict.get(node, key) if isinstance(node, dict) else None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
