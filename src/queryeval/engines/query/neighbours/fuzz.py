"""Rows for a neighbour database: fuzzed per column type, seeded with the gold query's
constants and the original data, respecting NOT NULL, primary and unique keys and foreign
keys (nullable ones may be NULL).

Each column draws from three pools: the constants the gold compares that column with and
their neighbours (``c - 1``, ``c``, ``c + 1`` for a number; the text, a variant and a LIKE
pattern's fill for text), so every filter has rows on both sides of its boundary; the
column's own values in the original database; and fresh values of its type. The draw is
from a :class:`random.Random` the caller seeds, so the same seed gives the same rows.

Each candidate also draws a *profile* that makes the rows near-miss mutants need:

* **twins** -- a row copied from an earlier row of its table with one column of each key
  (primary key, UNIQUE set) drawn again, its foreign keys kept: the two agree on every
  filter and join, so ``DISTINCT`` on any non-key projection (a title, a city) changes the
  result and the DISTINCT mutant of a gold is told apart (half the time one more column
  is drawn again: a near twin, which tells ``MIN`` from ``MAX`` within a group);
* **repeats** -- a non-key column's value taken from an earlier row of the table (the
  same value with other neighbours: ``DISTINCT genre``, ``COUNT(DISTINCT x)``);
* **NULLs** -- in half the candidates nullable columns are NULL far more often
  (:data:`NULL_RICH_RATE`), for the mutants NULL changes (``NOT IN`` over a nullable column,
  ``COUNT(x)`` against ``COUNT(*)``, ``<>`` against ``NOT =``);
* **a parent without children** -- in half the candidates one row of each referenced
  table (it has others) is referenced by no row, so an inner join and a LEFT JOIN differ.

Every row still respects NOT NULL, the keys and foreign keys (a key column is never
copied, a NOT NULL column never NULL, a foreign key points at a parent row that exists);
what this module does not read (a CHECK) is enforced by the engine on insert, which leaves
the row out.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from queryeval.engines.query.neighbours.schema import Column, Schema, Table

NULL_RATE = 0.15
NULL_RICH_RATE = 0.4
"""A nullable column's NULL rate in the NULL-rich half of the candidates."""
TWIN_RATE = 0.3
"""Share of a twin profile's rows copied from an earlier row, keys drawn again."""
TWIN_CHANGE_RATE = 0.5
"""Chance that one of a twin's non-key, non-reference columns is drawn again (a near twin:
the same genre with another year tells MIN from MAX)."""
EXPAND_RATE = 0.7
"""Share of a base candidate's rows :func:`expand` gives a twin."""
REPEAT_RATE = 0.25
"""Chance that a non-key column repeats an earlier row's value."""
MAX_ROWS = 8
"""Most rows of a table in a neighbour (small databases make readable counter-examples)."""
_WORDS = ("alpha", "bob", "carol", "delta", "echo", "zeta", "kilo", "lima", "", "Z")


def gold_constants(gold: str, dialect: str) -> dict[str, list[Any]]:
    """The literals of ``gold`` by the column they are compared with (lower-case name; the
    key ``""`` holds every literal of the query)."""
    import sqlglot
    from sqlglot import exp

    out: dict[str, list[Any]] = {"": []}
    try:
        tree = sqlglot.parse_one(gold, read=dialect)
    except sqlglot.errors.ParseError:
        return out
    for lit in tree.find_all(exp.Literal):
        value: Any = lit.this
        if not lit.is_string:
            try:
                value = int(value)
            except ValueError:
                try:
                    value = float(value)
                except ValueError:
                    continue
        out[""].append(value)
        node = lit.parent
        while isinstance(node, (exp.Tuple, exp.Paren, exp.Neg, exp.Cast)):
            node = node.parent
        column = None
        if isinstance(node, (exp.In, exp.Between, exp.Like, exp.ILike)) \
                and isinstance(node.this, exp.Column):
            column = node.this
        elif isinstance(node, exp.Binary):
            for side in (node.left, node.right):
                if isinstance(side, exp.Column):
                    column = side
        if column is not None:
            out.setdefault(column.name.lower(), []).append(value)
            if isinstance(node, (exp.Like, exp.ILike)) and isinstance(value, str):
                fill = value.replace("%", "").replace("_", "a")
                out[column.name.lower()] += [fill, "x" + fill + "x"]
    return out


