"""The HTML output of ``queryeval compare``: a self-contained page with the per-metric
summary (means, difference with its bootstrap CI, p-values), a chart of the means of A and B,
and the flipped cases of each metric in a filterable, sortable table."""

from __future__ import annotations

import json
from pathlib import Path

from queryeval.report.compare import Comparison
from queryeval.report.compare_output import short_verdict
from queryeval.report.html_page import esc, fmt, num_cell, page
from queryeval.report.html_svg import bar_chart


def _source(info: dict) -> str:
    """What answered: the system spec, the recorded responses, or the task's built-in system
    (its label)."""
    if info.get("system"):
        return str(info["system"])
    if info.get("responses"):
        return f"recorded: {info['responses']}"
    return f"built-in: {info.get('label')}"


def _run_rows(comp: Comparison) -> str:
    rows = []
    for letter, info in (("A", comp.run_a), ("B", comp.run_b)):
        rows.append(f"<tr><th>{letter}</th><td>{esc(info.get('label'))}</td>"
                    f"<td>{esc(info.get('batch_id'))}</td><td>{esc(_source(info))}</td>"
                    f"<td>{esc(json.dumps(info.get('task_options', {}), ensure_ascii=False))}</td>"
                    f"<td>{esc(info.get('path'))}</td></tr>")
    return ("<table><thead><tr><th>run</th><th>label</th><th>batch</th><th>system</th>"
            "<th>task options</th><th>batch file</th></tr></thead><tbody>"
            f"{''.join(rows)}</tbody></table>")


def _verdict(headline: str, worse: bool, warnings: list[str]) -> str:
    """The verdict first (red when a metric is significantly worse), then the warnings."""
    cls = "worse" if worse else "note"
    return (f'<p class="{cls}"><b>{esc(headline)}</b></p>'
            + "".join(f'<p class="warning">warning: {esc(w)}</p>' for w in warnings))


def render_comparison(comp: Comparison) -> str:
    """The HTML text of a comparison."""
    regress = {m.metric for m in comp.regressions()}
    rows = []
    for m in comp.metrics:
        cls = {"worse": "worse", "better": "better"}.get(m.verdict, "")
        ci = f"[{fmt(m.ci_low)}, {fmt(m.ci_high)}]"
        rows.append(f'<tr><td class="{cls}">{esc(m.metric)}</td>{num_cell(m.n)}{num_cell(m.mean_a)}'
                    f"{num_cell(m.mean_b)}{num_cell(m.diff)}<td class=\"num\">{esc(ci)}</td>"
                    f"{num_cell(m.p_randomization)}{num_cell(m.p_ttest)}{num_cell(m.p_holm)}"
                    f"{num_cell(len(m.improved))}{num_cell(len(m.regressed))}"
                    f'<td class="{cls}">{esc(short_verdict(m))}</td></tr>')
    summary = ("<table><thead><tr><th>metric</th><th>n</th><th>mean A</th><th>mean B</th>"
               f"<th>B − A</th><th>{comp.confidence:.0%} CI of B − A</th><th>p randomization</th>"
               "<th>p t-test</th><th>p Holm</th><th>improved</th><th>regressed</th>"
               "<th>verdict</th></tr></thead>"
               f"<tbody>{''.join(rows)}</tbody></table>")
    rate = [m for m in comp.metrics if m.mean_a is not None and 0 <= m.mean_a <= 1
            and m.mean_b is not None and 0 <= m.mean_b <= 1]
    chart = bar_chart([(m.metric, [m.mean_a, m.mean_b]) for m in rate], ["A", "B"],
                      title="Means of A and B") if rate else ""
    flips = []
    for m in comp.metrics:
        for kind, items in (("improved", m.improved), ("regressed", m.regressed)):
            for f in items:
                cls = "better" if kind == "improved" else "worse"
                flips.append(f'<tr data-status="{kind}"><td>{esc(m.metric)}</td>'
                             f'<td class="{cls}">{kind}</td><td>{esc(f.case_id)}</td>'
                             f"<td>{esc(f.name)}</td>{num_cell(f.a)}{num_cell(f.b)}{num_cell(f.delta)}</tr>")
    n_imp = sum(len(m.improved) for m in comp.metrics)
    n_reg = sum(len(m.regressed) for m in comp.metrics)
    flip_table = (
        '<div class="filters"><input type="search" id="filter-text" placeholder="filter cases…" '
        'aria-label="filter cases"><select id="filter-status" aria-label="change">'
        f'<option value="">all ({len(flips)})</option><option value="improved">improved ({n_imp})'
        f'</option><option value="regressed">regressed ({n_reg})</option></select>'
        '<span id="filter-count" class="note"></span></div><table id="cases"><thead><tr>'
        "<th>metric</th><th>change</th><th>case</th><th>name</th><th class=\"num\">A</th>"
        "<th class=\"num\">B</th><th class=\"num\">B − A</th></tr></thead>"
        f"<tbody>{''.join(flips)}</tbody></table>"
    )
    verdict = _verdict(comp.headline(), bool(regress), comp.warnings)
    unpaired = (f"<p class=\"note\">{comp.paired} paired cases; only in A: {len(comp.only_a)}; "
                f"only in B: {len(comp.only_b)}; excluded (failed calls, on_error=skip): "
                f"{len(comp.excluded)}. p-values: paired sign-flip randomization test "
                f"(exact up to 20 pairs, else {comp.resamples} seeded resamples), paired t-test; "
                f"Holm-adjusted across {sum(m.tested for m in comp.metrics)} tested metrics (counts "
                f"are not tested; a metric equal case by case to an earlier one shares its "
                f"test); alpha {comp.alpha:g}. A confidence interval is not adjusted for "
                f"testing several metrics: it may exclude 0 where the Holm p is above alpha.</p>")
    lists = "".join(
        f"<details><summary>cases only in {label} ({len(ids)})</summary><pre>{esc(chr(10).join(ids))}"
        "</pre></details>" for label, ids in (("A", comp.only_a), ("B", comp.only_b)) if ids)
    body = (f"<h1>Comparison · {esc(comp.task)}</h1>{_run_rows(comp)}{verdict}{unpaired}{lists}"
            f"<h2>Metrics</h2>{summary}<div class=\"charts\">{chart}</div>"
            f"<h2>Flipped cases</h2>{flip_table}")
    return page(f"queryeval compare · {comp.task}", body)


