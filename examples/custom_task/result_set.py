"""A custom queryeval task: score predicted SQL by result-set equality, numbers compared with a
tolerance (``rel_tol``/``abs_tol``), rows as a multiset (order and duplicates as returned).

The suite uses the ``query`` target of the built-in task (``gold`` SQL and its ``source``
database); this task reads those turns, runs gold and predicted queries on an in-memory
SQLite database built from the source's ``.sql`` script (read-only once built: an authorizer
allows reads only, and a step budget stops runaway queries), and scores per case:

* ``match``: 1.0 when the two result sets are equal as multisets of rows under the tolerance;
* ``row_recall`` / ``row_precision``: matched rows over gold rows / predicted rows.

Register it, then run it like a built-in::

    import queryeval as qe
    from result_set import ResultSetTask

    qe.register_task(ResultSetTask)
    run = qe.evaluate("suite.yaml", system=my_bot, task="result_set", rel_tol=0.01)

or ship it in a package with an entry point (``pyproject.toml``)::

    [project.entry-points."queryeval.tasks"]
    result_set = "result_set:ResultSetTask"

and ``queryeval run suite.yaml --task result_set --option rel_tol=0.01 --system ...``.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from queryeval.suite.models import Case
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Groups, Overall, ReportItem, Workbook

MAX_STEPS = 5_000_000  # SQLite VM steps per query (in units of 1,000) before it is stopped
_READ_ONLY = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}


class ResultSetOptions(TaskOptions):
    rel_tol: float = Field(1e-9, ge=0)
    """Relative tolerance for numbers (``math.isclose``)."""
    abs_tol: float = Field(0.0, ge=0)
    """Absolute tolerance for numbers."""
    database: str | None = None
    """Default ``.sql`` script when a target names no ``source``."""


class Prediction(BaseModel):
    model_config = ConfigDict(extra="ignore")
    query: str = Field(min_length=1)


def cells_equal(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    return a == b


def matched_rows(gold: list[list], pred: list[list], rel_tol: float, abs_tol: float) -> int:
    """Rows of ``gold`` matched one-to-one by rows of ``pred`` (greedy, in order; exact rows
    first, so a tolerance never steals an exact partner)."""
    free = list(range(len(pred)))
    count = 0
    pending = []
    for row in gold:
        hit = next((j for j in free if pred[j] == row), None)
        if hit is None:
            pending.append(row)
        else:
            free.remove(hit)
            count += 1
    for row in pending:
        hit = next((j for j in free if len(pred[j]) == len(row) and all(
            cells_equal(x, y, rel_tol, abs_tol) for x, y in zip(row, pred[j], strict=True))), None)
        if hit is not None:
            free.remove(hit)
            count += 1
    return count


def score_rows(gold: list[list], pred: list[list] | None, rel_tol: float, abs_tol: float) -> dict:
    if pred is None:
        return {"match": 0.0, "row_recall": 0.0, "row_precision": 0.0}
    m = matched_rows(gold, pred, rel_tol, abs_tol)
    equal = m == len(gold) == len(pred)
    return {"match": 1.0 if equal else 0.0,
            "row_recall": m / len(gold) if gold else float(not pred),
            "row_precision": m / len(pred) if pred else float(not gold)}


class _Databases:
    """One in-memory SQLite database per ``.sql`` script, built once, then read-only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, str] = {}

    def run(self, source: str, sql: str) -> list[list]:
        with self._lock:
            if source not in self._scripts:
                self._scripts[source] = Path(source).read_text(encoding="utf-8")
        conn = sqlite3.connect(":memory:")
        try:
            conn.executescript(self._scripts[source])
            conn.set_authorizer(lambda action, *_: sqlite3.SQLITE_OK if action in _READ_ONLY
                                else sqlite3.SQLITE_DENY)
            steps = [0]

            def budget() -> int:
                steps[0] += 1
                return 1 if steps[0] > MAX_STEPS else 0

            conn.set_progress_handler(budget, 1000)
            return [list(row) for row in conn.execute(sql).fetchall()]
        finally:
            conn.close()


