"""What the tests of tables property share with other test files: ``oracle``, ``table_pairs`` (moved here from test_tables_property.py)."""

from __future__ import annotations

import re
from collections import Counter
from itertools import permutations

from hypothesis import strategies as st

from queryeval.metrics.tables import Table, clean_normalize


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def bqa_norm(v):
    """BuildingQA's normalisation, written out from its description."""
    v = v.strip().lower()
    if len(v) > 1 and v[0] == '"' and v[-1] == '"':
        v = v[1:-1]
    v = re.sub(r"\^\^.*$", "", v)
    return re.sub(r"@[a-z]{2}(-[a-z]{2})?$", "", v)


MISSING = object()


def _value_functions(rules: str):
    if rules == "clean":
        return clean_normalize, (lambda v: MISSING if v is None else clean_normalize(v))
    return (lambda v: None if v is None else bqa_norm(v)), (lambda v: "" if v is None else v)


def oracle(gold: Table, pred: Table, rules: str):
    """(entity F1, row F1) maximised lexicographically by (row, entity) over every
    ordered choice of predicted columns (the same arithmetic as perm_figures, with the
    per-row and per-column work hoisted out of the loop)."""
    if rules == "buildingqa":  # the reference's columns: those bound in the first row
        gold, pred = first_row_columns(gold), first_row_columns(pred)
    if not gold.rows and not pred.rows:
        return 1.0, 1.0
    if not gold.rows or not pred.rows or not gold.columns or len(pred.columns) < len(gold.columns):
        return 0.0, 0.0
    row_value, ent_value = _value_functions(rules)
    g, p = len(gold.columns), len(pred.columns)
    gold_counter = Counter(tuple(row_value(x) for x in r) for r in gold.rows)
    pred_norm = [tuple(row_value(x) for x in r) for r in pred.rows]
    gsets = [{ent_value(r[j]) for r in gold.rows} - {MISSING} for j in range(g)]
    psets = [{ent_value(r[c]) for r in pred.rows} - {MISSING} for c in range(p)]
    best = None
    for perm in permutations(range(p), g):
        pred_counter = Counter(tuple(r[c] for c in perm) for r in pred_norm)
        tp = sum((gold_counter & pred_counter).values())
        row = f1(tp / len(pred.rows), tp / len(gold.rows))
        precs = [len(gsets[j] & psets[c]) / len(psets[c]) if psets[c] else 1.0
                 for j, c in enumerate(perm)]
        recs = [len(gsets[j] & psets[c]) / len(gsets[j]) if gsets[j] else 1.0
                for j, c in enumerate(perm)]
        ent = f1(sum(precs) / g, sum(recs) / g)
        if best is None or (row, ent) > (best[1], best[0]):
            best = (ent, row)
    return best


def first_row_columns(table: Table) -> Table:
    if not table.rows:
        return Table([], [])
    keep = [i for i, v in enumerate(table.rows[0]) if v is not None]
    return Table([table.columns[i] for i in keep], [tuple(r[i] for i in keep) for r in table.rows])


ALPHABET = {
    "clean": ["a", "b", "1", "1.0", " a", None],
    "buildingqa": ["a", "A", '"a"', "b", "", None],
}


@st.composite
def table_pairs(draw, rules: str, max_cols: int = 7):
    values = st.sampled_from(ALPHABET[rules])
    g = draw(st.integers(1, max_cols))
    p = draw(st.integers(g, min(max_cols, g + 2)))
    n_gold = draw(st.integers(0, 7))
    gold_rows = [tuple(draw(values) for _ in range(g)) for _ in range(n_gold)]
    if draw(st.booleans()) and gold_rows:
        # derived prediction: columns shuffled, extra columns, rows dropped/duplicated/edited
        order = draw(st.permutations(list(range(p))))
        rows = []
        for r in gold_rows:
            for _ in range(draw(st.integers(0, 2))):
                full = list(r) + [draw(values) for _ in range(p - g)]
                if draw(st.integers(0, 4)) == 0:
                    full[draw(st.integers(0, p - 1))] = draw(values)
                rows.append(tuple(full[order.index(i)] for i in range(p)))
        pred_rows = rows
    else:
        pred_rows = [tuple(draw(values) for _ in range(p)) for _ in range(draw(st.integers(0, 7)))]
    gold = Table([f"g{i}" for i in range(g)], gold_rows)
    pred = Table([f"p{i}" for i in range(p)], pred_rows)
    return gold, pred