def write_comparison_html(comp: Comparison, path: str | Path) -> Path:
    from queryeval.io.atomic import write_text_atomic

    write_text_atomic(path, render_comparison(comp))
    return Path(path)


# --- N runs -----------------------------------------------------------------------------------
def nway_tables(comp, *, groups: bool = True) -> str:
    """The N-way tables as HTML (every text escaped): runs, then one table per scope."""
    from queryeval.report.nway_cells import _cells, _legend, _scope, letter

    runs = "".join(
        f"<tr><th>{letter(k)}</th><td>{esc(comp.labels[k])}</td><td>{esc(r.get('batch_id'))}</td>"
        f"<td>{esc(r.get('status'))}</td>{num_cell(r.get('cases'))}</tr>"
        for k, r in enumerate(comp.runs))
    out = [f"<table class=\"runs\"><thead><tr><th>run</th><th>label</th><th>batch</th>"
           f"<th>status</th><th>cases</th></tr></thead><tbody>{runs}</tbody></table>",
           f"<p class=\"note\">{esc(_legend(comp))}</p>"]
    heads = "".join(f"<th class=\"num\">{letter(k)}: {esc(lb)}</th>"
                    for k, lb in enumerate(comp.labels))
    for table in comp.tables() if groups else [comp.overall]:
        rows = []
        for m in table.metrics:
            cells = []
            for text, best, sig, worse in _cells(comp, table, m):
                val = f"<b>{esc(text)}</b>" if best else esc(text)
                mark = (f"<sup>{esc(sig)}</sup>" if sig else "") + \
                    ('<span class="worse"> ▼</span>' if worse else "")
                cells.append(f'<td class="num{" best" if best else ""}">{val}{mark}</td>')
            rows.append(f"<tr><td>{esc(m)}</td>{num_cell(table.n[m])}{''.join(cells)}</tr>")
        out.append(f"<h3>{esc(_scope(table))}</h3><table class=\"nway\"><thead><tr><th>metric</th>"
                   f"<th class=\"num\">n</th>{heads}</tr></thead><tbody>{''.join(rows)}</tbody>"
                   "</table>")
    return "".join(out)


def render_nway(comp) -> str:
    """A self-contained page: the N-way tables and every pair's flipped cases."""
    from queryeval.report.nway_cells import letter

    flips = []
    for (i, j), results in comp.pair_results.items():
        for m in results:
            for kind, items in (("improved", m.improved), ("regressed", m.regressed)):
                cls = "better" if kind == "improved" else "worse"
                for f in items:
                    flips.append(f'<tr data-status="{kind}"><td>{letter(i)} → {letter(j)}</td>'
                                 f'<td>{esc(m.metric)}</td><td class="{cls}">{kind}</td>'
                                 f"<td>{esc(f.case_id)}</td><td>{esc(f.name)}</td>"
                                 f"{num_cell(f.a)}{num_cell(f.b)}{num_cell(f.delta)}</tr>")
    n_imp = sum(1 for r in flips if 'data-status="improved"' in r)
    flip_table = (
        '<div class="filters"><input type="search" id="filter-text" placeholder="filter cases…" '
        'aria-label="filter cases"><select id="filter-status" aria-label="change">'
        f'<option value="">all ({len(flips)})</option><option value="improved">improved ({n_imp})'
        f'</option><option value="regressed">regressed ({len(flips) - n_imp})</option></select>'
        '<span id="filter-count" class="note"></span></div><table id="cases"><thead><tr>'
        "<th>pair</th><th>metric</th><th>change</th><th>case</th><th>name</th>"
        '<th class="num">first</th><th class="num">second</th><th class="num">Δ</th></tr></thead>'
        f"<tbody>{''.join(flips)}</tbody></table>")
    verdict = "".join(_verdict(line, ": worse on 0" not in line, [])
                      for line in comp.headline().splitlines())
    verdict += "".join(f'<p class="warning">warning: {esc(w)}</p>' for w in comp.warnings)
    body = (f"<h1>Comparison of {len(comp.runs)} runs · {esc(comp.task)}</h1>{verdict}"
            f"{nway_tables(comp)}<h2>Flipped cases</h2>{flip_table}")
    return page(f"queryeval compare · {comp.task}", body)
