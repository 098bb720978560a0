"""Why a predicted result table differs from the gold one, in words.

:func:`explain_tables` compares the two tables under exactly the rules, comparison modes
and column mapping the scores use (:func:`~queryeval.metrics.tables.scores.table_scores`),
and returns a list of ``{"kind", "message", "detail"}`` items, one per reason. The list is
empty exactly when exact-match F1 is 1 (tables equal under the case's rules), so every
case that fails exact match says why. Kinds, in the order they are reported:

* ``empty`` — one side has no rows (or the gold has no columns);
* ``missing_columns`` — the prediction has fewer columns than the gold needs;
* ``extra_columns`` — more columns than the gold (exact match needs the same columns);
* ``column_order`` — the same columns in another order: the mapping the search found
  pairs them (gold ← predicted), exact match pairs them by position;
* ``row_order`` — row order counts (the gold's ORDER BY, or the case's ``ordered``) and
  the rows the two tables share come in another order (first position shown);
* ``duplicates`` — the same distinct rows, different multiplicities (rows are a bag);
* ``values`` — rows of one table missing from the other, with the first differing cells
  (each missing gold row paired with the unmatched predicted row that agrees on most cells);
* ``type_format`` — differing cells equal but for type or format (``1`` vs ``1.0`` under
  rules that compare text, ``"1"`` vs ``1``, ``true`` vs ``1``, a date with a zero time,
  NULL vs empty text).

A pure function: no I/O, the tables in any shape :func:`~.model.as_table` reads. The query
task calls it once when scoring and stores the list on the record (``explanation``); every
report reads that list.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from queryeval.errors import NAME_CHARS, one_line
from queryeval.metrics.deadline import check
from queryeval.metrics.tables.encode import encode
from queryeval.metrics.tables.model import Cell, Table, as_table, canonical_number, check_rules
from queryeval.metrics.tables.modes import check_tolerance, lcs_length
from queryeval.metrics.tables.scores import _project, _required_indices, _row_sequences
from queryeval.metrics.tables.search import Budget, best_mapping

KINDS = ("empty", "missing_columns", "extra_columns", "column_order", "row_order",
         "duplicates", "values", "type_format")
SHOWN_ROWS = 3
"""Differing rows (and their cells) named in a message and kept in ``detail``."""
PAIR_SCAN = 1000
"""Unmatched predicted rows scanned for the best partner of a missing gold row."""
CELL_CHARS = NAME_CHARS


def _item(kind: str, message: str, **detail: Any) -> dict:
    return {"kind": kind, "message": message, "detail": detail}


def _show(value: Cell) -> str:
    if value is None:
        return "NULL"
    text = value if len(value) <= CELL_CHARS else value[:CELL_CHARS - 1] + "…"
    return repr(text)


def _names(names: Any) -> str:
    return ", ".join(one_line(n) for n in names)


def _row_text(row: Sequence[Cell]) -> str:
    return "(" + ", ".join(_show(v) for v in row) + ")"


def _cut(row: Sequence[Cell]) -> list[Cell]:
    return [v if v is None or len(v) <= CELL_CHARS else v[:CELL_CHARS - 1] + "…" for v in row]


_DATATYPE = re.compile(r"\^\^.*$")
_LANG = re.compile(r"@[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$")
_ZERO_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ]00:00(:00(\.0+)?)?(Z|[+-]00:?00)?$")
_BOOLEAN = {"true": "1", "t": "1", "yes": "1", "false": "0", "f": "0", "no": "0"}


def loose_key(value: Cell) -> str:
    """A value with its type and format forgotten: surrounding quotes, a datatype or
    language tag, case, a zero time of day, the spelling of a number (as a binary float)
    and of a boolean; NULL and empty text alike."""
    if value is None:
        return ""
    text = value.strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    text = _LANG.sub("", _DATATYPE.sub("", text)).strip().lower()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    zero = _ZERO_TIME.match(text)
    if zero:
        text = zero.group(1)
    text = _BOOLEAN.get(text, text)
    if text.lower() in ("null", "none", "nan"):
        return ""
    number = canonical_number(text)
    if number is not None:
        try:
            as_float = float(number)
        except (OverflowError, ValueError):  # pragma: no cover - canonical numbers parse
            return number
        if as_float == as_float and abs(as_float) != float("inf"):
            return canonical_number(repr(as_float)) or number
    return text


def _mapping_indices(pred: Table, names: Sequence[str] | None, enc: Any,
                     budget: Budget | None) -> tuple[int, ...]:
    if names is not None:
        used: set[int] = set()
        out = []
        for name in names:
            idx = next((i for i, c in enumerate(pred.columns) if c == name and i not in used),
                       None)
            if idx is None:
                break
            used.add(idx)
            out.append(idx)
        else:
            if len(out) == len(enc.gold_cols):
                return tuple(out)
    return best_mapping(enc, budget).mapping


def explain_tables(gold: Any, pred: Any, *, rules: str = "clean", ordered: bool = False,
                   abs_tol: float = 0.0, rel_tol: float = 0.0,
                   columns: Sequence[str] | None = None,
                   mapping: Sequence[str] | None = None,
                   budget: Budget | None = None) -> list[dict]:
    """Why ``pred`` does not match ``gold`` exactly (module docstring); ``[]`` when it does.

    Options as :func:`~queryeval.metrics.tables.scores.table_scores`; ``mapping``: the
    predicted column names chosen for the gold's columns (``TableScores.mapping``), searched
    again when not given (or not found in ``pred``)."""
    check_rules(rules)
    check_tolerance(abs_tol, rel_tol)
    tol = (float(abs_tol), float(rel_tol))
    p_table, g_table = as_table(pred, rules=rules), as_table(gold, rules=rules)
    g_scored, p_exact = g_table, p_table
    required = list(range(g_table.n_columns))
    if columns is not None:
        required = _required_indices(g_table, columns)
        g_scored = _project(g_table, required)
        if p_table.n_columns == g_table.n_columns and len(required) < g_table.n_columns:
            p_exact = _project(p_table, required)
    else:
        required = list(range(g_table.n_columns))
    n_g, n_p = g_scored.n_rows, p_table.n_rows
    if n_g == 0 and n_p == 0:
        return []
    if g_scored.n_columns == 0:
        return [_item("empty", "the gold result has no columns: nothing can match it",
                      side="gold_columns")]
    if n_p == 0:
        return [_item("empty", f"the prediction returned no rows; the gold has {n_g}",
                      side="predicted", gold_rows=n_g, predicted_rows=0)]
    if n_g == 0:
        return [_item("empty", f"the gold has no rows; the prediction returned {n_p}",
                      side="gold", gold_rows=0, predicted_rows=n_p)]
    positional_tp = None
    if p_exact.n_columns == g_scored.n_columns:
        enc_pos = encode(g_scored, p_exact, rules, *tol)
        g_pos, p_pos = _row_sequences(enc_pos, tuple(range(g_scored.n_columns)))
        if Counter(g_pos) == Counter(p_pos) and (not ordered or g_pos == p_pos):
            return []
        positional_tp = sum((Counter(g_pos) & Counter(p_pos)).values())
    if p_table.n_columns < g_scored.n_columns:
        names = list(g_scored.columns)
        return [_item("missing_columns",
                      f"missing columns: the prediction has {p_table.n_columns} column(s) "
                      f"({_names(p_table.columns)}), the gold needs {len(names)} "
                      f"({_names(names)})", gold_columns=names,
                      predicted_columns=list(p_table.columns))]
    enc = encode(g_scored, p_table, rules, *tol)
    idx = _mapping_indices(p_table, mapping, enc, budget)
    pairs = [[g_scored.columns[j], p_table.columns[c]] for j, c in enumerate(idx)]
    items: list[dict] = []
    if p_exact.n_columns > g_scored.n_columns:
        extra = [p_table.columns[c] for c in range(p_table.n_columns) if c not in set(idx)]
        items.append(_item(
            "extra_columns",
            f"extra columns: the prediction has {p_exact.n_columns} columns, the gold "
            f"{g_scored.n_columns}; exact match needs the same columns (best mapping uses "
            f"{_names(p_table.columns[c] for c in idx)}; extra: {_names(extra)})",
            extra=extra, mapping=pairs))
    g_seq, p_seq = _row_sequences(enc, idx)
    g_count, p_count = Counter(g_seq), Counter(p_seq)
    tp = sum((g_count & p_count).values())
    if positional_tp is not None:
        offset = [required[j] if p_exact is not p_table else j for j in range(len(idx))]
        if list(idx) != offset and tp > positional_tp:
            moved = ", ".join(f"gold {one_line(g)} (column {j + 1}) ← predicted {one_line(p)} "
                              f"(column {c + 1})"
                              for j, ((g, p), c, o) in enumerate(zip(pairs, idx, offset,
                                                                     strict=True)) if c != o)
            items.append(_item(
                "column_order",
                f"columns in another order: the rows match when paired gold ← predicted as "
                f"{moved}; exact match pairs columns by position, so it sees different rows",
                mapping=pairs))
    check()  # the case's scoring deadline (metrics/deadline.py)
    g_rows, p_rows = _Rows(g_scored.rows, None), _Rows(p_table.rows, idx)
    if ordered and lcs_length(g_seq, p_seq) < tp:
        first = next(i for i in range(min(n_g, n_p) + 1)
                     if i >= min(n_g, n_p) or g_seq[i] != p_seq[i])
        where = (f"; first at row {first + 1}: gold {_row_text(g_rows[first])}, predicted "
                 f"{_row_text(p_rows[first])}" if first < min(n_g, n_p) else "")
        items.append(_item(
            "row_order",
            "row order: row order counts here (the gold's ORDER BY) and the rows both tables "
            f"hold come in another order{where}", first_row=first + 1))
    if g_count != p_count:
        if set(g_count) == set(p_count):
            items.append(_duplicates(g_seq, p_seq, g_rows, p_rows, g_count, p_count))
        else:
            import numpy as np

            g_ids = np.stack([enc.gold_cols[j] for j in range(len(idx))], axis=1)
            p_ids = np.stack([enc.pred_cols[c] for c in idx], axis=1)
            items.extend(_values(g_seq, p_seq, g_rows, p_rows, g_count, p_count,
                                 [g for g, _ in pairs], g_ids, p_ids))
    if not items:  # pragma: no cover - every way exact match can fall short is named above
        items.append(_item("values", "the tables differ under this case's rules"))
    return items


class _Rows:
    """A table's row ``i`` as a tuple of its cells (in ``idx``'s column order when given),
    made when read: the explanation shows a handful of rows, never all of them."""

    __slots__ = ("rows", "idx")

    def __init__(self, rows: Sequence[Sequence[Any]], idx: Sequence[int] | None) -> None:
        self.rows, self.idx = rows, idx

    def __getitem__(self, i: int) -> tuple:
        row = self.rows[i]
        return tuple(row) if self.idx is None else tuple(row[c] for c in self.idx)


def _duplicates(g_seq: list[int], p_seq: list[int], g_rows: _Rows, p_rows: _Rows,
                g_count: Counter, p_count: Counter) -> dict:
    shown = []
    where_g = {v: i for i, v in reversed(list(enumerate(g_seq)))}
    for v in dict.fromkeys(g_seq):
        if g_count[v] != p_count[v]:
            shown.append({"row": _cut(g_rows[where_g[v]]), "gold": g_count[v],
                          "predicted": p_count[v]})
            if len(shown) == SHOWN_ROWS:
                break
    text = "; ".join(f"{_row_text(s['row'])} ×{s['gold']} in the gold, ×{s['predicted']} "
                     "predicted" for s in shown)
    n_diff = sum(1 for v in g_count if g_count[v] != p_count[v])
    return _item("duplicates",
                 "duplicates: the same distinct rows with different counts (rows compare as "
                 f"a bag, so a repeated row counts each time; DISTINCT?): {n_diff} row(s) "
                 f"differ, e.g. {text}", rows=shown, differing=n_diff,
                 gold_rows=len(g_seq), predicted_rows=len(p_seq))


def _unmatched(seq: list[int], surplus: Counter) -> list[int]:
    left = Counter(surplus)
    out = []
    for i, v in enumerate(seq):
        if left[v] > 0:
            left[v] -= 1
            out.append(i)
    return out


def _values(g_seq: list[int], p_seq: list[int], g_rows: _Rows, p_rows: _Rows,
            g_count: Counter, p_count: Counter, names: list[str], g_ids: Any,
            p_ids: Any) -> list[dict]:
    missing = _unmatched(g_seq, g_count - p_count)
    extra = _unmatched(p_seq, p_count - g_count)
    check()
    loose_equal = (Counter(tuple(loose_key(v) for v in g_rows[i]) for i in missing)
                   == Counter(tuple(loose_key(v) for v in p_rows[i]) for i in extra))
    cells: list[dict] = []
    free = extra[:PAIR_SCAN]
    for gi in missing[:SHOWN_ROWS]:
        if not free:
            break
        g = g_ids[gi]
        best = max(free, key=lambda pi: int((g == p_ids[pi]).sum()))
        free = [pi for pi in free if pi != best]
        for k, (a, b) in enumerate(zip(g_rows[gi], p_rows[best], strict=True)):
            if g[k] != p_ids[best][k]:  # unequal under the case's rules
                cells.append({"gold_row": gi + 1, "predicted_row": best + 1, "column": names[k],
                              "gold": _cut([a])[0], "predicted": _cut([b])[0],
                              "format_only": loose_key(a) == loose_key(b)})
    first = [c for c in cells if not c["format_only"]] or cells
    shown = "; ".join(f"gold row {c['gold_row']} {one_line(c['column'])} = {_show(c['gold'])}, predicted "
                      f"row {c['predicted_row']} {_show(c['predicted'])}" for c in first[:SHOWN_ROWS])
    out = []
    formats = [c for c in cells if c["format_only"]]
    if formats:
        eg = "; ".join(f"{one_line(c['column'])}: gold {_show(c['gold'])}, predicted "
                       f"{_show(c['predicted'])}" for c in formats[:SHOWN_ROWS])
        scope = ("the rows differ only in the type or format of values" if loose_equal else
                 "some differing cells are equal but for type or format")
        out.append(_item("type_format", f"type or format: {scope} (e.g. {eg})",
                         cells=formats[:SHOWN_ROWS], all_rows=loose_equal))
    if not loose_equal:
        text = (f"values: {len(missing)} gold row(s) missing from the prediction, "
                f"{len(extra)} predicted row(s) not in the gold")
        if shown:
            text += f"; first differing cells: {shown}"
        elif missing:
            text += f"; first missing row: {_row_text(g_rows[missing[0]])}"
        elif extra:
            text += f"; first extra row: {_row_text(p_rows[extra[0]])}"
        out.insert(0, _item("values", text, missing=len(missing), extra=len(extra),
                            cells=[c for c in cells if not c["format_only"]][:SHOWN_ROWS],
                            first_missing=[_cut(g_rows[i]) for i in missing[:SHOWN_ROWS]],
                            first_extra=[_cut(p_rows[i]) for i in extra[:SHOWN_ROWS]]))
    return out
