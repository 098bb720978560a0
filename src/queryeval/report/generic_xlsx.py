"""A task-agnostic Excel report: sheet "Overview" from the task's flat CSV rows, sheet
"Statistics" from ``overall_metrics`` and every group in ``group_metrics``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from queryeval.report import xlsx


def write_generic_xlsx(path: str | Path, records: list[dict], metrics: dict, columns: list[str],
                       rows: Callable[[dict], Iterable[dict]], *, wrap: Iterable[str] = ()) -> Path:
    if "repeat" not in columns and xlsx.RepeatColumn(metrics).on:  # which attempt, as in the CSV
        columns = xlsx.RepeatColumn(metrics).headers(columns)
        rows = _with_repeat(rows)
    wb, ws = xlsx.new_book("Overview")
    xlsx.write_header(ws, 1, columns)
    wrap = set(wrap)
    wrap_cols = [j for j, col in enumerate(columns, start=1) if col in wrap]
    i = 2
    for record in records:
        for row in rows(record):
            values = [row.get(col) for col in columns]
            values = [xlsx.cell_text(str(v) if isinstance(v, (list, dict)) else v)
                      if isinstance(v, (str, list, dict)) else v for v in values]
            xlsx.write_row(ws, i, values, wrap=wrap_cols,
                           formats={j: xlsx.FIGURE for j, v in enumerate(values, start=1) if isinstance(v, float)})
            i += 1
    xlsx.finish_sheet(ws, len(columns), i - 1, {j: (60 if col in wrap else max(10, min(30, len(col) + 4)))
                                                for j, col in enumerate(columns, start=1)})

    st = wb.create_sheet("Statistics")
    r = xlsx.write_figures(st, 1, "Overall", ((key, value) for key, value in metrics["overall_metrics"].items()
                                              if not isinstance(value, (dict, list))))
    for name, groups in metrics.get("group_metrics", {}).items():
        if not groups:
            continue
        keys = [k for k, v in next(iter(groups.values())).items() if not isinstance(v, (dict, list))]
        r = xlsx.write_table(st, r, [name, *keys], ([g, *(vals.get(k) for k in keys)] for g, vals in groups.items()),
                             figure_cols=range(2, len(keys) + 2), title=f"By {name}")
    xlsx.set_widths(st, {1: 30, **{c: 16 for c in range(2, 12)}})
    return xlsx.save(wb, path)


def _with_repeat(rows: Callable[[dict], Iterable[dict]]) -> Callable[[dict], Iterable[dict]]:
    """``rows`` with each row's ``repeat``: its record's own."""
    return lambda record: ({**row, "repeat": record.get("repeat")} for row in rows(record))
