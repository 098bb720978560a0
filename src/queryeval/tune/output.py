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

from queryeval.io.atomic import atomic_open, atomic_path, write_text_atomic
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


def write_csv(result: TuneResult, path: str | Path) -> Path:
    """Rows only, with a header line (UTF-8)."""
    with atomic_open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(records(result))
    return Path(path)


def write_xlsx(result: TuneResult, path: str | Path) -> Path:
    """Sheet "Tuning" with the rows, sheet "Summary" with the totals."""
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Tuning"
    ws.append(list(COLUMNS))
    for rec in records(result):
        ws.append([rec[c] for c in COLUMNS])
    summary = wb.create_sheet("Summary")
    summary.append(["metric", "value"])
    for key, value in result.summary().items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        summary.append([key, value])
    with atomic_path(path) as tmp:
        wb.save(tmp)
    return Path(path)


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
        table.add_row(row.field, str(row.n), row.model, f"{row.recall:.4f}",
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
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
