"""Console summaries (rich tables).

Names in these tables come from suites and system outputs (groups, tags, dimensions, fields,
models): every one is a literal :class:`~rich.text.Text` (never rich markup, control
characters shown as visible escapes, one line each: :func:`queryeval.io.safetext.console_line`)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from queryeval.io.safetext import console_line
from queryeval.report.numbers import figure

fmt = figure  # one formatter for every surface (report.numbers)


def overall_table(metrics: dict, keys: list[str] | None = None, title: str = "Overall",
                  what: str = "metric", kinds: Any = None) -> Table:
    """The Overall table; with the task's ``kinds`` a count is a whole number or named
    ``KEY (mean over repeats)`` (as the HTML report)."""
    overall = metrics["overall_metrics"]
    table = Table(title=console_line(title), title_justify="left")
    table.add_column(console_line(what))
    table.add_column("value", justify="right")
    for key in keys or list(overall):
        value = overall.get(key)
        if isinstance(value, (dict, list)):
            continue
        name = key
        if kinds is not None:
            from queryeval.report.html_figures import count_columns

            ((name, value),) = count_columns({"": {key: value}}, kinds)[""].items()
        table.add_row(console_line(name), console_line(fmt(value)))
    return table


def group_table(groups: dict, group_name: str, keys: list[str], kinds: Any = None) -> Table:
    """A group table; with the task's ``kinds`` (``Figures``) a count column is whole
    numbers, or named ``KEY (mean over repeats)`` when ``--repeats`` averaged it
    (:func:`queryeval.report.html_figures.count_columns`, as the HTML report)."""
    shown = {k: k for k in keys}
    if kinds is not None:
        from queryeval.report.html_figures import count_columns

        rows = {str(n): {k: f.get(k) for k in keys} for n, f in groups.items()
                if isinstance(f, dict)}
        named = count_columns(rows, kinds)
        for k in keys:
            if any(f"{k} (mean over repeats)" in r for r in named.values()):
                shown[k] = f"{k} (mean over repeats)"
        groups = {n: {k: r.get(shown[k]) for k in keys} for n, r in named.items()}
    table = Table(title=console_line(f"By {group_name}"), title_justify="left")
    table.add_column(console_line(group_name))
    for key in keys:
        table.add_column(console_line(shown[key]), justify="right")
    for name, figures in groups.items():
        table.add_row(console_line(name), *(console_line(fmt(figures.get(k))) for k in keys))
    return table


def render_summary(content: Any, metrics: dict, kinds: Any = None) -> list[Any]:
    """A task's summary (:meth:`Task.summary`: :mod:`queryeval.tasks.content` sections) as
    rich renderables; anything else (a custom task's own rich table) passes through."""
    from queryeval.tasks.content import Groups, Note, Overall

    out: list[Any] = []
    for item in content if isinstance(content, (list, tuple)) else [content]:
        if isinstance(item, Overall):
            out.append(overall_table(metrics, keys=list(item.keys) if item.keys is not None
                                     else None, title=item.title, what=item.what, kinds=kinds))
        elif isinstance(item, Groups):
            if item.groups:  # an empty group kind is not shown (as in the HTML report)
                out.append(group_table(item.groups, item.label, list(item.columns), kinds))
        elif isinstance(item, Note):
            text = console_line(item.text)  # a sentence: a case id's newline ends here
            if item.level == "warning":
                text.stylize("bold red")
            out.append(text)
        else:
            out.append(item)
    return out


def repeats_tables(rep: dict, flaky_rows: int = 10) -> list[Table]:
    """A run with ``--repeats``: pass rate, pass@k and pass^k with their case-bootstrap
    intervals, the share of flaky cases, and the first flaky cases with each attempt's
    outcome (P passed, F failed, E the call failed)."""
    pct = f"{rep.get('confidence', 0.95):.0%}"
    table = Table(title=console_line(f"Repeats: {rep.get('repeats')} attempts per case, "
                                     f"{rep.get('cases')} cases"), title_justify="left")
    table.add_column("figure")
    table.add_column("mean over cases", justify="right")
    table.add_column(f"{pct} CI (cases)", justify="right")
    overall = rep.get("overall") or {}
    keys = ["pass_rate"] + [f"pass{sep}{k}" for k in rep.get("pass_k", []) for sep in ("@", "^")]
    for key in keys:
        fig = overall.get(key) or {}
        ci = (f"{fmt(fig.get('ci_low'))} – {fmt(fig.get('ci_high'))}"
              if fig.get("ci_low") is not None else "—")
        table.add_row(console_line(key), console_line(fmt(fig.get("mean"))), console_line(ci))
    share = rep.get("flaky_share")
    table.add_row("flaky cases", console_line(f"{rep.get('flaky_cases', 0)} "
                                              f"({fmt(share)})"), "")
    out = [table]
    flaky = rep.get("flaky") or []
    if flaky:
        ft = Table(title=console_line("Flaky cases (P pass, F fail, E error)"), title_justify="left")
        ft.add_column("case")
        ft.add_column("pass rate", justify="right")
        ft.add_column("attempts")
        for row in flaky[:flaky_rows]:
            ft.add_row(console_line(str(row.get("case_id"))), console_line(fmt(row.get("pass_rate"))),
                       console_line(str(row.get("outcomes"))))
        if len(flaky) > flaky_rows or rep.get("flaky_cases", 0) > len(flaky[:flaky_rows]):
            ft.caption = console_line(f"{rep.get('flaky_cases')} flaky in all; every case in "
                                      "repeats_<id>.csv")
        out.append(ft)
    return out
