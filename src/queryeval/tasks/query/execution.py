"""``--compat spider|bird|bird-soft-f1`` for the query task: each case's
``execution_accuracy`` (1 or 0) as test-suite-sql-eval or BIRD computes it, or BIRD
mini_dev's ``soft_f1`` (:mod:`queryeval.metrics.tables.execution`), and the run's mean of it. Kept out of ``tasks/query/task.py``; the queries run on the case's engine,
in its sandboxed worker, never in this process.

The verdict is ``None`` (unknown, counted in ``execution_unknown`` and left out of the mean)
when it cannot be proven: the gold query failed or timed out under the mode's rewriting, a
result was cut at ``max_rows``, the source is not a SQL database, or the column-order search
ran past its budget. A prediction that fails, times out or is refused by the statement
policy scores 0, as a failed execution does in both references.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from queryeval.metrics.tables.execution import (
    FIGURE,
    Undecided,
    canonical_order,
    frozen_rows,
    mode_score,
    spider_queries,
)

UNKNOWN = "execution_unknown"


def _run(task: Any, source: str, query: str, text_errors: str) -> tuple[Any, dict]:
    """(rows as the driver returned them, or None; what happened) for one query; the rows
    carry the result's column names as ``.columns``."""
    from queryeval.engines.query import QueryExecutionError

    engine = task.engine(source)
    try:
        res = engine.execute(query, timeout_s=task.options.timeout_s,
                             max_rows=task.options.max_rows, text_errors=text_errors)
    except QueryExecutionError as err:
        return None, {"status": type(err).__name__.removeprefix("Query").lower(),
                      "reason": err.reason}
    if res.truncated:
        return None, {"status": "truncated",
                      "reason": f"the result was cut at max_rows={task.options.max_rows}"}
    return Rows(frozen_rows(res.rows), res.columns), {"status": "ok", "rows": len(res.rows)}


class Rows(list):
    """A result's rows (a list of tuples) with its column names."""

    def __init__(self, rows: list, columns: list[str]) -> None:
        super().__init__(rows)
        self.columns = list(columns)


_GOLD_LOCK = threading.Lock()


def _gold_rows(task: Any, source: str, query: str, text_errors: str) -> tuple[list | None, dict]:
    """The gold query's rows, run once per (source, query, decoding) for the task."""
    cache = task._exec_gold
    key = (source, query, text_errors)
    with _GOLD_LOCK:
        hit = cache.get(key)
    if hit is None:
        hit = _run(task, source, query, text_errors)
        with _GOLD_LOCK:
            cache[key] = hit
    return hit


def verdict(task: Any, record: dict) -> tuple[float | None, dict]:
    """``(figure, what the record keeps of it)`` for one case under the task's ``compat``
    mode: 1.0, 0.0 (or the Soft F1) or None (unknown, see the module docstring)."""
    mode = task.options.compat
    info: dict[str, Any] = {"mode": mode}
    if record.get("language") != "sql":
        return None, {**info, "status": "unknown",
                      "reason": "execution accuracy is defined on SQL databases only"}
    source, gold, pred = record["source"], record["gold_query"], record.get("predicted_query")
    if mode == "spider2":
        return _spider2(task, record, info)
    text_errors = "ignore" if mode == "spider" else "strict"
    order_matters = False
    if mode == "spider":
        try:
            pred_run, gold_run, order_matters = spider_queries(pred or "", gold)
        except Exception as exc:  # noqa: BLE001 - sqlparse on odd text: the case says so
            return None, {**info, "status": "unknown",
                          "reason": f"the queries could not be rewritten: {type(exc).__name__}"}
        info.update({"order_matters": order_matters, "gold_query_run": gold_run,
                     "predicted_query_run": pred_run})
    else:
        pred_run, gold_run = pred or "", gold
    gold_rows, gold_info = _gold_rows(task, source, gold_run, text_errors)
    if gold_rows is None:
        return None, {**info, "status": "unknown", "reason": f"gold query: {gold_info['reason']}"}
    pred_rows, failed = _predicted_rows(task, source, None if pred is None else pred_run,
                                        text_errors, info)
    if failed is not None:
        return failed
    if mode == "bird-soft-f1" and not _engine_orders(source):
        gold_rows, pred_rows, reordered = _fixed_order(gold_run, gold_rows, pred_run, pred_rows)
        if reordered:
            info["row_order"] = ("canonical: the engine gives an unordered result no order, and "
                                 "Soft F1 pairs rows by position")
    try:
        value = mode_score(mode, gold_rows, pred_rows, order_matters)
    except Undecided as exc:
        return None, {**info, "status": "unknown", "reason": str(exc)}
    return value, {**info, "status": "ok", "gold_rows": len(gold_rows),
                   "predicted_rows": len(pred_rows)}


