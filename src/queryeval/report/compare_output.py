"""The one output layer of every comparison (HTML: :mod:`queryeval.report.html_compare`):
console, JSON and xlsx of both views, and Markdown, LaTeX (booktabs) and CSV of the table.

The model (:class:`~queryeval.report.compare.NWayComparison`) reads in two layouts: two runs
as B against A (:class:`~queryeval.report.compare.Comparison`: one row per metric with
B − A, its CI, the Holm p and the verdict, and the flipped cases) and the table (rows =
metrics, columns = runs, the best mean marked, significance letters). Each leads with the
verdict and the warnings; the two-run console is concise by default (one table, one line of
flip counts) and lists the flipped cases with ``details=True`` (``queryeval compare
--details``). :func:`console_renderables` and :func:`write` take either view. Every figure
is read from the model; nothing is recomputed here.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError, one_line
from queryeval.report import compare_verdict as verdicts
from queryeval.report.compare import Comparison, MetricComparison, NWayComparison, Table, letter
from queryeval.report.markdown import md
from queryeval.run.log import dumps


def _num(v: float | None, spec: str = ".4f") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


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


def _pair_console(comp: Comparison, *, details: bool = False, max_flips: int = 10) -> list:
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
        row = [lit(m.metric), str(m.n), _num(m.mean_a), _num(m.mean_b), _num(m.diff, "+.4f"),
               lit(f"[{_num(m.ci_low, '+.3f')}, {_num(m.ci_high, '+.3f')}]"), _num(m.p_holm, ".3g")]
        if details:
            row += [_num(m.p_randomization, ".4g"), _num(m.p_ttest, ".4g"), str(len(m.improved)),
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
            t.add_row(kind, lit(f"{f.case_id} {f.name or ''}".strip()), _num(f.a), _num(f.b))
        if len(flips) > max_flips:
            t.add_row("…", f"{len(flips) - max_flips} more (see --json/--xlsx/--html)", "", "")
        out.append(t)
    return out


def _sheet_title(name: str, used: set[str]) -> str:
    from queryeval.io.safetext import xlsx_text

    base = re.sub(r"[\[\]:*?/\\]", "_", xlsx_text(name))[:31].strip("'") or "metric"
    title, i = base, 2
    while title.lower() in used or title.lower() == "summary":
        suffix = f"~{i}"
        title, i = base[: 31 - len(suffix)] + suffix, i + 1
    used.add(title.lower())
    return title


def _pair_xlsx(comp: Comparison, path: str | Path) -> Path:
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


# --- the table of N runs ------------------------------------------------------------------
def _cells(comp: NWayComparison, table: Table, metric: str) -> list[tuple[str, bool, str, bool]]:
    """Per run: (value text, best, letters of runs it is significantly better than, worse
    than the baseline)."""
    best = set(table.best(metric))
    out = []
    for k, v in enumerate(table.means[metric]):
        better, worse = table.marks(metric, k, comp.alpha)
        out.append((_num(v), k in best, "".join(letter(x) for x in better), 0 in worse))
    return out


def _scope(table: Table) -> str:
    if table.key is None:
        return "overall"
    also = f" (also {', '.join(table.also)})" if table.also else ""
    return f"{table.key} = {table.member}{also}"


def _legend(comp: NWayComparison) -> str:
    against = "the baseline (a)" if comp.pairs == "baseline" else "every other run"
    return (f"Best mean in bold. Letters: significantly better than that run; ▼: significantly "
            f"worse than the baseline (paired randomization test against {against}, "
            f"Holm-adjusted across each table's tests, alpha {comp.alpha:g}; counts are not "
            f"tested, and a metric equal case by case to an earlier one shares its test).")


def to_markdown(comp: NWayComparison) -> str:
    """The N-run comparison in Markdown (``--markdown``, the GitHub step summary); every
    untrusted text through the one escaper, :func:`queryeval.report.markdown.md`."""
    lines = [f"## Compare {md(comp.task)}", ""]
    lines += [f"- **{letter(k)}**: {md(comp.labels[k])} (`{md(r['batch_id'])}`)"
              for k, r in enumerate(comp.runs)]
    lines += ["", f"**Verdict.** {md(comp.headline())}" if comp.headline() else "", ""]
    lines += [f"- warning: {md(w)}" for w in comp.warnings]
    lines += ["", md(_legend(comp)), ""]
    for table in comp.tables():
        lines += [f"### {md(_scope(table))}", "",
                  "| metric | n | " + " | ".join(f"{letter(k)}: {md(lb)}"
                                                for k, lb in enumerate(comp.labels)) + " |",
                  "|---|---:|" + "---:|" * len(comp.labels)]
        for m in table.metrics:
            cells = []
            for text, best, sig, worse in _cells(comp, table, m):
                cell = f"**{text}**" if best else text
                cells.append(cell + (f"<sup>{sig}</sup>" if sig else "") + (" ▼" if worse else ""))
            lines.append(f"| {md(m)} | {table.n[m]} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def latex_escape(text: object) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in " ".join(str(text).split()))


def to_latex(comp: NWayComparison) -> str:
    """One booktabs ``tabular`` per table (needs ``\\usepackage{booktabs}``)."""
    out = []
    for table in comp.tables():
        cols = "l r " + "r" * len(comp.labels)
        out += [f"% {latex_escape(_scope(table))}", f"\\begin{{tabular}}{{{cols}}}", "\\toprule",
                "metric & n & " + " & ".join(f"{letter(k)}: {latex_escape(lb)}"
                                             for k, lb in enumerate(comp.labels)) + r" \\",
                "\\midrule"]
        for m in table.metrics:
            cells = []
            for text, best, sig, worse in _cells(comp, table, m):
                cell = "--" if text == "—" else (f"\\textbf{{{text}}}" if best else text)
                marks = sig + ("\\downarrow" if worse else "")
                cells.append(cell + (f"$^{{{marks}}}$" if marks else ""))
            out.append(f"{latex_escape(m)} & {table.n[m]} & " + " & ".join(cells) + r" \\")
        out += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(out)


def csv_rows(comp: NWayComparison) -> list[list[Any]]:
    """The tables as rows (header first): scope, metric, n, then per run its mean, best,
    letters of the runs it is significantly better than, and 'worse than baseline'."""
    from queryeval.io.safetext import csv_row

    head: list[Any] = ["group_key", "group", "metric", "n"]
    for k, lb in enumerate(comp.labels):
        head += [f"{letter(k)}: {lb}", f"{letter(k)} best", f"{letter(k)} better than",
                 f"{letter(k)} worse than baseline"]
    rows = [csv_row(head)]
    for table in comp.tables():
        for m in table.metrics:
            row: list[Any] = [table.key or "", table.member or "", m, table.n[m]]
            for k, (_, best, sig, worse) in enumerate(_cells(comp, table, m)):
                row += [table.means[m][k], "yes" if best else "", sig, "yes" if worse else ""]
            rows.append(csv_row(row))
    return rows


def to_csv(comp: NWayComparison) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(csv_rows(comp))
    return buf.getvalue()


def write(comp: Comparison | NWayComparison, path: str | Path, kind: str) -> Path:
    """Write either view as ``kind``: json, xlsx or html; the table also as md, tex or csv."""
    from queryeval.io.atomic import write_text_atomic

    pair = isinstance(comp, Comparison)
    if kind == "xlsx":
        return _pair_xlsx(comp, path) if pair else _table_xlsx(comp, path)
    if kind == "html":
        from queryeval.report import html_compare

        text = html_compare.render_comparison(comp) if pair else html_compare.render_nway(comp)
    elif kind == "json":
        text = dumps(comp.to_dict(), indent=2) + "\n"
    else:
        render = None if pair else {"md": to_markdown, "tex": to_latex, "csv": to_csv}.get(kind)
        if render is None:
            raise ConfigError(f"unknown output kind {kind!r}")
        text = render(comp)
    write_text_atomic(path, text)
    return Path(path)


def write_json(comp: Comparison | NWayComparison, path: str | Path) -> Path:
    return write(comp, path, "json")


def write_xlsx(comp: Comparison | NWayComparison, path: str | Path) -> Path:
    return write(comp, path, "xlsx")


def console_renderables(comp: Comparison | NWayComparison, *, details: bool = False,
                        **options: Any) -> list:
    """What ``queryeval compare`` prints of either view (``details``: ``--details``;
    ``max_flips`` for two runs, ``groups`` for the table)."""
    if isinstance(comp, Comparison):
        return _pair_console(comp, details=details, **options)
    return _table_console(comp, details=details, **options)


def _table_xlsx(comp: NWayComparison, path: str | Path) -> Path:
    """Sheet ``Compare``: one block per table (every cell through ``report.xlsx.put``); sheet
    ``Tests``: every pairwise test."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    from queryeval.report.xlsx import put, save, set_widths, write_header

    wb = Workbook()
    ws = wb.active
    ws.title = "Compare"
    put(ws, 1, 1, f"Compare {comp.task}")
    put(ws, 2, 1, _legend(comp))
    row = 3
    for line in [*comp.headline().splitlines(), *(f"warning: {w}" for w in comp.warnings)]:
        put(ws, row, 1, line)
        row += 1
    row += 1
    for table in comp.tables():
        put(ws, row, 1, _scope(table)).font = Font(bold=True)
        write_header(ws, row + 1, ["metric", "n", *(f"{letter(k)}: {lb}"
                                                    for k, lb in enumerate(comp.labels)),
                                   *(f"{letter(k)} marks" for k in range(len(comp.labels)))])
        row += 2
        for m in table.metrics:
            put(ws, row, 1, m)
            put(ws, row, 2, table.n[m])
            for k, (_, best, sig, worse) in enumerate(_cells(comp, table, m)):
                c = put(ws, row, 3 + k, table.means[m][k])
                c.number_format = "0.0000"
                if best:
                    c.font = Font(bold=True)
                put(ws, row, 3 + len(comp.labels) + k, sig + ("▼" if worse else ""))
            row += 1
        row += 1
    set_widths(ws, {1: 34, 2: 8, **{j: 16 for j in range(3, 3 + 2 * len(comp.labels))}})
    tests = wb.create_sheet("Tests")
    headers = ["group_key", "group", "metric", "run A", "run B", "n", "mean A", "mean B",
               "B - A", "CI low", "CI high", "p randomization", "p Holm (table)", "p t-test"]
    write_header(tests, 1, headers)
    r = 2
    for table in comp.tables():
        for t in table.tests:
            m = t.result
            for col, v in enumerate([table.key, table.member, m.metric, letter(t.i), letter(t.j),
                                     m.n, m.mean_a, m.mean_b, m.diff, m.ci_low, m.ci_high,
                                     m.p_randomization, t.p_adjusted, m.p_ttest], start=1):
                put(tests, r, col, v)
            r += 1
    set_widths(tests, {1: 12, 2: 24, 3: 28})
    return save(wb, path)