def _kind(col: Column, sample: list[Any]) -> str:  # noqa: C901 - one branch per kind
    t = col.type
    probe = next((v for v in sample if v is not None), None)
    if t.startswith(("STRUCT", "MAP(", "UNION")) or t.endswith("]") \
            or isinstance(probe, (dict, list)):
        return "nested"
    if t.startswith("ENUM"):
        return "enum"
    if t == "UUID" or isinstance(probe, uuid.UUID):
        return "uuid"
    if t.startswith("INTERVAL") or isinstance(probe, dt.timedelta):
        return "interval"
    if isinstance(probe, (bytes, bytearray)) or (probe is None and t in ("BLOB", "BYTEA")):
        return "blob"
    if "BOOL" in t or isinstance(probe, bool):
        return "bool"
    if isinstance(probe, dt.datetime) or "TIMESTAMP" in t or "DATETIME" in t:
        return "datetime"
    if isinstance(probe, dt.date) or t.startswith("DATE"):
        return "date"
    if isinstance(probe, dt.time) or t == "TIME" or t.startswith("TIME "):
        return "time"
    if "INT" in t:
        return "int"
    if any(k in t for k in ("REAL", "FLOA", "DOUB", "DEC", "NUMERIC")) \
            or isinstance(probe, (float, decimal.Decimal)):
        return "real"
    if isinstance(probe, int):
        return "int"
    return "text"


def _near(value: Any, kind: str) -> list[Any]:
    """A constant and values on either side of it, in the column's kind."""
    try:
        if kind == "int":
            v = int(float(value))
            return [v - 1, v, v + 1]
        if kind == "real":
            v = float(value)
            return [v - 1, v - 0.5, v, v + 0.5, v + 1]
        if kind in ("date", "datetime"):
            d = dt.date.fromisoformat(str(value)[:10])
            days = [d - dt.timedelta(days=1), d, d + dt.timedelta(days=1)]
            if kind == "datetime":
                return [dt.datetime.combine(x, dt.time()) for x in days]
            return days if not isinstance(value, str) else [x.isoformat() for x in days]
        if kind == "bool":
            return [True, False]
        if kind == "enum":
            return [str(value)]  # a label or not: no variants of it
        if kind in ("nested", "uuid", "interval", "blob", "time"):
            return []
    except (ValueError, TypeError, OverflowError):
        return []
    s = str(value)
    # s + "_" is the text mutant's own constant (:mod:`.mutants`): a row holding it sits
    # between the gold's bound and the mutant's
    return [s, s + "x", s + "_", s.upper() if s != s.upper() else s.lower()]


def _fresh(kind: str, rng: random.Random, sample: list[Any]) -> Any:  # noqa: C901
    if kind in ("nested", "enum"):  # the original's values only
        return rng.choice(sample) if sample else None
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if kind == "interval":
        return dt.timedelta(days=rng.randint(0, 30), seconds=rng.randint(0, 86399))
    if kind == "blob":
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 4)))
    if kind == "time":
        return dt.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
    if kind == "int":
        return rng.randint(-3, 200)
    if kind == "real":
        return round(rng.uniform(-5, 200), 2)
    if kind == "bool":
        return rng.random() < 0.5
    if kind in ("date", "datetime"):
        base = next((v for v in sample if isinstance(v, (dt.date, str))), None)
        try:
            d = base if isinstance(base, dt.date) else dt.date.fromisoformat(str(base)[:10])
        except ValueError:
            d = dt.date(2024, 1, 1)
        if isinstance(d, dt.datetime):
            return d + dt.timedelta(hours=rng.randint(-500, 500))
        out = d + dt.timedelta(days=rng.randint(-30, 30))
        return out.isoformat() if isinstance(base, str) or base is None else out
    return rng.choice(_WORDS) + (str(rng.randint(0, 9)) if rng.random() < 0.3 else "")


