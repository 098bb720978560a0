"""The console, JSON and xlsx outputs of a two-run comparison (HTML: ``html_compare``).

Each leads with the verdict (:meth:`Comparison.headline`: per metric better, worse or no
detectable difference after Holm) and the warnings; the console is concise by default (one
table, one line of flip counts) and lists the flipped cases with ``details=True``
(``queryeval compare --details``). Every figure is read from the
:class:`~queryeval.report.compare.Comparison`; nothing is recomputed here.
"""

from __future__ import annotations

import re
from pathlib import Path

from queryeval.errors import one_line
from queryeval.report import compare_verdict as verdicts
from queryeval.report.compare import Comparison, MetricComparison
from queryeval.run.log import dumps


def _f(v: float | None, spec: str = ".4f") -> str:
    return "—" if v is None else format(v, spec)


def short_verdict(m: MetricComparison) -> str:
    """The verdict cell: ``better``, ``worse``, ``—`` (no detectable difference), ``count``;
    a metric sharing an earlier one's test says so (``test of recall@5``)."""
    if m.verdict == verdicts.COUNT:
        return "count"
    text = m.verdict if m.verdict in (verdicts.BETTER, verdicts.WORSE) else "—"
    return f"{text} (test of {m.same_as})" if m.same_as else text


def run_line(comp: Comparison) -> str:
    """The two runs in one line (each label on one line: :func:`queryeval.errors.one_line`)."""
    a, b = comp.run_a, comp.run_b
    return (f"A = {one_line(a.get('label'), None)} ({one_line(str(a.get('batch_id'))[:8])}) · "
            f"B = {one_line(b.get('label'), None)} "
            f"({one_line(str(b.get('batch_id'))[:8])}) · {comp.paired} paired cases, {len(comp.only_a)} "
            f"only in A, {len(comp.only_b)} only in B, {len(comp.excluded)} excluded")


def console_renderables(comp: Comparison, *, details: bool = False, max_flips: int = 10) -> list:
    """The verdict line, the warnings, one table (metric, n, means, B − A with its CI, Holm
    p, verdict) and the flip counts; with ``details`` also raw and t-test p-values and each
    metric's flipped cases. Text from the runs is literal, never markup, with control
    characters made visible (:func:`queryeval.io.safetext.console_text`)."""
    from rich.table import Table

    from queryeval.io.safetext import console_line as lit

    worse = bool(comp.regressions())
    out: list = [lit(f"Compare {comp.task}: {run_line(comp)}"),
                 lit(comp.headline(), "bold red" if worse else "bold")]
    out += [lit(f"warning: {w}", "yellow") for w in comp.warnings]
    head = Table(title_justify="left")
    cols = ["metric", "n", "A", "B", "B − A", f"{comp.confidence:.0%} CI", "p Holm", "verdict"]
    if details:
        cols[7:7] = ["p rand.", "p t-test", "improved", "regressed"]
    for col in cols:
        head.add_column(col, justify="left" if col in ("metric", "verdict") else "right")
    for m in comp.metrics:
        row = [lit(m.metric), str(m.n), _f(m.mean_a), _f(m.mean_b), _f(m.diff, "+.4f"),
               lit(f"[{_f(m.ci_low, '+.3f')}, {_f(m.ci_high, '+.3f')}]"), _f(m.p_holm, ".3g")]
        if details:
            row += [_f(m.p_randomization, ".4g"), _f(m.p_ttest, ".4g"), str(len(m.improved)),
                    str(len(m.regressed))]
        style = "bold red" if m.verdict == verdicts.WORSE else (
            "green" if m.verdict == verdicts.BETTER else None)
        head.add_row(*row, lit(short_verdict(m)), style=style)
    out.append(head)
    out.append(lit(f"verdict: better/worse = significant after Holm over {sum(m.tested for m in comp.metrics)} "
                   f"tested metric(s) at alpha {comp.alpha:g}; — = no detectable difference; "
                   "count = not tested; (test of m) = equal to m case by case, up to a "
                   "factor: one test"))
    imp = sum(len(m.improved) for m in comp.metrics if m.tested)
    reg = sum(len(m.regressed) for m in comp.metrics if m.tested)
    if not details:
        if imp or reg:
            out.append(lit(f"flipped cases over the tested metrics: {imp} improved, {reg} "
                           "regressed (--details lists them; --json/--xlsx/--html hold all)"))
        return out
    for m in comp.metrics:
        flips = [("improved", f) for f in m.improved] + [("regressed", f) for f in m.regressed]
        if not flips:
            continue
        t = Table(title=lit(f"flipped cases: {m.metric}"), title_justify="left")
        for col in ("change", "case", "A", "B"):
            t.add_column(col)
        for kind, f in flips[:max_flips]:
            t.add_row(kind, lit(f"{f.case_id} {f.name or ''}".strip()), _f(f.a), _f(f.b))
        if len(flips) > max_flips:
            t.add_row("…", f"{len(flips) - max_flips} more (see --json/--xlsx/--html)", "", "")
        out.append(t)
    return out