def _table_console(comp: NWayComparison, *, groups: bool = True,
                   details: bool = False) -> list:
    """The runs, the verdict against the baseline, the warnings, one table per scope; with
    ``details`` also each pair's flipped-case counts per metric."""
    from rich.table import Table as RichTable

    from queryeval.io.safetext import console_line as lit

    out: list = []
    runs = RichTable(title=lit(f"Compare {comp.task}: {len(comp.runs)} runs"), title_justify="left")
    for col in ("run", "label", "batch", "cases"):
        runs.add_column(col)
    for k, r in enumerate(comp.runs):
        runs.add_row(letter(k), lit(comp.labels[k]), lit(str(r["batch_id"])), str(r["cases"]))
    out.append(runs)
    out += [lit(line, "bold red" if ": worse on 0" not in line else "bold")
            for line in comp.headline().splitlines()]
    out += [lit(f"warning: {w}", "yellow") for w in comp.warnings]
    for table in comp.tables() if groups else [comp.overall]:
        t = RichTable(title=lit(_scope(table)), title_justify="left")
        t.add_column("metric")
        t.add_column("n", justify="right")
        for k in range(len(comp.labels)):
            t.add_column(letter(k), justify="right")
        for m in table.metrics:
            cells = []
            for text, best, sig, worse in _cells(comp, table, m):
                cell = lit(text + (f" {sig}" if sig else "") + (" ▼" if worse else ""),
                           "bold" if best else "")
                cells.append(cell)
            t.add_row(lit(m), str(table.n[m]), *cells)
        out.append(t)
    out.append(lit(_legend(comp)))
    if details:
        t = RichTable(title="flipped cases per pair", title_justify="left")
        for col in ("pair", "metric", "improved", "regressed"):
            t.add_column(col)
        for (i, j), res in comp.pair_results.items():
            for m in res:
                t.add_row(f"{letter(i)} → {letter(j)}", lit(m.metric), str(len(m.improved)),
                          str(len(m.regressed)))
        out.append(t)
    return out
