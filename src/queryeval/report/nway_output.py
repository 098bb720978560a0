"""The outputs of an N-way comparison: Markdown, LaTeX (booktabs), CSV, JSON, xlsx and the
console (HTML: :mod:`queryeval.report.html_compare`). Each leads with the verdict (per run
against the baseline: metrics significantly worse / better after Holm) and the warnings;
every figure is read from the :class:`~queryeval.report.compare_nway.NWayComparison`."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError
from queryeval.report.compare_nway import NWayComparison
from queryeval.report.markdown import md
from queryeval.report.nway_cells import _cells, _legend, _scope, letter
from queryeval.run.log import dumps


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


def write(comp: NWayComparison, path: str | Path, kind: str) -> Path:
    """Write the comparison as ``kind``: md, tex, csv, json, xlsx or html."""
    from queryeval.io.atomic import write_text_atomic

    if kind == "xlsx":
        return write_xlsx(comp, path)
    if kind == "html":
        from queryeval.report.html_compare import render_nway

        text = render_nway(comp)
    else:
        render = {"md": to_markdown, "tex": to_latex, "csv": to_csv,
                  "json": lambda c: dumps(c.to_dict(), indent=2) + "\n"}.get(kind)
        if render is None:
            raise ConfigError(f"unknown output kind {kind!r}")
        text = render(comp)
    write_text_atomic(path, text)
    return Path(path)


def write_xlsx(comp: NWayComparison, path: str | Path) -> Path:
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


def console_renderables(comp: NWayComparison, *, groups: bool = True,
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
