"""Console summaries (rich tables).

Names in these tables come from suites and system outputs (groups, tags, dimensions, fields,
models): every one is a literal :class:`~rich.text.Text` (never rich markup, control
characters shown as visible escapes), see :func:`queryeval.io.safetext.console_text`."""

from __future__ import annotations

from rich.table import Table

from queryeval.io.safetext import console_text


def fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def overall_table(metrics: dict, keys: list[str] | None = None, title: str = "Overall") -> Table:
    overall = metrics["overall_metrics"]
    table = Table(title=console_text(title), title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in keys or list(overall):
        value = overall.get(key)
        if isinstance(value, (dict, list)):
            continue
        table.add_row(console_text(key), console_text(fmt(value)))
    return table


def group_table(groups: dict, group_name: str, keys: list[str]) -> Table:
    table = Table(title=console_text(f"By {group_name}"), title_justify="left")
    table.add_column(console_text(group_name))
    for key in keys:
        table.add_column(console_text(key), justify="right")
    for name, figures in groups.items():
        table.add_row(console_text(name), *(console_text(fmt(figures.get(k))) for k in keys))
    return table
