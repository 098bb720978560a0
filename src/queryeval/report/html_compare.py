"""The HTML output of ``queryeval compare``: a self-contained page with the verdict, the
warnings folded into one note (each in full on demand), the per-metric summary (means, the
difference B − A with its paired bootstrap CI, p-values), the forest plot of the differences
with their paired intervals, the per-case differences and the per-case scores of A against B
(:mod:`queryeval.report.html_charts`),
a chart of the means of A and B,
and the flipped cases grouped by case (one row per case, the metrics that moved each way) in
a filterable, sortable table. N runs: one forest plot of every run against the baseline, the
tables, each run's Δ against the baseline with its paired CI, the flipped cases of every pair grouped by case. Every figure is the compare
model's (:mod:`queryeval.report.compare`, :mod:`queryeval.report.compare`)."""

from __future__ import annotations

import json

from queryeval.report.compare import Comparison
from queryeval.report.compare_output import short_verdict
from queryeval.report.html_charts import compare_charts, figure_html, nway_charts
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
                    f"<td>{esc(info.get('batch_id'))}</td><td class=\"path\">{esc(_source(info))}</td>"
                    f"<td class=\"path\">{esc(json.dumps(info.get('task_options', {}), ensure_ascii=False))}</td>"
                    f"<td class=\"path\">{esc(info.get('path'))}</td></tr>")
    return ("<table><thead><tr><th>run</th><th>label</th><th>batch</th><th>system</th>"
            "<th>task options</th><th>batch file</th></tr></thead><tbody>"
            f"{''.join(rows)}</tbody></table>")


def _verdict(headline: str, worse: bool, warnings: list[str]) -> str:
    """The verdict first (red when a metric is significantly worse), then the warnings."""
    cls = "worse" if worse else "note"
    return f'<p class="{cls}"><b>{esc(headline)}</b></p>' + _warnings(warnings)


def _warnings(warnings: list[str]) -> str:
    """The warnings folded into one short note, each in full on demand (``<details>``)."""
    if not warnings:
        return ""
    metrics = sorted({w.split(": ", 1)[0] for w in warnings if ": " in w})
    about = f" (on {', '.join(metrics[:6])}{', …' if len(metrics) > 6 else ''})" if metrics else ""
    items = "".join(f'<li class="warning">{esc(w)}</li>' for w in warnings)
    return (f'<details class="warnings" id="warnings"><summary class="note">{len(warnings)} '
            f"warning(s){esc(about)}: read before concluding — click for details</summary>"
            f"<ul>{items}</ul></details>")


def flipped_by_case(results, pair: str | None = None) -> list[dict]:
    """The flipped cases of one pair grouped by case (the compare model's ``improved`` /
    ``regressed`` lists of each metric, as they are): one entry per case, in order of first
    appearance, with the metrics that moved each way and their (A, B) values."""
    cases: dict[str, dict] = {}
    for m in results:
        for kind, items in (("improved", m.improved), ("regressed", m.regressed)):
            for f in items:
                row = cases.setdefault(f.case_id, {"case_id": f.case_id, "name": f.name,
                                                   "pair": pair, "improved": [],
                                                   "regressed": []})
                row[kind].append((m.metric, f.a, f.b))
    return list(cases.values())


def _moved(items: list[tuple[str, float, float]]) -> str:
    return "<br>".join(f"{esc(metric)} {esc(fmt(a))} → {esc(fmt(b))}" for metric, a, b in items)


def _flip_rows(rows: list[dict]) -> tuple[list[str], dict[str, int]]:
    out, counts = [], {"improved": 0, "regressed": 0, "mixed": 0}
    for r in rows:
        kind = "mixed" if r["improved"] and r["regressed"] else \
            "improved" if r["improved"] else "regressed"
        counts[kind] += 1
        cls = {"improved": "better", "regressed": "worse"}.get(kind, "")
        pair = f"<td>{esc(r['pair'])}</td>" if r["pair"] is not None else ""
        out.append(f'<tr data-status="{kind}">{pair}<td>{esc(r["case_id"])}</td>'
                   f'<td>{esc(r["name"])}</td><td class="{cls}">{kind}</td>'
                   f'<td class="better">{_moved(r["improved"])}</td>'
                   f'<td class="worse">{_moved(r["regressed"])}</td></tr>')
    return out, counts


