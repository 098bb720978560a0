"""Seed 003's Excel report: one row per case with its four F1s, execution flags, gold and
predicted row counts and both queries, why the tables differ and what the queries touched
(the record's ``explanation`` and ``touched``, through the task's CSV rows) and, in a judged
run, what decided the case and the judge's verdict and reason; statistics overall and per
group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from queryeval.report.generic_xlsx import write_generic_xlsx


def write_query_xlsx(path: str | Path, records: list[dict], metrics: dict, columns: list[str],
                     rows: Callable[[dict], Iterable[dict]]) -> Path:
    return write_generic_xlsx(path, records, metrics, columns, rows,
                              wrap=("question", "gold_query", "predicted_query", "predicted_reason",
                                    "why", "touched", "judge_reason"))