def _engine_orders(source: str) -> bool:
    """Whether the engine returns an unordered result in a reproducible order: sqlite (one
    thread, its plan's order, as BIRD's own runs see it) yes; DuckDB and PostgreSQL no."""
    first = source.split(",")[0].strip().lower()
    return not (first.endswith(".duckdb") or first.startswith(("postgresql:", "postgres:")))


def _fixed_order(gold_query: str, gold: Any, pred_query: str, pred: Any) -> tuple[Any, Any, bool]:
    """Each result whose query has no top-level ORDER BY, in :func:`canonical_order`; whether
    any was reordered."""
    from queryeval.metrics.tables.modes import query_is_ordered

    out, reordered = [], False
    for query, rows in ((gold_query, gold), (pred_query, pred)):
        if len(rows) > 1 and query_is_ordered(query, "sql") is not True:
            rows, reordered = Rows(canonical_order(rows), rows.columns), True
        out.append(rows)
    return out[0], out[1], reordered


def _predicted_rows(task: Any, source: str, query: str | None, text_errors: str,
                    info: dict) -> tuple[Any, tuple[float | None, dict] | None]:
    """``(rows, None)`` of the predicted query, or ``(None, the case's verdict)`` where it
    gives none: no query (0, ``no_query``), a cut result (None: it proves nothing), a query
    that failed (0, its status)."""
    if query is None or not query.strip():
        return None, (0.0, {**info, "status": "no_query", "reason": "no predicted query"})
    rows, pred_info = _run(task, source, query, text_errors)
    if rows is None:
        if pred_info["status"] == "truncated":
            return None, (None, {**info, "status": "unknown", "reason": pred_info["reason"]})
        return None, (0.0, {**info, "status": pred_info["status"],
                            "reason": f"predicted query: {pred_info['reason']}"})
    return rows, None


def _spider2(task: Any, record: dict, info: dict) -> tuple[float | None, dict]:
    """Spider 2.0's verdict: the case's gold queries (and gold tables) are its golds, its
    ``columns`` (names) its condition columns, found by name in each gold's columns, and
    order is ignored unless the case is ordered (its ``ordered``, else a top-level ORDER BY
    in the gold query, as the exact match decides)."""
    from queryeval.metrics.tables.execution import spider2_frame, spider2_match

    source, pred = record["source"], record.get("predicted_query")
    ignore_order = not task._ordered(record, record["gold_query"])
    wanted = (record.get("modes") or {}).get("columns")
    info = {**info, "ignore_order": ignore_order}
    golds, conditions = [], []
    tables = [(q, None) for q in [record["gold_query"], *record.get("gold_alternatives", [])]]
    tables += [(None, t) for t in record.get("gold_tables", [])]
    for query, table in tables:
        if query is not None:
            rows, gold_info = _gold_rows(task, source, query, "strict")
            if rows is None:
                return None, {**info, "status": "unknown",
                              "reason": f"gold query: {gold_info['reason']}"}
            columns = rows.columns
        else:
            rows, columns = [tuple(r) for r in table["rows"]], list(table["columns"])
        if wanted:
            missing = [c for c in wanted if c not in columns]
            if missing:
                return None, {**info, "status": "unknown",
                              "reason": f"condition column(s) {missing} not in a gold result"}
            conditions.append([columns.index(c) for c in wanted])
        try:
            golds.append(spider2_frame(columns, rows))
        except Exception as exc:  # noqa: BLE001 - pandas could not read the gold back
            return None, {**info, "status": "unknown",
                          "reason": f"gold result: {type(exc).__name__}: {exc}"}
    rows, failed = _predicted_rows(task, source, pred, "strict", info)
    if failed is not None:
        return failed
    try:
        frame = spider2_frame(rows.columns, rows)
        same = any(spider2_match([g], frame, conditions[i] if conditions else None, ignore_order)
                   for i, g in enumerate(golds))
    except Exception as exc:  # noqa: BLE001 - the reference's except: a failed comparison
        return 0.0, {**info, "status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    return (1.0 if same else 0.0), {**info, "status": "ok", "predicted_rows": len(rows)}


def figure(mode: str) -> str:
    """The score a mode gives each case (and the run, as its mean)."""
    return FIGURE[mode]


class ExecTally:
    """The run's figure of the mode (mean of the known values) and ``execution_unknown``."""

    def __init__(self, mode: str) -> None:
        from queryeval.tasks.accum import Values

        self.key = figure(mode)
        self.mean = Values()
        self.unknown = 0

    def add(self, record: dict) -> None:
        scores = record.get("scores") or {}
        if self.key not in scores:
            return
        if scores[self.key] is None:
            self.unknown += 1
        else:
            self.mean.add(float(scores[self.key]))

    def figures(self) -> dict:
        return {self.key: self.mean.mean(), UNKNOWN: self.unknown}


def summary_keys(overall: dict) -> Iterable[str]:
    """The console's and HTML's overall rows of the mode (none without ``--compat``)."""
    return [k for k in (*dict.fromkeys(FIGURE.values()), UNKNOWN) if k in overall]
