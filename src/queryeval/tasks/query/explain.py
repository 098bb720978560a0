"""The query task's diagnoses: why a result differs from its gold, what a query touched.

* :func:`explanation` — why a case's result differs from its gold, in words: the list
  :func:`~queryeval.metrics.tables.explain.explain_tables` gives for the scored table pair,
  or one item saying why there was no table to compare (the prediction failed, returned
  nothing, could not be scored), plus the distinguishing database of a test-suite
  refutation when the record carries one (``test_suite.refuted_by``). Computed once,
  when the case is scored, and stored on the record as ``explanation``; every report reads
  that list.
* :func:`touched_fields` — what the predicted and the gold queries touched
  (:mod:`queryeval.metrics.touched`): ``record["touched"]`` (both sets and a sentence) and
  the six ``schema_*_precision/recall`` scores.
* :class:`DiagnosisTally` — the aggregate's share: the schema scores' means over the cases
  that have them, and per kind of difference the number of cases (``differences``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from queryeval.metrics.touched import SCORE_KEYS
from queryeval.tasks.accum import Values

SHOWN_CASES = 10
"""Cases whose explanation the console summary lists (the first N that fail exact match)."""


def explanation(record: dict, pred: dict | None, gold: dict | None, modes: Mapping[str, Any],
                mapping: list[str] | None, rules: str) -> list[dict]:
    """The ``explanation`` of one scored record (module docstring)."""
    from queryeval.metrics.deadline import ScoringOverrun
    from queryeval.metrics.tables.explain import explain_tables

    info = record.get("predicted_execution") or {}
    if pred is None or gold is None:
        status = info.get("status", "failed")
        reason = info.get("reason") or ""
        items = [{"kind": "no_result",
                  "message": f"the prediction gave no table to compare ({status}"
                             + (f": {reason}" if reason else "") + ")",
                  "detail": {"status": status}}]
    elif info.get("status") == "unscorable":
        items = [{"kind": "no_result", "message": f"the result could not be compared "
                  f"({info.get('reason')})", "detail": {"status": "unscorable"}}]
    else:
        try:
            items = explain_tables(gold, pred, rules=rules, mapping=mapping,
                                   **{k: modes[k] for k in ("ordered", "abs_tol", "rel_tol",
                                                            "columns") if k in modes})
        except ScoringOverrun:
            raise
        except Exception as exc:  # noqa: BLE001 - the scores stand; say what failed
            items = [{"kind": "unexplained", "message": f"no explanation: {type(exc).__name__}",
                      "detail": {}}]
    return items + distinguishing(record)


def distinguishing(record: dict) -> list[dict]:
    """The distinguishing database of a test-suite refutation (``test_suite.refuted_by``,
    recorded by tasks/query/testsuite.py: the neighbour's tables, or for a graph the triples it
    changed, and both results there) as one explanation item; none when absent."""
    suite = record.get("test_suite")
    found = suite.get("refuted_by") if isinstance(suite, dict) else None
    if not isinstance(found, dict):
        return []
    tables = found.get("database") if isinstance(found.get("database"), dict) else {}
    from queryeval.io.typedjson import display

    def cells(rows: Any) -> Any:  # typed values (UUID, interval, ...) as their own text
        if not isinstance(rows, list):
            return rows
        return [[display(v) if isinstance(v, dict) else v for v in row]
                if isinstance(row, list) else row for row in rows]

    text = json.dumps({name: cells(part.get("rows")) for name, part in tables.items()
                       if isinstance(part, dict)}, ensure_ascii=False, default=str)
    if len(text) > 600:
        text = text[:599] + "…"
    return [{"kind": "distinguishing",
             "message": f"refuted on neighbour {found.get('neighbour')}, where the two queries "
                        f"give different results: {text}", "detail": found}]  # JSON: one line


# --- what the query touched -------------------------------------------------------------------

def _dialect(source: str) -> str:
    if source.startswith(("postgresql://", "postgres://")):
        return "postgres"
    return "duckdb" if Path(source.split(",")[0].strip()).suffix.lower() == ".duckdb" else "sqlite"


_CATALOG = {
    "sqlite": "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'view')",
    "duckdb": "SELECT table_name, column_name FROM duckdb_columns() WHERE NOT internal",
    "postgres": "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema()",
}


def sql_schema(engine: Any, source: str) -> dict[str, list[str]] | None:
    """Table -> column names of a SQL source, read through its engine (the sandboxed worker,
    as any query); ``None`` when the catalogue cannot be read."""
    import sqlglot
    from sqlglot import exp

    dialect = _dialect(source)
    try:
        result = engine.execute(_CATALOG[dialect], timeout_s=10.0, max_rows=100_000)
        rows = [list(r) for r in result.rows]
    except Exception:  # noqa: BLE001 - no schema: columns of joins stay unresolved
        return None
    schema: dict[str, list[str]] = {}
    for name, second in rows:
        if dialect != "sqlite":
            schema.setdefault(str(name), []).append(str(second))
            continue
        try:
            tree = sqlglot.parse_one(str(second or ""), read="sqlite")
        except Exception:  # noqa: BLE001 - a view or table sqlglot cannot read
            continue
        cols = [c.name for c in tree.find_all(exp.ColumnDef)] if tree else []
        if cols:
            schema[str(name)] = cols
    return schema


def touched_fields(task: Any, record: dict, gold_query: str | None) -> dict[str, float]:
    """Fill ``record["touched"]`` and return the six schema scores; ``{}`` when the gold is
    not a query or does not parse (nothing to compare with)."""
    from queryeval.metrics.touched import touched, touched_scores

    if gold_query is None:
        return {}
    source, language = record["source"], record["language"]
    cache = task.__dict__.setdefault("_touched_cache", {})
    schema = None
    dialect = None
    prefixes = None
    if language == "sql":
        dialect = _dialect(source)
        if ("schema", source) not in cache:
            cache[("schema", source)] = sql_schema(task.engine(source), source)
        schema = cache[("schema", source)]
    else:
        prefixes = getattr(task.engine(source), "prefixes", None)
    key = ("gold", source, gold_query)
    if key not in cache:
        cache[key] = touched(gold_query, language, schema=schema, dialect=dialect,
                             prefixes=prefixes)
    gold = cache[key]
    if gold is None:
        return {}
    pred_query = record.get("predicted_query")
    pred = (touched(pred_query, language, schema=schema, dialect=dialect, prefixes=prefixes)
            if isinstance(pred_query, str) else None)
    record["touched"] = {"gold": gold, "predicted": pred, "message": touched_message(pred, gold)}
    return touched_scores(gold, pred)


def touched_message(pred: Mapping[str, list[str]] | None, gold: Mapping[str, list[str]]) -> str:
    """One sentence: which tables (classes), columns (predicates) and filter columns the
    prediction used that the gold does not, and missed that the gold uses."""
    if pred is None:
        return "the predicted query could not be read, so what it touched is unknown"
    parts = []
    for key, what in (("tables", "table"), ("columns", "column"), ("filters", "filter column")):
        extra = sorted(set(pred[key]) - set(gold[key]))
        missed = sorted(set(gold[key]) - set(pred[key]))
        if extra:
            parts.append(f"used {what}(s) the gold does not: {', '.join(extra)}")
        if missed:
            parts.append(f"missed {what}(s) the gold uses: {', '.join(missed)}")
    return "; ".join(parts) if parts else "the same tables, columns and filter columns as the gold"


# --- aggregate --------------------------------------------------------------------------------

class DiagnosisTally:
    """The schema scores' running means and the count of cases per kind of difference."""

    def __init__(self) -> None:
        self.schema = {k: Values() for k in SCORE_KEYS}
        self.kinds: Counter[str] = Counter()
        self.shown: list[dict] = []

    def add(self, record: dict) -> None:
        scores = record.get("scores") or {}
        for key, values in self.schema.items():
            value = scores.get(key)
            if isinstance(value, (int, float)):
                values.add(value)
        items = record.get("explanation") or []
        for kind in dict.fromkeys(i.get("kind") for i in items):
            self.kinds[str(kind)] += 1
        if items and len(self.shown) < SHOWN_CASES:
            self.shown.append({"case_id": record.get("case_id"),
                               "messages": [str(i.get("message")) for i in items]})

    def overall(self) -> dict:
        return {k: v.mean() for k, v in self.schema.items() if len(v)}

    def differences(self) -> dict:
        return {"cases_by_kind": dict(sorted(self.kinds.items())), "first_cases": self.shown}


def summary_notes(metrics: dict) -> list[Any]:
    """The console's account of why cases differ: the count per kind, then the first
    cases' explanations (read from ``metrics["differences"]``, written by the aggregate)."""
    from queryeval.errors import one_line
    from queryeval.tasks.content import Note

    found = metrics.get("differences")
    if not isinstance(found, dict) or not found.get("cases_by_kind"):
        return []
    counts = ", ".join(f"{k.replace('_', ' ')} {_count(v)}"
                       for k, v in found["cases_by_kind"].items())
    out: list[Any] = [Note(f"Why tables differ (cases per reason): {counts}")]
    for case in found.get("first_cases") or []:
        out.append(Note(f"  {one_line(case.get('case_id'))}: "
                        + "; ".join(case.get("messages") or [])))
    return out


def _count(value: Any) -> str:
    return str(int(value)) if float(value).is_integer() else f"{float(value):.2f}"
