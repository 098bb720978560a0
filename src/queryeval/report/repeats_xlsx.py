"""The ``Repeats`` sheet of a run with ``--repeats`` (docs/repeats.md), added to the task's
xlsx report: pass rate, pass@k and pass^k (mean over cases and the case-bootstrap interval),
then the flaky cases with each attempt's outcome.

Every cell goes through :func:`queryeval.report.xlsx.put`, like every other sheet: a case
id holding a control character or ESC is shown as a visible escape, one starting with ``=``
stays text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from queryeval.report.xlsx import write_header, write_row


def add_repeats_sheet(path: Path, rep: dict, flaky_rows: int = 100) -> None:
    """Add (or replace) the ``Repeats`` sheet of the xlsx file at ``path``, atomically."""
    from openpyxl import load_workbook

    from queryeval.io.atomic import atomic_open

    wb = load_workbook(path)
    if "Repeats" in wb.sheetnames:
        del wb["Repeats"]
    ws = wb.create_sheet("Repeats")
    rows: list[list[Any]] = []
    overall = rep.get("overall") or {}
    keys = ["pass_rate"] + [f"pass{sep}{k}" for k in rep.get("pass_k", []) for sep in ("@", "^")]
    for key in keys:
        fig = overall.get(key) or {}
        rows.append([key, fig.get("mean"), fig.get("ci_low"), fig.get("ci_high")])
    rows += [[], ["attempts per case", rep.get("repeats")], ["cases", rep.get("cases")],
             ["flaky cases", rep.get("flaky_cases"), "share", rep.get("flaky_share")], [],
             ["flaky case", "pass rate", "attempts (P pass, F fail, E error)"]]
    rows += [[row.get("case_id"), row.get("pass_rate"), row.get("outcomes")]
             for row in (rep.get("flaky") or [])[:flaky_rows]]
    write_header(ws, 1, ["figure", "mean over cases", "CI low", "CI high"])
    for i, values in enumerate(rows, start=2):
        write_row(ws, i, values)
    with atomic_open(path, "wb") as fh:
        wb.save(fh)