class ColumnPool:
    """Where one column's values come from."""

    def __init__(self, col: Column, table: Table, consts: dict[str, list[Any]]) -> None:
        self.col = col
        self.original = list(table.values.get(col.name, []))
        self.kind = _kind(col, self.original)
        near = [_near(c, self.kind) for c in consts.get(col.name.lower(), [])]
        self.constants = list(dict.fromkeys(x for n in near for x in n))
        # the constants themselves (the middle of each _near list): a filter's own value
        # holds in more rows, so two of them meet a grouping or an aggregate
        middle = self.kind in ("int", "real", "date", "datetime")
        self.exact = list(dict.fromkeys(n[(len(n) - 1) // 2] if middle else n[0]
                                        for n in near if n))

    def draw(self, rng: random.Random, null_rate: float = NULL_RATE) -> Any:
        if not self.col.not_null and rng.random() < null_rate:
            return None
        r = rng.random()
        if self.constants and r < 0.5:
            return rng.choice(self.exact if self.exact and r < 0.15 else self.constants)
        if self.original and r < 0.8:
            return rng.choice(self.original)
        return _fresh(self.kind, rng, self.original)


@dataclass
class Profile:
    """What one candidate leans to (module docstring), drawn from its seeded generator."""

    null_rate: float = NULL_RATE
    twins: float = 0.0
    orphan: float | None = None
    """Where in each referenced table the row referenced by none sits (a share of its
    rows); None: any row may be referenced."""

    @classmethod
    def draw(cls, rng: random.Random) -> Profile:
        return cls(NULL_RICH_RATE if rng.random() < 0.5 else NULL_RATE,
                   TWIN_RATE if rng.random() < 0.6 else 0.0,
                   rng.random() if rng.random() < 0.5 else None)


def generate(schema: Schema, consts: dict[str, list[Any]], rng: random.Random,
             max_rows: int = MAX_ROWS) -> dict[str, list[tuple]]:
    """Rows per table (values in column order) for one neighbour database."""
    profile = Profile.draw(rng)
    out: dict[str, list[tuple]] = {}
    for t in schema.tables:
        pools = [ColumnPool(c, t, consts) for c in t.columns]
        index = {c.name: i for i, c in enumerate(t.columns)}
        keys = [[index[c] for c in k if c in index] for k in t.keys()]
        in_key = {i for k in keys for i in k}
        linked = {index[c] for fk in t.foreign_keys for c in fk.columns if c in index}
        seen: list[set[tuple]] = [set() for _ in keys]
        rows: list[tuple] = []
        target = rng.randint(1, max_rows)
        for _ in range(target * 4):
            if len(rows) >= target:
                break
            twin = bool(rows) and rng.random() < profile.twins
            redrawn: set[int] | None = None
            if twin:  # an earlier row again, its keys new (and now and then another value)
                row, redrawn = _twin(rng.choice(rows), pools, keys, linked, rng, profile)
            else:
                row = [p.draw(rng, profile.null_rate) for p in pools]
                for i in range(len(pools)):  # the same value as an earlier row
                    if rows and i not in in_key and rng.random() < REPEAT_RATE:
                        row[i] = rng.choice(rows)[i]
            _admit(schema, t, row, redrawn, pools, keys, seen, index, out, rows, rng, profile)
        out[t.name] = rows
    return out


def _admit(schema: Schema, t: Table, row: list[Any], redrawn: set[int] | None,
           pools: list[ColumnPool], keys: list[list[int]], seen: list[set[tuple]],
           index: dict[str, int], out: dict[str, list[tuple]], rows: list[tuple],
           rng: random.Random, profile: Profile) -> str:
    """``row`` made valid and appended to ``rows`` if it can be: a key part or NOT NULL column
    drawn NULL gets a fresh value, its references are linked (:func:`_link`), and a key
    already in ``seen`` turns it away. ``"added"``, ``"unlinked"`` (no parent row to point
    at) or ``"duplicate"`` (a key taken)."""
    for i, p in enumerate(pools):  # a key part drawn NULL: a fresh value instead
        if row[i] is None and (p.col.not_null or any(i in k for k in keys[:1])):
            row[i] = _fresh(p.kind, rng, p.original)
    if not _link(schema, t, row, index, out, rows, rng, profile, keep=redrawn):
        return "unlinked"
    if any(tuple(row[i] for i in k) in s for k, s in zip(keys, seen, strict=True)
           if all(row[i] is not None for i in k)):
        return "duplicate"
    for k, s in zip(keys, seen, strict=True):
        s.add(tuple(row[i] for i in k))
    rows.append(tuple(row))
    return "added"


def _twin(row: tuple, pools: list[ColumnPool], keys: list[list[int]], linked: set[int],
          rng: random.Random, profile: Profile) -> tuple[list[Any], set[int]]:
    """A copy of ``row`` with one column of each key drawn again (a composite key keeps its
    other parts: a twin of ``UNIQUE (title, year)`` may keep its title) and, half the time,
    one column in no key and no reference (a near twin); the copy and the columns drawn."""
    out = list(row)
    redrawn: set[int] = set()
    for k in keys:
        if k and not redrawn & set(k):
            redrawn.add(rng.choice(k))
    in_key = {i for k in keys for i in k}
    free = [i for i in range(len(pools)) if i not in in_key and i not in linked]
    if free and rng.random() < TWIN_CHANGE_RATE:
        redrawn.add(rng.choice(free))
    for i in redrawn:
        out[i] = pools[i].draw(rng, profile.null_rate)
    return out, redrawn


def expand(schema: Schema, base: dict[str, list[tuple]], consts: dict[str, list[Any]],
           rng: random.Random) -> dict[str, list[tuple]]:
    """``base`` (a candidate's rows on which the gold returned rows) with a twin of most of
    its rows (:func:`_twin`; keys drawn again until unique, references kept or pointed at a
    parent row again): the rows that answer the gold, repeated or nearly, so ``DISTINCT``,
    ``MIN``/``MAX`` and ``COUNT(DISTINCT)`` mutants of it change their result. For the
    distillation's second pass (:mod:`.distill`), on mutants the first left alive."""
    profile = Profile()
    out: dict[str, list[tuple]] = {}
    for t in schema.tables:
        pools = [ColumnPool(c, t, consts) for c in t.columns]
        index = {c.name: i for i, c in enumerate(t.columns)}
        keys = [[index[c] for c in k if c in index] for k in t.keys()]
        linked = {index[c] for fk in t.foreign_keys for c in fk.columns if c in index}
        rows = [tuple(r) for r in base.get(t.name, ())]
        seen = [{tuple(r[i] for i in k) for r in rows} for k in keys]
        for original in list(rows):
            if rng.random() >= EXPAND_RATE:
                continue
            for _ in range(4):  # a key drawn again may meet an existing one: draw once more
                row, redrawn = _twin(original, pools, keys, linked, rng, profile)
                if _admit(schema, t, row, redrawn, pools, keys, seen, index, out, rows, rng,
                          profile) != "duplicate":
                    break
        out[t.name] = rows
    return out


def _link(schema: Schema, t: Table, row: list[Any], index: dict[str, int],  # noqa: C901
          done: dict[str, list[tuple]], own: list[tuple], rng: random.Random,
          profile: Profile | None = None, keep: set[int] | None = None) -> bool:
    """Point ``row``'s foreign keys at existing parent rows (NULL for a nullable key, now
    and then); False when a NOT NULL key has no parent row to point at. ``keep`` (the columns
    of a twin row drawn again): a foreign key with none of its columns among them is left as the
    copied row had it (it points at a parent already). Under an ``orphan`` profile one row
    of another table is never pointed at (while it has others)."""
    profile = profile or Profile()
    for fk in t.foreign_keys:
        cols = [index[c] for c in fk.columns if c in index]
        if keep is not None and not any(i in keep for i in cols):
            continue
        nullable = all(not t.columns[i].not_null for i in cols)
        if fk.table.lower() == t.name.lower():
            parents, parent_cols = own, [index[c] for c in fk.refs if c in index]
        else:
            parent = next((p for p in done if p.lower() == fk.table.lower()), None)
            if parent is None:
                continue  # a cycle: the reference is left as drawn (the database decides)
            parents = done[parent]
            if profile.orphan is not None and len(parents) > 1:
                gone = int(profile.orphan * len(parents))  # a parent with no child here
                parents = parents[:gone] + parents[gone + 1:]
            parent_cols = _positions(schema.table(parent), fk.refs)
        if nullable and (not parents or rng.random() < profile.null_rate):
            for i in cols:
                row[i] = None
            continue
        if not parents or len(parent_cols) != len(cols):
            if fk.table.lower() == t.name.lower() and len(parent_cols) == len(cols):
                for i, j in zip(cols, parent_cols, strict=True):
                    row[i] = row[j]  # the first row of a NOT NULL self reference: itself
                continue
            return False
        pick = rng.choice(parents)
        for i, j in zip(cols, parent_cols, strict=True):
            row[i] = pick[j]
    return True


def _positions(table: Table, names: Iterable[str]) -> list[int]:
    index = {c.name.lower(): i for i, c in enumerate(table.columns)}
    return [index[n.lower()] for n in names if n.lower() in index]
