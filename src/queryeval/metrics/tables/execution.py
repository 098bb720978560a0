"""Execution accuracy as the published text-to-SQL benchmarks compute it (``--compat``).

Each mode reproduces one reference's verdict on a gold and a predicted result: the rows as
the database driver returned them (Python values: ``1`` is not ``'1'``, ``inf`` is not
``'inf'``, ``'007'`` is not ``7``), with no canonicalisation of ours. The queries run in the
sandboxed workers (:mod:`queryeval.tasks.query.execution`); this module only compares rows.

* ``spider`` -- test-suite-sql-eval's ``eval_exec_match`` as its ``evaluation.py`` calls it
  by default (``plug_value`` and ``keep_distinct`` off): the prediction's ``value`` becomes
  ``1``, ``> =``/``< =``/``! =`` are closed up, every ``DISTINCT`` token is removed from
  both queries (:func:`spider_queries`), ``YEAR(CURDATE())`` becomes ``2020``; then
  ``result_eq``: row order counts iff ``'order by'`` is a substring of the lower-cased gold
  query (a subquery's ORDER BY too); columns may come in any order (some permutation of the
  predicted columns makes the tables equal); rows compare as multisets (duplicates count);
  two empty results are equal whatever their columns (:func:`spider_equal`).
* ``bird`` -- BIRD's ``evaluation.py``: ``set(predicted) == set(gold)``: columns in order,
  duplicates and row order ignored (:func:`bird_equal`).
* ``bird-soft-f1`` -- BIRD mini_dev's Soft F1 (``evaluation_f1.py``, figure ``soft_f1``):
  duplicate rows dropped (first kept), the i-th gold row paired with the i-th predicted row,
  each pair scored by which values of one occur anywhere in the other, over the gold row's
  width (:func:`bird_soft_f1`).
* ``spider2`` -- Spider 2.0's ``compare_multi_pandas_table`` (spider2-lite
  ``evaluation_suite/evaluate.py``, figure ``execution_accuracy``): each result goes the way
  the reference's goes, rows -> DataFrame -> CSV -> ``pandas.read_csv`` (so ``'007'`` in a
  column of numbers reads back as ``7``); then every gold column (or only the condition
  columns) must equal some predicted column as a vector -- numbers within an absolute
  ``1e-2``, missing values read as ``0``, both vectors sorted first when order is ignored --
  extra predicted columns allowed; with several golds, any one (:func:`spider2_match`).

A prediction that fails to run scores 0 in both (the references' ``except``). Values no
``set`` can hold (DuckDB lists, PostgreSQL arrays and JSON) are compared frozen (a list as a
tuple, a dict as its sorted items); the references, sqlite-only, never meet them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Literal

ExecMode = Literal["spider", "bird", "bird-soft-f1", "spider2"]
MODES: tuple[str, ...] = ("spider", "bird", "bird-soft-f1", "spider2")
FIGURE = {"spider": "execution_accuracy", "bird": "execution_accuracy",
          "bird-soft-f1": "soft_f1", "spider2": "execution_accuracy"}
"""The per-case (and overall) figure each mode gives."""

Row = tuple[Any, ...]

_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)

MAX_PERMUTATIONS = 100_000
"""Column permutations :func:`spider_equal` tries before it gives up (``None``: unknown)."""


class Undecided(Exception):
    """The comparison could not be carried out to a proof (its budget ran out)."""


def _closed_up(query: str) -> str:
    """test-suite-sql-eval's ``postprocess``: no space inside ``>=``, ``<=``, ``!=``."""
    return query.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


def _without_distinct(query: str) -> str:
    """test-suite-sql-eval's ``remove_distinct``: the first statement's sqlparse tokens
    joined back, every token that reads ``distinct`` (any case) left out."""
    import sqlparse

    statements = sqlparse.parse(query)
    if not statements:
        return ""
    return "".join(t.value for t in statements[0].flatten() if t.value.lower() != "distinct")


