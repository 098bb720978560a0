"""Console summaries (rich tables)."""

from __future__ import annotations

from rich.table import Table


def fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def overall_table(metrics: dict, keys: list[str] | None = None, title: str = "Overall") -> Table:
    overall = metrics["overall_metrics"]
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in keys or list(overall):
        value = overall.get(key)
        if isinstance(value, (dict, list)):
            continue
        table.add_row(key, fmt(value))
    return table


def group_table(groups: dict, group_name: str, keys: list[str]) -> Table:
    table = Table(title=f"By {group_name}", title_justify="left")
    table.add_column(group_name)
    for key in keys:
        table.add_column(key, justify="right")
    for name, figures in groups.items():
        table.add_row(str(name), *(fmt(figures.get(k)) for k in keys))
    return table
