"""Writers for a tuning result: console (rich table), JSON, CSV and xlsx.

Every format carries the same rows, ``Field Name, N, Model, recall, passed, tokens`` (recall as
the full float, never rounded in files; the console shows 4 decimals). JSON and xlsx add the
summary (questions passing every field, mean recall, tokens, budget, optimality, MRR per model,
and the reference greedy plan for comparison when a budget was set).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from queryeval.io.atomic import atomic_open, write_text_atomic
from queryeval.io.safetext import console_line, console_plain
from queryeval.tune.pipeline import TuneResult

COLUMNS = ("Field Name", "N", "Model", "recall", "passed", "tokens")


def records(result: TuneResult) -> list[dict]:
    """One dict per field, keys in :data:`COLUMNS` order."""
    return [row.as_record() for row in result.rows]


def to_json(result: TuneResult) -> dict:
    """``{"rows": [...], "summary": {...}}``."""
    return {"rows": records(result), "summary": result.summary()}


def write_json(result: TuneResult, path: str | Path) -> Path:
    """The JSON that ``queryeval run --tuning`` reads (written atomically)."""
    write_text_atomic(path, json.dumps(to_json(result), indent=2, ensure_ascii=False) + "\n")
    return Path(path)


def write_csv(result: TuneResult, path: str | Path, *, raw: bool | None = None) -> Path:
    """Rows only, with a header line (UTF-8, written atomically). A text cell that would start
    a formula gets a leading ``'`` unless ``raw`` (default: the ``QUERYEVAL_CSV_RAW``
    environment variable); see :func:`queryeval.io.safetext.csv_cell`."""
    from queryeval.io.safetext import csv_cell, csv_raw_from_env

    raw = csv_raw_from_env() if raw is None else raw
    with atomic_open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        for rec in records(result):
            writer.writerow([csv_cell(rec[c], raw=raw) for c in COLUMNS])
    return Path(path)


def write_xlsx(result: TuneResult, path: str | Path) -> Path:
    """Sheet "Tuning" with the rows, sheet "Summary" with the totals (every cell through
    :func:`queryeval.report.xlsx.put`: text is never a formula)."""
    from openpyxl import Workbook

    from queryeval.report.xlsx import put, save

    wb = Workbook()
    ws = wb.active
    ws.title = "Tuning"
    rows = [list(COLUMNS), *([rec[c] for c in COLUMNS] for rec in records(result))]
    for i, values in enumerate(rows, start=1):
        for j, value in enumerate(values, start=1):
            put(ws, i, j, value)
    summary = wb.create_sheet("Summary")
    put(summary, 1, 1, "metric")
    put(summary, 1, 2, "value")
    for i, (key, value) in enumerate(result.summary().items(), start=2):
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        put(summary, i, 1, key)
        put(summary, i, 2, value)
    return save(wb, path)


def write_default(result: TuneResult, out: str | Path) -> list[Path]:
    """The result beside the runs, like ``queryeval run`` writes its log:
    ``OUT/YYYY-MM-DD/tuning_<id>.json`` (for ``run --tuning``) and ``tuning_<id>.xlsx``."""
    import datetime as dt
    import uuid

    folder = Path(out) / dt.date.today().isoformat()
    stem = folder / f"tuning_{uuid.uuid4()}"
    return [write_json(result, stem.with_suffix(".json")),
            write_xlsx(result, stem.with_suffix(".xlsx"))]


def render_table(result: TuneResult) -> Table:
    """The rows plus a total line, for the console."""
    budget = "none" if result.budget is None else str(result.budget)
    status = "optimal" if result.optimal else "NOT proven optimal (node limit)"
    table = Table(title=f"N and model per field — budget {budget}, {status}")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("Field Name", "Model") else "right")
    for row in result.rows:
        table.add_row(console_line(row.field), str(row.n), console_line(row.model), f"{row.recall:.4f}",
                      str(row.passed), str(row.tokens))
    table.add_row("all fields", "", "", f"{result.recall:.4f}",
                  f"{result.passed}/{result.questions}", str(result.tokens), style="bold")
    return table


def print_result(result: TuneResult, console: Console) -> None:
    """The table, then the reference greedy plan's figures when there is one."""
    console.print(render_table(result))
    if result.greedy is not None:
        ns, obj = result.greedy
        console.print(
            f"reference first-fit greedy: N={list(ns)} passed {obj.passed}/{result.questions}, "
            f"recall {float(obj.recall):.4f}, tokens {obj.tokens}",
            markup=False, highlight=False, soft_wrap=True,
        )
    for note in result.notes:
        console.print(f"note: {console_plain(note)}", markup=False, highlight=False, soft_wrap=True)
