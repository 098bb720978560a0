"""The relations and functions a PostgreSQL query names, as the server reads them, and the
one rewrite the neighbours allow: dropping a schema qualifier that provably changes nothing
(docs/test-suite.md, "PostgreSQL"). Parsing only (sqlglot); nothing runs here."""

from __future__ import annotations

from typing import Any

from queryeval.engines.query.base import QueryRefused
from queryeval.engines.query.sql_safety import remembered


def query_names(query: str) -> tuple[list[str], list[str]]:
    """(relation names, function names) of ``query`` as the server reads them (unquoted
    names folded to lower case; CTE names left out). Raises QueryRefused when a relation is
    named with its schema: on a neighbour that name would reach the real table, not the
    temporary copy. Text sqlglot cannot parse gives no relations (the worker's plan check
    still holds). A text is parsed once a process (:func:`.sql_safety.remembered`: a gold
    and its mutants run on every candidate and neighbour)."""
    relations, functions = _remembered_names(query)
    return list(relations), list(functions)


def _query_names(query: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    import sqlglot
    from sqlglot import exp
    from sqlglot.dialects.postgres import Postgres
    from sqlglot.tokens import TokenType

    functions: list[str] = []
    try:
        tokens = Postgres().tokenize(query)
    except sqlglot.errors.SqlglotError:
        tokens = []
    for tok, nxt in zip(tokens, tokens[1:], strict=False):
        if nxt.token_type == TokenType.L_PAREN and tok.token_type not in (
                TokenType.STRING, TokenType.NUMBER, TokenType.R_PAREN, TokenType.L_PAREN):
            name = tok.text if tok.token_type == TokenType.IDENTIFIER else tok.text.lower()
            if name not in functions:
                functions.append(name)
    try:
        tree = sqlglot.parse_one(query, read="postgres")
    except sqlglot.errors.SqlglotError:
        return (), tuple(functions)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    relations: list[str] = []
    for table in tree.find_all(exp.Table):
        ident = table.this
        if not isinstance(ident, exp.Identifier):
            continue  # a table function (generate_series ...), not a relation
        if table.args.get("db") or table.args.get("catalog"):
            raise QueryRefused(
                f"names the table {table.sql(dialect='postgres')} with its schema: on "
                "PostgreSQL the neighbour databases are temporary tables, which only "
                "unqualified names reach (write the table's name alone)")
        name = ident.this if ident.quoted else ident.this.lower()
        if name.lower() not in ctes and name not in relations:
            relations.append(name)
    return tuple(relations), tuple(functions)


_remembered_names = remembered(_query_names)


def table_refs(query: str) -> list[list[str | None]]:
    """``[schema or None, name]`` of every relation ``query`` names (CTE names left out);
    QueryRefused for a name with a database part. Text sqlglot cannot parse gives none."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(query, read="postgres")
    except sqlglot.errors.SqlglotError:
        return []
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out: list[list[str | None]] = []
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue
        if table.args.get("catalog"):
            raise QueryRefused(f"names the table {table.sql(dialect='postgres')} with its "
                               "database: the neighbour databases are temporary tables")
        name = _server_name(table.this)
        schema = _server_name(table.args["db"]) if table.args.get("db") else None
        if (schema is not None or name.lower() not in ctes) and [schema, name] not in out:
            out.append([schema, name])
    return out


def _server_name(ident: Any) -> str:
    """An identifier as the server reads it: quoted as written, unquoted folded to lower
    case (ASCII letters only, as PostgreSQL folds)."""
    text = ident.this if hasattr(ident, "this") else str(ident)
    if getattr(ident, "quoted", False):
        return text
    return text.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                                        "abcdefghijklmnopqrstuvwxyz"))


def unqualify(query: str, visible: list[list[str]]) -> str:
    """``query`` with the schema dropped from each table name ``schema.name`` whose
    unqualified name reaches the same table (``visible``: the neighbour's tables for which
    ``pg_table_is_visible``): the same query on the real database, and on a neighbour one
    that reaches its temporary copy. Only when provably so: the text changes only in those
    qualifiers, checked by parsing both (the rewritten tree must be the original's with
    exactly those schema parts removed); otherwise ``query`` unchanged (and refused later).
    A text is rewritten once a process for each ``visible`` (:func:`.sql_safety.remembered`)."""
    return _remembered_unqualify(query, tuple((s, n) for s, n in visible))


def _unqualify(query: str, visible: tuple[tuple[str, str], ...]) -> str:
    import sqlglot
    from sqlglot import exp
    from sqlglot.dialects.postgres import Postgres
    from sqlglot.tokens import TokenType

    keep = {(s, n) for s, n in visible}
    if not keep or "." not in query:
        return query
    try:
        tree = sqlglot.parse_one(query, read="postgres")
        tokens = Postgres().tokenize(query)
    except sqlglot.errors.SqlglotError:
        return query
    cuts = []
    for i in range(len(tokens) - 2):
        a, dot, b = tokens[i], tokens[i + 1], tokens[i + 2]
        if dot.token_type != TokenType.DOT or (i and tokens[i - 1].token_type == TokenType.DOT):
            continue
        names = [t.text if t.token_type == TokenType.IDENTIFIER else _server_name(t.text)
                 for t in (a, b)]
        if tuple(names) in keep:
            cuts.append((a.start, dot.end + 1))
    if not cuts:
        return query
    text, last = [], 0
    for start, end in cuts:
        text.append(query[last:start])
        last = end
    rewritten = "".join(text) + query[last:]

    def strip(node: Any) -> Any:
        if isinstance(node, (exp.Table, exp.Column)) and node.args.get("db") is not None:
            table = node.this if isinstance(node, exp.Table) else node.args.get("table")
            if table is not None and (_server_name(node.args["db"]),
                                      _server_name(table)) in keep:
                node = node.copy()
                node.set("db", None)
        return node

    try:
        same = sqlglot.parse_one(rewritten, read="postgres") == tree.transform(strip)
    except sqlglot.errors.SqlglotError:
        same = False
    return rewritten if same else query


_remembered_unqualify = remembered(_unqualify)