def _flip_table(rows: list[dict], paired: bool) -> str:
    body, counts = _flip_rows(rows)
    options = "".join(f'<option value="{k}">{k} ({n})</option>' for k, n in counts.items())
    pair = "<th>pair</th>" if paired else ""
    return (
        '<p class="note">one row per case that changed: the metrics that moved each way, '
        'with the value in the first run → the second</p>'
        '<div class="filters"><input type="search" id="filter-text" placeholder="filter cases…" '
        'aria-label="filter cases"><select id="filter-status" aria-label="change">'
        f'<option value="">all ({len(body)})</option>{options}</select>'
        '<span id="filter-count" class="note"></span></div><table id="cases"><thead><tr>'
        f"{pair}<th>case</th><th>name</th><th>change</th><th>improved</th><th>regressed</th>"
        f"</tr></thead><tbody>{''.join(body)}</tbody></table>")


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
    flip_table = _flip_table(flipped_by_case(comp.metrics), paired=False)
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
            f"<h2>Differences</h2>{figure_html(compare_charts(comp, scatter=True))}"
            f"<h2>Metrics</h2>{summary}<div class=\"charts\">{chart}</div>"
            f"<h2>Flipped cases</h2>{flip_table}")
    return page(f"queryeval compare · {comp.task}", body)


# --- N runs -----------------------------------------------------------------------------------
def nway_tables(comp, *, groups: bool = True) -> str:
    """The N-way tables as HTML (every text escaped): runs, then one table per scope."""
    from queryeval.report.compare import letter
    from queryeval.report.compare_output import _cells, _legend, _scope

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


def _deltas(comp) -> str:
    """Each run against the baseline (a): Δ = mean(run − a) over the paired cases with its
    paired interval, the Holm p and the verdict, as the compare model holds them
    (``pair_results``; significance read from ``verdicts``), never recomputed."""
    from queryeval.report.compare import letter

    verdicts = {(v["run_b"], v["metric"]): v for v in comp.verdicts() if v["run_a"] == 0}
    rows = []
    for (i, j), results in comp.pair_results.items():
        if i != 0:
            continue
        for m in results:
            v = verdicts.get((j, m.metric))
            word = v["verdict"] if v else "not tested"
            cls = {"worse": "worse", "better": "better"}.get(word, "")
            ci = f"[{fmt(m.ci_low)}, {fmt(m.ci_high)}]"
            rows.append(f"<tr><td>{letter(j)} − a</td><td>{esc(m.metric)}</td>{num_cell(m.n)}"
                        f'{num_cell(m.diff)}<td class="num">{esc(ci)}</td>'
                        f"{num_cell(v['p_adjusted'] if v else None)}"
                        f'<td class="{cls}">{esc(word)}</td></tr>')
    if not rows:
        return ""
    return (f"<h2>Δ against the baseline</h2><table class=\"deltas\"><thead><tr><th>pair</th>"
            f"<th>metric</th><th class=\"num\">n</th><th class=\"num\">Δ</th><th class=\"num\">"
            f"{comp.confidence:.0%} paired CI of Δ</th><th class=\"num\">p Holm</th>"
            f"<th>verdict</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def render_nway(comp) -> str:
    """A self-contained page: the N-way tables and every pair's flipped cases."""
    from queryeval.report.compare import letter

    rows = [r for (i, j), results in comp.pair_results.items()
            for r in flipped_by_case(results, f"{letter(i)} → {letter(j)}")]
    flip_table = _flip_table(rows, paired=True)
    verdict = "".join(_verdict(line, ": worse on 0" not in line, [])
                      for line in comp.headline().splitlines())
    verdict += _warnings(comp.warnings)
    charts = nway_charts(comp)
    body = (f"<h1>Comparison of {len(comp.runs)} runs · {esc(comp.task)}</h1>{verdict}"
            f"{'<h2>Every run against the baseline</h2>' if charts else ''}{figure_html(charts)}"
            f"{nway_tables(comp)}{_deltas(comp)}<h2>Flipped cases</h2>{flip_table}")
    return page(f"queryeval compare · {comp.task}", body)