def spider_queries(pred: str, gold: str) -> tuple[str, str, bool]:
    """``(predicted query, gold query, order matters)`` as test-suite-sql-eval runs them
    (see the module docstring)."""
    pred = _closed_up(pred.replace("value", "1"))
    gold = _closed_up(gold)
    pred, gold = _without_distinct(pred), _without_distinct(gold)
    order_matters = "order by" in gold.lower()
    return _CUR_YEAR.sub("2020", pred), _CUR_YEAR.sub("2020", gold), order_matters


def frozen(value: Any) -> Any:
    """A hashable stand-in for a value no set can hold (a list, a dict, a set)."""
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted(((frozen(k), frozen(v)) for k, v in value.items()), key=repr))
    if isinstance(value, (set, frozenset)):
        return frozenset(frozen(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def frozen_rows(rows: Sequence[Sequence[Any]]) -> list[Row]:
    return [tuple(frozen(v) for v in row) for row in rows]


def bird_equal(gold: Sequence[Row], pred: Sequence[Row]) -> bool:
    """BIRD's execution accuracy: the two results hold the same set of rows."""
    return set(frozen_rows(pred)) == set(frozen_rows(gold))


def _sorted_row(row: Row) -> Row:
    """A row's values in test-suite-sql-eval's ``unorder_row`` order (by text and type)."""
    return tuple(sorted(row, key=lambda x: str(x) + str(type(x))))


def _permutations(gold: list[Row], pred: list[Row], n: int) -> Iterator[tuple[int, ...]]:
    """Each assignment of a distinct predicted column to every gold column under which every
    column holds the same set of values as the gold column (a necessary condition
    of equal multisets of rows), depth first."""
    gold_values = [{row[i] for row in gold} for i in range(n)]
    pred_values = [{row[j] for row in pred} for j in range(n)]
    allowed = [[j for j in range(n) if pred_values[j] == gold_values[i]] for i in range(n)]
    chosen: list[int] = []
    used = [False] * n

    def walk(i: int) -> Iterator[tuple[int, ...]]:
        if i == n:
            yield tuple(chosen)
            return
        for j in allowed[i]:
            if not used[j]:
                used[j] = True
                chosen.append(j)
                yield from walk(i + 1)
                chosen.pop()
                used[j] = False

    return walk(0)


def spider_equal(gold: Sequence[Row], pred: Sequence[Row], order_matters: bool, *,
                 max_permutations: int = MAX_PERMUTATIONS) -> bool:
    """test-suite-sql-eval's ``result_eq(gold, pred, order_matters)``: whether some order
    of the predicted columns makes the results equal -- as lists when order matters, as
    multisets of rows otherwise. Raises :class:`Undecided` past ``max_permutations``."""
    g, p = frozen_rows(gold), frozen_rows(pred)
    if not g and not p:
        return True
    if len(g) != len(p):
        return False
    n = len(g[0])
    if len(p[0]) != n:
        return False
    g_sorted, p_sorted = [_sorted_row(r) for r in g], [_sorted_row(r) for r in p]
    if order_matters and g_sorted != p_sorted:
        return False
    if not order_matters and set(g_sorted) != set(p_sorted):
        return False
    g_bag = None if order_matters else Counter(g)
    for tried, perm in enumerate(_permutations(g, p, n)):
        if tried >= max_permutations:
            raise Undecided(f"more than {max_permutations:,} column orders to try")
        permuted = p if n == 1 else [tuple(row[j] for j in perm) for row in p]
        if order_matters:
            if permuted == g:
                return True
        elif Counter(permuted) == g_bag:
            return True
    return False


def bird_soft_f1(gold: Sequence[Row], pred: Sequence[Row]) -> float:
    """BIRD mini_dev's ``calculate_f1_score(predicted, ground_truth)``: 1.0 for two empty
    results; else, duplicates dropped, row ``i`` of the gold is paired with row ``i`` of the
    prediction: true positives are the predicted values found in the gold row, false
    positives the others, false negatives the gold values not in the predicted row, each
    over the gold row's width; an unpaired gold row is one false negative, an unpaired
    predicted row one false positive. A zero-width gold row paired with a predicted one is
    the reference's division by zero: 0.0. Sums run in the reference's order."""
    if not pred and not gold:
        return 1.0
    p = list(dict.fromkeys(frozen_rows(pred)))
    g = list(dict.fromkeys(frozen_rows(gold)))
    tp = fp = fn = 0
    for i, g_row in enumerate(g):
        if i >= len(p):
            fn += 1
            continue
        p_row, width = p[i], len(g_row)
        if not width:
            return 0.0
        matches = sum(1 for v in p_row if v in g_row)
        tp += matches / width
        fp += (len(p_row) - matches) / width
        fn += sum(1 for v in g_row if v not in p_row) / width
    for _ in range(len(p) - len(g)):
        fp += 1
    precision = tp / (tp + fp) if tp + fp > 0 else 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def canonical_order(rows: Sequence[Row]) -> list[Row]:
    """``rows`` in one fixed order (by each value's type name, then its ``repr``): how
    ``bird-soft-f1``, which pairs rows by position, reads an unordered result on an engine
    that gives it no order (DuckDB's and PostgreSQL's hash operators return the rows of a
    DISTINCT or GROUP BY in an order that varies from run to run)."""
    return sorted(rows, key=lambda row: tuple((type(v).__name__, repr(v)) for v in row))


def mode_score(mode: ExecMode, gold: Sequence[Row], pred: Sequence[Row],
               order_matters: bool = False) -> float:
    """The mode's figure for two results (``order_matters``: spider only): 1.0 or 0.0,
    or the Soft F1."""
    if mode == "bird-soft-f1":
        return float(bird_soft_f1(gold, pred))
    if mode == "bird":
        return 1.0 if bird_equal(gold, pred) else 0.0
    return 1.0 if spider_equal(gold, pred, order_matters) else 0.0


SPIDER2_ABS_TOL = 1e-2


def spider2_frame(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Any:
    """A result as Spider 2.0 compares it: the rows as ``pandas.read_sql_query`` makes them
    a DataFrame (``coerce_float``), written with ``to_csv(index=False)`` and read back with
    ``pandas.read_csv`` (the reference saves every result as CSV and reads the CSV)."""
    import io

    import pandas as pd

    frame = pd.DataFrame.from_records([tuple(r) for r in rows], columns=list(columns),
                                      coerce_float=True)
    text = io.StringIO()
    frame.to_csv(text, index=False)
    text.seek(0)
    return pd.read_csv(text)


def _spider2_vectors_equal(gold: list, pred: list, ignore_order: bool) -> bool:
    import math

    import pandas as pd

    g = [0 if pd.isna(x) else x for x in gold]
    p = [0 if pd.isna(x) else x for x in pred]
    if ignore_order:
        def key(x: Any) -> tuple:
            return (x is None, str(x), isinstance(x, (int, float)))

        g, p = sorted(g, key=key), sorted(p, key=key)
    if len(g) != len(p):
        return False
    for a, b in zip(g, p, strict=True):
        if pd.isna(a) and pd.isna(b):
            continue
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if not math.isclose(float(a), float(b), abs_tol=SPIDER2_ABS_TOL):
                return False
        elif a != b:
            return False
    return True


def spider2_table_match(gold: Any, pred: Any, condition_cols: Sequence[int] | None,
                        ignore_order: bool) -> bool:
    """One gold DataFrame against the predicted one (``spider2_frame``): each gold column
    (``condition_cols``: only those, by position) equals some predicted column."""
    chosen = gold.iloc[:, list(condition_cols)] if condition_cols else gold
    gold_vectors = chosen.transpose().values.tolist()
    pred_vectors = pred.transpose().values.tolist()
    return all(any(_spider2_vectors_equal(g, p, ignore_order) for p in pred_vectors)
               for g in gold_vectors)


def spider2_match(golds: Sequence[Any], pred: Any, condition_cols: Sequence[int] | None,
                  ignore_order: bool) -> bool:
    """Spider 2.0's verdict: the prediction matches any one of the golds."""
    return any(spider2_table_match(g, pred, condition_cols, ignore_order) for g in golds)