class ResultSetTask(Task):
    name = "result_set"
    Options = ResultSetOptions
    csv_columns = ["case_id", "name", "status", "gold_query", "predicted_query", "match",
                   "row_recall", "row_precision", "error"]

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        super().__init__(options)
        self._db = _Databases()

    def scored_turns(self, case: Case) -> list[int]:
        return [i for i in case.scored_turns()
                if case.conversation[i].target.query is not None]  # type: ignore[union-attr]

    def requests(self, case: Case) -> list[dict]:
        out = super().requests(case)
        for req in out:
            req["question"] = req["messages"][-1]["content"]
        return out

    def parse_output(self, raw: Any) -> dict:
        return Prediction.model_validate(raw).model_dump()

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        return str(obj["case_id"]), obj.get("turn"), self.parse_output(obj)

    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        outcome = outcomes[0]
        target = case.conversation[outcome.turn].target.query  # type: ignore[union-attr]
        source = target.source or self.options.database
        record = self.base_record(case, outcomes)
        record.update({"question": case.conversation[outcome.turn].content, "source": source,
                       "gold_query": target.gold, "error": outcome.error,
                       "predicted_query": (outcome.output or {}).get("query")})
        if source is None:
            record.update(status="error", error={"kind": "config", "message": "no database"},
                          error_kinds=["config"], gold_rows=None, predicted_rows=None, scores=None)
            return record
        try:
            record["gold_rows"] = self._db.run(source, target.gold)
        except (sqlite3.Error, OSError) as exc:  # the suite's fault: recorded, never scored
            error = {"kind": "gold", "message": f"{type(exc).__name__}: {exc}"}
            record.update(status="error", error=error, error_kinds=["gold"], gold_rows=None,
                          predicted_rows=None, scores=None)
            return record
        pred = None
        if record["predicted_query"]:
            try:
                pred = self._db.run(source, record["predicted_query"])
            except sqlite3.Error as exc:  # the prediction's own failure: it scores 0
                record["predicted_error"] = f"{type(exc).__name__}: {exc}"
        record["predicted_rows"] = pred
        return self.rescore_record(record)

    def rescore_record(self, record: dict) -> dict:
        if record.get("gold_rows") is None:
            return record
        o = self.options
        return {**record, "scores": score_rows(record["gold_rows"], record["predicted_rows"],
                                               o.rel_tol, o.abs_tol)}

    def aggregate(self, records: Iterable[dict]) -> dict:
        tally = Tally(self)
        keys = ("match", "row_recall", "row_precision")
        overall = {k: Values() for k in keys}
        tags: dict[str, dict[str, Values]] = {}
        for r in tally.counted(records):
            if not r.get("scores"):
                continue
            for tag in r.get("tags") or ["(no tag)"]:
                group = tags.setdefault(tag, {k: Values() for k in keys})
                for k in keys:
                    group[k].add(r["scores"][k])
            for k in keys:
                overall[k].add(r["scores"][k])
        return {
            "overall_metrics": {"cases": tally.total, "scored_cases": tally.counted_n,
                                **{k: v.mean() for k, v in overall.items()},
                                "rel_tol": self.options.rel_tol, "abs_tol": self.options.abs_tol,
                                **tally.error_summary()},
            "group_metrics": {"tag": {t: {k: v.mean() for k, v in g.items()}
                                      for t, g in sorted(tags.items())}},
        }

    def csv_rows(self, record: dict) -> Iterable[dict]:
        scores = record.get("scores") or {}
        error = record.get("error")
        yield {**{k: record.get(k) for k in ("case_id", "name", "status", "gold_query",
                                             "predicted_query")},
               **scores, "error": f"{error['kind']}: {error['message']}" if error else None}

    # what the reports show; the report layer renders it (queryeval.tasks.content)
    def summary(self, metrics: dict) -> list[Any]:
        return [Overall(["match", "row_recall", "row_precision", "cases", "errors"]),
                Groups(metrics["group_metrics"]["tag"], "tag", ["match", "row_recall"])]

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        # report_<id>.xlsx: a sheet of the csv columns, one row per case, and the overall figures
        return [Workbook("table", {"columns": self.csv_columns, "rows": self.csv_rows})]