def write_json(comp: Comparison, path: str | Path) -> Path:
    from queryeval.io.atomic import write_text_atomic

    write_text_atomic(path, dumps(comp.to_dict(), indent=2) + "\n")
    return Path(path)


def _sheet_title(name: str, used: set[str]) -> str:
    from queryeval.io.safetext import xlsx_text

    base = re.sub(r"[\[\]:*?/\\]", "_", xlsx_text(name))[:31].strip("'") or "metric"
    title, i = base, 2
    while title.lower() in used or title.lower() == "summary":
        suffix = f"~{i}"
        title, i = base[: 31 - len(suffix)] + suffix, i + 1
    used.add(title.lower())
    return title


def write_xlsx(comp: Comparison, path: str | Path) -> Path:
    """Sheet ``Summary`` (the verdict, warnings, one row per metric) and one sheet per metric
    with its flipped cases."""
    from openpyxl import Workbook

    from queryeval.report.xlsx import save, set_widths, write_table

    wb = Workbook()
    ws = wb.active
    ws.title = "Summary"
    info = [("task", comp.task), ("verdict", comp.headline()),
            ("run A", f"{comp.run_a.get('label')} ({comp.run_a['batch_id']})"),
            ("run B", f"{comp.run_b.get('label')} ({comp.run_b['batch_id']})"),
            ("paired cases", comp.paired), ("only in A", len(comp.only_a)),
            ("only in B", len(comp.only_b)), ("excluded (errors, on_error=skip)", len(comp.excluded)),
            ("alpha", comp.alpha), ("resamples", comp.resamples), ("seed", comp.seed),
            *(("warning", w) for w in comp.warnings)]
    row = write_table(ws, 1, ["field", "value"], info, title="Comparison")
    headers = ["metric", "n", "mean A", "mean B", "B - A", "CI low", "CI high", "p randomization",
               "p t-test", "p Holm", "p t-test Holm", "improved", "regressed", "verdict",
               "tested", "same as"]
    rows = [[m.metric, m.n, m.mean_a, m.mean_b, m.diff, m.ci_low, m.ci_high, m.p_randomization,
             m.p_ttest, m.p_holm, m.p_ttest_holm, len(m.improved), len(m.regressed), m.verdict,
             "yes" if m.tested else "no", m.same_as or ""] for m in comp.metrics]
    write_table(ws, row, headers, rows, figure_cols=(3, 4, 5, 6, 7), title="Metrics")
    ws.freeze_panes = None
    set_widths(ws, {1: 34, **{j: 14 for j in range(2, 17)}})
    used: set[str] = set()
    for m in comp.metrics:
        sheet = wb.create_sheet(_sheet_title(m.metric, used))
        flips = [("improved", f) for f in m.improved] + [("regressed", f) for f in m.regressed]
        write_table(sheet, 1, ["change", "case_id", "name", "A", "B", "B - A"],
                    [[k, f.case_id, f.name, f.a, f.b, f.delta] for k, f in flips],
                    figure_cols=(4, 5, 6), title=f"{m.metric}: flipped cases ({len(flips)})")
        sheet.freeze_panes = "A3"
        set_widths(sheet, {1: 12, 2: 40, 3: 40, 4: 10, 5: 10, 6: 10})
    return save(wb, path)
