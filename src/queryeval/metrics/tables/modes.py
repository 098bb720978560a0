"""Comparison modes of the table metrics: row order, numeric tolerance.

* :func:`query_is_ordered` — whether a gold query has a top-level ``ORDER BY``, read off one
  parse tree: sqlglot's for SQL, rdflib's SPARQL 1.1 grammar for SPARQL
  (:func:`.arity.sparql_shape`: a sub-select's ORDER BY is not the query's).
* :func:`lcs_length` — longest common subsequence of two integer sequences, bit-parallel
  (Allison–Dix / Hyyrö: one big-integer add, and, or, sub per element of the second
  sequence), so 10k × 10k rows cost ~10k big-integer operations, not 10⁸ cell updates.
* :func:`tolerance_classes` — numeric values that are close (``|a-b| <= max(abs_tol,
  rel_tol·max(|a|,|b|))``, :func:`math.isclose`'s rule) are put in one class: the connected
  components of the closeness graph, found by joining neighbours in sorted order. Each
  class is then one value for hashing, so row matching stays a hash join. The price: close
  is not transitive, so a chain ``1.00, 1.01, 1.02`` with ``abs_tol=0.01`` is one class and
  ``1.00`` equals ``1.02``. Why neighbours suffice: for ``a < b < c`` close ``a, c`` imply
  close ``a, b`` and ``b, c`` (absolute: ``|b-a| <= |c-a|``; relative with ``rel_tol < 1``:
  ``a`` and ``c`` have the same sign and ``b`` lies between), so every edge of the graph is
  implied by a path of neighbour edges. Hence ``rel_tol`` must be below 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from queryeval.metrics.tables.model import canonical_number


def query_is_ordered(query: str, language: str) -> bool | None:
    """Whether ``query`` sorts its result at the top level; ``None`` when it does not parse
    (or holds several statements)."""
    return _top_level_clause(query, language, "order")


def query_has_limit(query: str, language: str) -> bool | None:
    """Whether ``query`` has a top-level ``LIMIT`` or ``OFFSET`` (with no top-level ORDER BY
    its rows are then whichever the engine yields first); ``None`` when it does not parse."""
    return _top_level_clause(query, language, "limit")


def _top_level_clause(query: str, language: str, clause: str) -> bool | None:
    if language == "sql":
        import sqlglot
        from sqlglot.errors import SqlglotError

        try:
            trees = [t for t in sqlglot.parse(query) if t is not None]
        except (SqlglotError, ValueError, RecursionError):
            return None
        if len(trees) != 1:
            return None
        if clause == "limit":
            return any(trees[0].args.get(k) is not None for k in ("limit", "offset"))
        return trees[0].args.get("order") is not None
    if language != "sparql":
        raise ValueError(f"language must be 'sparql' or 'sql', not {language!r}")
    from queryeval.metrics.tables.arity import sparql_shape

    shape = sparql_shape(query)
    if shape is None:
        return None
    return shape.limited if clause == "limit" else shape.ordered


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (bit-parallel)."""
    if not a or not b:
        return 0
    masks: dict[int, int] = {}
    for i, x in enumerate(a):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for y in b:
        u = v & masks.get(y, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def _close(a: float, b: float, abs_tol: float, rel_tol: float) -> bool:
    return abs(a - b) <= max(abs_tol, rel_tol * max(abs(a), abs(b)))


def check_tolerance(abs_tol: float, rel_tol: float) -> None:
    if not (math.isfinite(abs_tol) and abs_tol >= 0):
        raise ValueError(f"abs_tol must be a finite number >= 0, not {abs_tol!r}")
    if not (math.isfinite(rel_tol) and 0 <= rel_tol < 1):
        raise ValueError(f"rel_tol must be in [0, 1), not {rel_tol!r}")


def tolerance_classes(values: Sequence[str | None], abs_tol: float, rel_tol: float
                      ) -> list[str | None]:
    """``values`` with every numeric one (canonical form, see
    :func:`~queryeval.metrics.tables.model.canonical_number`) replaced by the name of its
    class of close numbers (``≈`` and the smallest member); other values unchanged."""
    check_tolerance(abs_tol, rel_tol)
    numeric: dict[str, float] = {}
    for v in values:
        if v is not None and v not in numeric and canonical_number(v) is not None:
            x = float(v)
            if math.isfinite(x):
                numeric[v] = x
    if not numeric or (abs_tol == 0 and rel_tol == 0):
        return list(values)
    ordered = sorted(numeric.items(), key=lambda kv: (kv[1], kv[0]))
    name: dict[str, str] = {}
    head, prev = ordered[0][0], ordered[0][1]
    for text, x in ordered:
        if not _close(prev, x, abs_tol, rel_tol):
            head = text
        name[text] = "\u2248" + head
        prev = x
    return [name.get(v, v) if v is not None else None for v in values]
