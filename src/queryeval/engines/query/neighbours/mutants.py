"""Near-miss mutants of a gold SQL query (sqlglot AST mutations), the queries a neighbour
database must tell apart from the gold.

One mutation per mutant: a comparison operator swapped (``>`` ↔ ``>=``, ``<`` ↔ ``<=``,
``=`` ↔ ``<>``, ``>`` ↔ ``<``), a numeric constant moved by one, a text constant changed,
``DISTINCT`` added or removed, an inner join made a left join and back, one conjunct of a
WHERE / HAVING / ON dropped (or the whole WHERE), an aggregate swapped (``MIN`` ↔ ``MAX``,
``SUM`` ↔ ``AVG``, ``COUNT(x)`` ↔ ``COUNT(DISTINCT x)``), a sort direction flipped, a LIMIT
moved by one. Some mutants are equivalent to the gold on every database (``DISTINCT`` over
a key); distillation simply never finds a database that tells them apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

MAX_MUTANTS = 80

_SWAPS = {"GT": ("GTE", "LT"), "GTE": ("GT", "LTE"), "LT": ("LTE", "GT"), "LTE": ("LT", "GTE"),
          "EQ": ("NEQ",), "NEQ": ("EQ",)}
_AGG_SWAPS = {"Min": "Max", "Max": "Min", "Sum": "Avg", "Avg": "Sum"}


def mutants(gold: str, dialect: str, limit: int = MAX_MUTANTS) -> list[tuple[str, str]]:
    """(what was changed, mutant SQL) for up to ``limit`` distinct mutants of ``gold``, in a
    fixed order (no randomness); none when the gold does not parse."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(gold, read=dialect)
        base = tree.sql(dialect=dialect)
    except sqlglot.errors.SqlglotError:
        return []
    out: dict[str, str] = {}
    nodes = list(tree.walk())
    for i, node in enumerate(nodes):
        for label, change in _changes(node):
            copy = tree.copy()
            target = list(copy.walk())[i]
            try:
                change(target)
                sql = copy.sql(dialect=dialect)
            except Exception:  # noqa: BLE001 - a mutation sqlglot cannot render is skipped
                continue
            if sql != base and sql not in out:
                out[sql] = label
            if len(out) >= limit:
                return [(v, k) for k, v in out.items()]
    return [(v, k) for k, v in out.items()]


Change = Callable[[object], None]


def _changes(node) -> Iterator[tuple[str, Change]]:  # noqa: C901 - one branch per kind
    from sqlglot import exp

    name = type(node).__name__
    if name.upper() in _SWAPS and isinstance(node, exp.Binary):
        for other in _SWAPS[name.upper()]:
            cls = {"GT": exp.GT, "GTE": exp.GTE, "LT": exp.LT, "LTE": exp.LTE,
                   "EQ": exp.EQ, "NEQ": exp.NEQ}[other]
            yield (f"operator {name} -> {other}",
                   lambda n, cls=cls: n.replace(cls(this=n.left.copy(), expression=n.right.copy())))
    if isinstance(node, exp.Literal) and not isinstance(node.parent, (exp.Limit, exp.Offset)):
        if node.is_string:
            yield (f"constant '{node.this}' changed",
                   lambda n: n.replace(exp.Literal.string(n.this + "_")))
        else:
            for d in (1, -1):
                yield (f"constant {node.this} {'+' if d > 0 else '-'}1",
                       lambda n, d=d: n.replace(_num(n.this, d)))
    if isinstance(node, exp.Select):
        if node.args.get("distinct"):
            yield "DISTINCT removed", lambda n: n.set("distinct", None)
        else:
            yield "DISTINCT added", lambda n: n.set("distinct", exp.Distinct())
        where = node.args.get("where")
        if where is not None:
            yield "WHERE dropped", lambda n: n.set("where", None)
        having = node.args.get("having")
        if having is not None:
            yield "HAVING dropped", lambda n: n.set("having", None)
        limit = node.args.get("limit")
        if limit is not None and isinstance(limit.expression, exp.Literal):
            yield "LIMIT +1", lambda n: n.args["limit"].set(
                "expression", _num(n.args["limit"].expression.this, 1))
    if isinstance(node, exp.And):
        yield "left conjunct dropped", lambda n: n.replace(n.right.copy())
        yield "right conjunct dropped", lambda n: n.replace(n.left.copy())
    if isinstance(node, exp.Or):
        yield "OR made AND", lambda n: n.replace(exp.And(this=n.left.copy(), expression=n.right.copy()))
    if isinstance(node, exp.Join):
        side = (node.args.get("side") or "").upper()
        if side == "LEFT":
            yield "LEFT JOIN made inner", lambda n: n.set("side", None)
        elif not side and not node.args.get("kind"):
            yield "JOIN made LEFT", lambda n: n.set("side", "LEFT")
    if name in _AGG_SWAPS and isinstance(node, exp.AggFunc):
        other = getattr(exp, _AGG_SWAPS[name])
        yield (f"{name.upper()} -> {_AGG_SWAPS[name].upper()}",
               lambda n, other=other: n.replace(other(this=n.this.copy())))
    if isinstance(node, exp.Count) and not isinstance(node.this, exp.Star):
        if isinstance(node.this, exp.Distinct):
            yield "COUNT(DISTINCT x) -> COUNT(x)", lambda n: n.set(
                "this", n.this.expressions[0].copy())
        elif node.this is not None:
            yield "COUNT(x) -> COUNT(DISTINCT x)", lambda n: n.set(
                "this", exp.Distinct(expressions=[n.this.copy()]))
    if isinstance(node, exp.Ordered):
        yield "sort direction flipped", lambda n: n.set("desc", not n.args.get("desc"))


def _num(text: str, delta: int):
    from sqlglot import exp

    try:
        return exp.Literal.number(int(text) + delta)
    except ValueError:
        return exp.Literal.number(float(text) + delta)
