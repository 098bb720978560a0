"""The freeform task's Excel report: one row per case (the task's CSV row: question,
response, reference, passed, the deciding rule and its detail or the judge's verdict and
reason, SQuAD EM/F1) and the statistics sheet, through the generic writer's safe cells."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from queryeval.report.generic_xlsx import write_generic_xlsx


def write_freeform_xlsx(path: str | Path, records: list[dict], metrics: dict, columns: list[str],
                        rows: Callable[[dict], Iterable[dict]]) -> Path:
    return write_generic_xlsx(path, records, metrics, columns, rows,
                              wrap=("question", "response", "detail", "judge_reason"))
