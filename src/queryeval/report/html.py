"""``queryeval report RUN``: one self-contained HTML page per run (``report_<id>.html``).

Sections: an error banner when calls failed (``metrics["error_summary"]``); the run's
metadata; overall figures with 95% bootstrap confidence intervals of the per-case means (or
of the ratios a task names in ``ci_sources``); figures at several cut-offs (recall@1/5/10)
as a table and curves; per-group bars for whatever ``group_metrics`` holds (tag, dimension,
dataset, concept, field, …; every series, each member's n) and a spider chart for groups of
5+ members when it can show every series; a per-case table with filtering and sorting
(folded for large runs); the details of every case that did not pass, linked from the
table (rendered per task, see :mod:`queryeval.report.html_details`). Works for any task
kind from its records and metrics; inline CSS/JS/SVG only, no network.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queryeval.metrics import stats
from queryeval.report.case_rows import case_rows
from queryeval.report.html_charts import at_k, by_k_chart, case_charts, figure_html, overall_chart
from queryeval.report.html_details import render_details
from queryeval.report.html_figures import (
    _AT_K,
    _is_rate,
    _prefer,
    count_columns,
    figure_interval,
    figure_kinds,
    flatten,
    overall_figures,
    overall_timings,
    own_names,
    rate_keys,
)
from queryeval.report.html_page import esc, fmt, num_cell, page, table
from queryeval.report.html_svg import bar_chart, radar_chart
from queryeval.run.results import RunResults, lower_is_better
from queryeval.tasks.content import Figures

MAX_BARS = 60
MAX_SERIES = 4
RADAR_MIN_AXES = 5
RADAR_MAX_AXES = 40
OPEN_CASES = 40
"""Up to this many cases the cases table is open; above, it is folded (``<details>``)."""
OPEN_DETAILS = 12
"""Up to this many cases that did not pass, their details are open; above, each is folded."""
NAME_CHARS = 90
"""Longer case names (often the question itself) are cut with an ellipsis in the table."""
SIZE_KEYS = ("cases", "questions", "sample_size", "count", "size")
"""Figures that give a group's size (n), first found wins; else in_target + not_in_target."""


# --- sections ---------------------------------------------------------------------------------
def _system_label(run: RunResults, cfg: dict) -> str:
    """The system under test: ``--system``, the recorded responses, or the task's built-in
    system (e.g. ``bm25``, ``dense: all-MiniLM-L6-v2``)."""
    if cfg.get("system"):
        return str(cfg["system"])
    if cfg.get("responses"):
        return f"recorded: {cfg['responses']}"
    hook = getattr(run.task, "system_label", None)
    label = hook() if callable(hook) else None
    return f"built-in: {label}" if label else "built-in"


def error_banner(metrics: dict) -> str:
    """The run's failed calls by kind (``metrics["error_summary"]``), at the top of the page:
    ``12 × connection: ConnectError: … (case abc)``."""
    items = metrics.get("error_summary") if isinstance(metrics, dict) else None
    if not isinstance(items, list) or not items:
        return ""
    lines = []
    for item in items:
        if not isinstance(item, dict):
            continue
        count = item.get("count")
        message = str(item.get("first_message") or "")
        if len(message) > 300:
            message = message[:299] + "…"
        case = item.get("case")
        lines.append(f"<li><b>{esc(count)} ×</b> {esc(item.get('kind'))}: {esc(message)}"
                     + (f" <span class=\"note\">(case {esc(case)})</span>" if case else "")
                     + "</li>")
    if not lines:
        return ""
    return ('<div class="banner" role="alert"><b>Some calls failed.</b> By kind, with the first '
            f"message and its case:<ul>{''.join(lines)}</ul></div>")


def _meta(run: RunResults) -> str:
    b = run.batch
    cfg = b.get("evaluation_config", {})
    suite = b.get("suite_info", {})
    from queryeval.report.html_figures import batch_to_compare

    which = batch_to_compare(run.batch_id, b.get("derived_batches"), b.get("derived_from"))
    rows = [("run", run.label), ("task", b.get("task")), ("batch", run.batch_id),
            *([("to compare", which)] if which else []),
            ("status", b.get("status")),
            ("started", b.get("timestamp")), ("completed", b.get("completed_at")),
            ("suite", f"{suite.get('path', cfg.get('suite'))} ({suite.get('hash', '')[:19]}…)"),
            ("system", _system_label(run, cfg)),
            ("task options", json.dumps(cfg.get("task_options", {}), ensure_ascii=False)),
            ("software", json.dumps(b.get("software_info", {}), ensure_ascii=False))]
    if b.get("rescored_from"):
        src = b["rescored_from"]
        rows.append(("rescored from", f"{src.get('batch_id')} with "
                     f"{json.dumps(src.get('changed_options', {}), ensure_ascii=False)}"))
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="meta"><tbody>{body}</tbody></table>'


def _intervals(run: RunResults, per_case: dict[str, list[float]], counted: list[dict[str, float]],
               *, resamples: int, seed: int, clusters: Sequence[str | None] = ()
               ) -> dict[str, stats.MeanCI]:
    """Bootstrap CIs of the per-case means, plus those a task maps to its overall figures:
    ``ci_sources = {"psaq": "proportion_correct", "uasq": ("correct", "total")}`` (a mean of a
    per-case metric under another name, or a ratio of two per-case sums). ``clusters``: each
    counted case's cluster; when some cases share one, whole clusters are resampled
    (:func:`~queryeval.metrics.stats.cluster_bootstrap_ci`; docs/compare.md)."""
    def index(metric_keys: tuple[str, ...]):
        if not any(clusters):
            return None
        return stats.cluster_index([c for v, c in zip(counted, clusters, strict=True)
                                    if all(k in v for k in metric_keys)])

    cis = {k: stats.cluster_bootstrap_ci(v, index((k,)), resamples=resamples, seed=seed)
           for k, v in per_case.items()}
    sources = getattr(run.task, "ci_sources", None) or {}
    for key, src in sources.items():
        if isinstance(src, str) and src in per_case:
            cis[key] = cis[src]
        elif isinstance(src, tuple) and len(src) == 2:
            pairs = [(v[src[0]], v[src[1]]) for v in counted if src[0] in v and src[1] in v]
            if pairs:
                cis[key] = stats.cluster_ratio_ci([a for a, _ in pairs], [b for _, b in pairs],
                                                  index(src), resamples=resamples, seed=seed)
    return cis


def overall_rows(run: RunResults, metrics: dict, cis: dict[str, stats.MeanCI]
                 ) -> list[tuple[str, Any, stats.MeanCI | None]]:
    """The Overall table: (figure, value, its case-bootstrap CI or None) for each overall
    metric (settings, timings and older names left out, as the task declares them); a CI is
    given only where it is the CI of that very figure (its mean equals the value). The
    viewer reads this too."""
    figures, _ = overall_figures(metrics.get("overall_metrics", {}), figure_kinds(run.task))
    out = []
    for key, value in figures.items():
        ci = cis.get(key)
        agrees = (ci is not None and ci.mean is not None and isinstance(value, (int, float))
                  and abs(ci.mean - value) <= 1e-9)
        agrees = agrees and ci.low is not None
        out.append((key, value, ci if agrees else None))
    return out


def _cases_cell(ci: stats.MeanCI | None) -> str:
    """The cases an interval rests on: ``200``, or with clusters ``200 in 20 clusters
    (design effect 10.47, effective n 19.1)``."""
    if ci is None:
        return ""
    if ci.clusters is None:
        return str(ci.n)
    extra = (f" (design effect {ci.design_effect:.2f}, effective n {ci.effective_n:.1f})"
             if ci.design_effect is not None and ci.effective_n is not None else "")
    return f"{ci.n} in {ci.clusters} clusters{extra}"


def no_interval(key: str, value: Any, cis: dict[str, stats.MeanCI], kinds: Figures) -> str | None:
    """Why a figure of the Overall table has no interval, in words (None when it has one or
    is not a number): a count; a figure that is not the mean of a per-case figure (a ratio
    or a figure of the whole run, e.g. mrr@1 of a multi-k retrieval run, whose per-case
    values are in the k=1 derived batch); a per-case figure whose mean is not this value;
    too few cases. The HTML report and the viewer say the same."""
    from queryeval.tasks.content import bare_name

    ci = cis.get(bare_name(key))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if kinds.kind(key) == "count" or isinstance(value, int):
        return "a count"
    if ci is not None and ci.mean is not None and abs(ci.mean - value) <= 1e-9:
        return None if ci.low is not None else "too few cases for an interval"
    if ci is not None:
        return "not the mean of the per-case values"
    m = _AT_K.match(key)
    if m and kinds.headline:
        return f"no per-case values at k={m['k']} in this batch (see its k={m['k']} batch)"
    return "no per-case values: a figure of the whole run"


def _overall(run: RunResults, metrics: dict, cis: dict[str, stats.MeanCI], *,
             resamples: int, seed: int) -> str:
    kinds = figure_kinds(run.task)
    timings = overall_timings(metrics.get("overall_metrics", {}), kinds)
    rows, shown = [], overall_rows(run, metrics, cis)
    for key, value, ci in shown:
        interval = (esc(f"[{ci.low:.4f}, {ci.high:.4f}]") if ci is not None else
                    f'— <span class="why">{esc(why)}</span>'
                    if (why := no_interval(key, value, cis, kinds)) else "—")
        rows.append([f"<td>{esc(key)}</td>", num_cell(value) if not isinstance(value, str)
                     else f"<td>{esc(value)}</td>", f'<td class="num ci">{interval}</td>',
                     f'<td class="num">{esc(_cases_cell(ci))}</td>'])
    out = [table(["metric", "value", "95% CI of the case mean", "cases"], rows)]
    if timings:
        out.append(table(["timing", "value"], [[f"<td>{esc(k)}</td>", num_cell(v)]
                                               for k, v in timings.items()],
                         attrs=' id="timings"'))
    out.append('<p class="note">Intervals: percentile bootstrap over cases '
               f"({resamples} resamples, seed {seed}); shown for figures that are means over "
               "cases, or ratios of per-case sums (resampled as such).</p>")
    out.append(overall_chart(run.task, [(key, value, (ci.low, ci.high) if ci is not None else None)
                                        for key, value, ci in shown]))
    return "".join(out)


def by_k(metrics: dict) -> str:
    """Figures asked for at several cut-offs (``recall@1``, ``recall@5``, …): a table metric ×
    k and their curves over k. Empty when no figure has two or more k."""
    at = at_k(metrics.get("overall_metrics") or {})
    if not at:
        return ""
    ks = sorted({k for per in at.values() for k in per})
    rows = [[f"<td>{esc(name)}</td>", *(num_cell(per.get(k)) for k in ks)] for name, per in at.items()]
    return (f"<h2>By k</h2>{table(['metric', *(f'@{k}' for k in ks)], rows)}"
            f'<div class="charts">{by_k_chart(at)}</div>')


def group_size(figures: dict) -> int | None:
    """A group's size (n) from its figures: cases, questions, sample_size, …; for term
    selection's dimension/dataset groups, how often they occur in targets and outputs."""
    for key in SIZE_KEYS:
        v = figures.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    if isinstance(figures.get("in_target"), int):
        return figures["in_target"] + (figures.get("not_in_target") or 0)
    return None


def _groups(metrics: dict, kinds: Figures | None = None) -> str:
    """Per group kind: bar charts of its [0, 1] figures (every series, at most
    :data:`MAX_SERIES` a chart; each bar labelled with the member's n), a radar chart only
    when there are enough members for one (:data:`RADAR_MIN_AXES`) and every charted figure
    is defined for every member (a radar never leaves a series out), and the full table."""
    groups = metrics.get("group_metrics") or {}
    out = []
    for kind, members in groups.items():
        if not isinstance(members, dict) or not members:
            continue
        flat: dict[str, dict[str, Any]] = {}
        sizes: dict[str, int | None] = {}
        run_k = {"k": (metrics.get("overall_metrics") or {}).get("k")}
        for name, figures in members.items():
            flat[str(name)] = own_names(flatten(figures), kinds or Figures(), run_k, counts=False)
            sizes[str(name)] = group_size(figures) if isinstance(figures, dict) else None
        flat = count_columns(flat, kinds or Figures())
        keys = _prefer(rate_keys(flat, kinds))
        out.append(f"<h3>by {esc(kind)} ({len(flat)})</h3>")
        charts = []
        names = list(flat)[:MAX_BARS]
        labels = [f"{n} (n={sizes[n]})" if sizes[n] is not None else n for n in names]
        for i in range(0, len(keys), MAX_SERIES):
            series = keys[i:i + MAX_SERIES]
            charts.append(bar_chart([(lab, [flat[n].get(k) for k in series])
                                     for n, lab in zip(names, labels, strict=True)], series,
                                    title=f"by {kind}" + (f" ({i // MAX_SERIES + 1})"
                                                          if len(keys) > MAX_SERIES else ""),
                                    legend=True))
        if keys and len(names) < len(flat):
            charts.append(f'<p class="note">first {MAX_BARS} of {len(flat)} shown; the '
                          "table lists all</p>")
        radar = keys[:MAX_SERIES]
        if (radar and RADAR_MIN_AXES <= len(flat) <= RADAR_MAX_AXES
                and all(_is_rate(f.get(k)) for f in flat.values() for k in radar)):
            axes = [f"{n} (n={sizes[n]})" if sizes[n] is not None else n for n in flat]
            charts.append(radar_chart(axes, {k: [flat[n][k] for n in flat] for k in radar},
                                      title=f"{', '.join(radar)} by {kind}"))
        out.append(f'<div class="charts">{"".join(charts)}</div>')
        cols: list[str] = []
        for figures in flat.values():
            cols += [k for k in figures if k not in cols]
        rows = [[f"<td>{esc(n)}</td>", *(num_cell(f.get(k)) if not isinstance(f.get(k), str)
                                         else f"<td>{esc(f.get(k))}</td>" for k in cols)]
                for n, f in flat.items()]
        out.append(f"<details><summary>table by {esc(kind)}</summary>{table([kind, *cols], rows)}</details>")
    return "".join(out) or '<p class="note">no group figures in this run</p>'


def _count_columns(records: list[dict], cols: list[str]) -> set[str]:
    """Per-case columns that are counts: an integer in every record's ``scores`` that has
    the key (JSON keeps 3 and 3.0 apart), shown as 3, not 3.0000."""
    out = set()
    for k in cols:
        seen = [(r.get("scores") or {}).get(k) for r in records
                if isinstance(r.get("scores"), dict) and k in r["scores"]]
        if seen and all(isinstance(v, int) and not isinstance(v, bool) for v in seen):
            out.add(k)
    return out


def _unit(run: RunResults, n: int) -> str:
    """``23 cases``, or with repeats ``69 attempts (23 cases × 3)``: a record is an attempt."""
    if run.repeats <= 1:
        return f"{n} cases"
    return f"{n} attempts ({len(run.cases)} cases × {run.repeats})"


SEVERITY = {"error": 0, "fail": 1, "flaky": 2, "pass": 3}
"""The cases table's order: failures first (a failed call, then a miss), passes last."""
CASE_COLUMNS = 8
"""At most this many per-case figures in the cases table (the task's headline first), so
the table fits a 1280 px page; every figure is in ``results_<id>.csv``."""
ID_CHARS = 12
"""A longer case id is shortened in the table (its first 8 characters and …), the full id
on hover."""
CASE_NAME_CHARS = 70
"""A case's name (often the question itself) is cut to this in the table's first column."""


def distance(values: dict[str, float], lower: set[str] | frozenset = frozenset()) -> float:
    """How far a case is from the gold, from its per-case figures: 1 minus the mean of its
    rates on [0, 1] (a better-lower figure counted as 1 - value); 1.0 with none."""
    rates = [(1.0 - x if k in lower else x) for k, x in values.items()
             if isinstance(x, (int, float)) and not isinstance(x, bool) and 0.0 <= x <= 1.0]
    return 1.0 - sum(rates) / len(rates) if rates else 1.0


def case_order(values: list[dict[str, float]], verdicts: list[str],
               lower: set[str] | frozenset = frozenset()) -> list[int]:
    """The cases table's order: by severity (:data:`SEVERITY`: errors, fails, passes), then
    the farthest from the gold first (:func:`distance`), then the suite's order."""
    return sorted(range(len(verdicts)), key=lambda i: (
        SEVERITY.get(verdicts[i], 1), -distance(values[i], lower), i))


def _lower(run: RunResults, values: list[dict[str, float]]) -> set[str]:
    """The per-case figures better lower (the task's direction)."""
    return {c for v in values for c in v if lower_is_better(run.task, c.rsplit(".", 1)[-1])}


def _short_id(case_id: object) -> str:
    text = "" if case_id is None else str(case_id)
    if len(text) <= ID_CHARS:
        return esc(text)
    return f'<span title="{esc(text)}">{esc(text[:8])}…</span>'


def _case_columns(cols: list[str], kinds: Figures, k: Any) -> tuple[list[str], list[str]]:
    """(the per-case figures the table shows: the task's headline first, at most
    :data:`CASE_COLUMNS`; those left to the results CSV)."""
    lead = [h.format(k=k) for h in kinds.headline if "{k}" not in h or k is not None]
    ordered = [c for c in lead if c in cols] + [c for c in cols if c not in lead]
    return ordered[:CASE_COLUMNS], ordered[CASE_COLUMNS:]


def _cases(run: RunResults, values: list[dict[str, float]], verdicts: list[str]) -> str:
    cols: list[str] = []
    for v in values:
        cols += [k for k in v if k not in cols]
    counts_cols = _count_columns(run.records, cols)
    kinds = figure_kinds(run.task)
    shown, left = _case_columns(cols, kinds, (run.metrics or {}).get("overall_metrics", {}).get("k")
                                if isinstance(run.metrics, dict) else None)
    lower = _lower(run, values)
    rows = []
    for i in case_order(values, verdicts, lower):
        rec, v, verd = run.records[i], values[i], verdicts[i]
        cid = rec.get("case_id")
        name = rec.get("name")
        label = _cut(name, CASE_NAME_CHARS) if name else None
        text = esc(label) if label else _short_id(cid)
        if label and label != str(name):
            text = f'<span title="{esc(name)}">{text}</span>'
        rep = f' <span class="note">#{esc(rec["repeat"])}</span>' if "repeat" in rec else ""
        link = f'<a href="#case-{i}">{text}</a>{rep}' if verd != "pass" else f"{text}{rep}"
        tags = "".join(f'<span class="tag">{esc(t)}</span>' for t in rec.get("tags") or [])
        cells = "".join(num_cell(int(v[k]) if k in counts_cols and k in v else v.get(k))
                        for k in shown)
        rows.append(f'<tr data-status="{esc(verd)}" data-case="{esc(cid)}"><td class="case">'
                    f'{link}</td><td class="{esc(verd)}">{esc(verd)}</td>{cells}'
                    f'<td class="id">{_short_id(cid)}</td><td>{tags}</td>'
                    f'<td>{esc(", ".join(rec.get("error_kinds") or []))}</td></tr>')
    heads = "".join(f"<th>{esc(h)}</th>" for h in ("case", "status"))
    heads += "".join(f'<th class="num">{esc(k)}</th>' for k in shown)
    heads += "".join(f"<th>{esc(h)}</th>" for h in ("id", "tags", "errors"))
    more = (f'<p class="note">{len(left)} more per-case figure(s) in results_&lt;id&gt;.csv: '
            f'{esc(", ".join(left))}</p>' if left else "")
    counts = {s: verdicts.count(s) for s in ("pass", "fail", "error")}
    options = "".join(f'<option value="{s}">{s} ({n})</option>' for s, n in counts.items())
    folded = "" if len(verdicts) <= OPEN_CASES else " (folded: click to open)"
    return (
        f'<details class="fold" id="cases-box"{" open" if not folded else ""}><summary>'
        f"{_unit(run, len(verdicts))}: " + ", ".join(f"{n} {s}" for s, n in counts.items())
        + f"{folded}</summary>"
        '<div class="filters"><input type="search" id="filter-text" placeholder="filter cases…" '
        'aria-label="filter cases"><select id="filter-status" aria-label="status">'
        f'<option value="">all ({len(verdicts)})</option>{options}</select>'
        '<span id="filter-count" class="note"></span></div>'
        '<p class="note">failures first: errors, then fails, then passes; within each, the '
        'farthest from the gold first (the lowest mean of the per-case rates); click a '
        'heading to sort</p>'
        f'<div class="scroll"><table id="cases"><thead><tr>{heads}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div>{more}</details>'
    )


def _details(run: RunResults, verdicts: list[str]) -> str:
    """One section per case that did not pass; above :data:`OPEN_DETAILS` of them the list
    and each case are folded (``<details>``, opened by the page script when a link to the
    case is followed), so a large run's page stays short."""
    shown = sum(v != "pass" for v in verdicts)
    fold = shown > OPEN_DETAILS
    out = []
    for i, (rec, verd) in enumerate(zip(run.records, verdicts, strict=True)):
        if verd == "pass":
            continue
        head = (f'<span class="{esc(verd)}">[{esc(verd)}]</span> {esc(_cut(rec.get("name")))} '
                f'<code>{esc(rec.get("case_id"))}</code>'
                + (f' attempt {esc(rec["repeat"])}' if "repeat" in rec else ""))
        body = render_details(run.task_name, run.task, rec)
        if fold:
            out.append(f'<details class="case" id="case-{i}"><summary>{head}</summary>'
                       f'{body}<a class="back" href="#cases">back to table</a></details>')
        else:
            out.append(f'<section class="case" id="case-{i}"><h3>{head}<a class="back" '
                       f'href="#cases">back to table</a></h3>{body}</section>')
    if not out:
        return '<p class="note">every case passed</p>'
    if not fold:
        return "".join(out)
    what = _unit(run, shown).split(" (")[0]
    return (f'<details class="fold" id="details-box"><summary>{what} (folded: click to '
            f"open the list, then a case; a link from the table opens its case)</summary>"
            f'{"".join(out)}</details>')


def _cut(text: object, limit: int = NAME_CHARS) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


FLAKY_ROWS = 20
"""Flaky cases listed in the HTML report (all are in ``repeats_<id>.csv``)."""


def repeats_section(rep: dict | None) -> str:
    """A run with ``--repeats``: pass rate, pass@k and pass^k (means over cases, bootstrap
    intervals over cases) and the flaky cases with each attempt's outcome."""
    if not isinstance(rep, dict):
        return ""
    overall = rep.get("overall") or {}
    keys = ["pass_rate"] + [f"pass{sep}{k}" for k in rep.get("pass_k", []) for sep in ("@", "^")]
    rows = []
    for key in keys:
        fig = overall.get(key) or {}
        rows.append([f"<td>{esc(key)}</td>", num_cell(fig.get("mean")), num_cell(fig.get("ci_low")),
                     num_cell(fig.get("ci_high"))])
    pct = f"{float(rep.get('confidence', 0.95)):.0%}"
    out = (f'<h2>Repeats</h2><p class="note">{esc(rep.get("repeats"))} attempts per case, '
           f'{esc(rep.get("cases"))} cases; means over cases, {esc(pct)} intervals resampling '
           f'cases. Flaky (passed sometimes, not always): {esc(rep.get("flaky_cases"))} '
           f'({esc(fmt(rep.get("flaky_share"), 4))}).</p>'
           + table(["figure", "mean", "CI low", "CI high"], rows, attrs=' id="repeats"'))
    flaky = [f for f in rep.get("flaky") or [] if isinstance(f, dict)][:FLAKY_ROWS]
    if flaky:
        frows = [[f"<td>{esc(f.get('case_id'))}</td>", num_cell(f.get("pass_rate")),
                  f"<td><code>{esc(f.get('outcomes'))}</code></td>"] for f in flaky]
        more = rep.get("flaky_cases", 0) - len(flaky)
        out += ("<h3>Flaky cases (P pass, F fail, E error)</h3>"
                + table(["case", "pass rate", "attempts"], frows, attrs=' id="flaky"')
                + (f'<p class="note">{more} more in repeats_&lt;id&gt;.csv</p>' if more > 0 else ""))
    return out


def sequential_section(seq: dict | None) -> str:
    """A run with ``--stop-when-decided``: the decision against the baseline and the
    anytime-valid interval for B − A, as the metrics' ``sequential`` section holds them."""
    if not isinstance(seq, dict) or not isinstance(seq.get("interval"), list):
        return ""
    from queryeval.run.sequential import summary_line

    low, high = seq["interval"]
    rows = [[f"<td>{esc(seq.get('metric'))}</td>", f"<td>{esc(seq.get('decision'))}</td>",
             num_cell(low), num_cell(high), f"<td>{esc(seq.get('cases_used'))}</td>",
             f"<td>{esc(seq.get('calls_saved'))}</td>"]]
    return (f'<h2>Sequential decision</h2><p class="note">{esc(summary_line(seq))}. '
            f'Baseline: {esc(seq.get("baseline"))}; {esc(seq.get("method"))}: the interval is '
            'valid at every number of cases, so stopping when it decides keeps the error '
            'rate at alpha.</p>'
            + table(["figure", "decision", "interval low", "interval high", "cases called",
                     "calls saved"], rows, attrs=' id="sequential"'))


def _case_charts(run: RunResults, metrics: dict, cis: dict[str, stats.MeanCI]) -> str:
    """The charts of the cases, as the viewer's run page draws them
    (:func:`queryeval.report.html_charts.case_charts`): each [0, 1] score's per-case
    distribution, the per-case pass rate under ``--repeats``, the test-suite verdicts by
    reason. Empty when there is none to draw."""
    order = [key for key, _, _ in overall_rows(run, metrics, cis)]
    charts = case_charts(run.task, order, case_rows(run), metrics.get("repeats"))
    return f"<h2>Per-case charts</h2>{figure_html(charts)}" if charts else ""


# --- the page ---------------------------------------------------------------------------------
@dataclass
class ReportFigures:
    """What a run's report shows, computed once: the metrics (the metrics file's, or those of
    the cases done so far), each record's per-case metrics and verdict (the run model's
    attempts, :meth:`queryeval.run.results.RunResults.attempts`), the CIs of the counted
    cases' means (:meth:`~queryeval.run.results.RunResults.counted`)."""

    metrics: dict
    values: list[dict[str, float]]
    verdicts: list[str]
    cis: dict[str, stats.MeanCI]
    finished: bool


def report_figures(run: str | Path | RunResults, *, resamples: int = 10_000,
                   seed: int = 0) -> ReportFigures:
    """The figures of :func:`render_report` (the viewer shows the same ones)."""
    run = RunResults.open(run)
    metrics = run.metrics
    if metrics is None:
        repeats = int(run.batch.get("evaluation_config", {}).get("repeats") or 1)
        if run.task is None:
            metrics = {}
        elif repeats > 1:
            from queryeval.run.repeats import aggregate_attempts

            metrics = aggregate_attempts(run.task, run.records, repeats)
        else:
            metrics = run.task.aggregate(run.records)
    attempts = run.attempts()  # the run model: one reduction, one pass rule
    values = [dict(a.values) for a in attempts]
    verdicts = [a.verdict for a in attempts]
    from queryeval.run.repeats import in_bootstrap_order

    # the counted cases' means, in the order the repeats section resamples them: one
    # interval per figure, n = cases
    ordered = in_bootstrap_order(run.counted(), lambda c: c.case_id)
    counted = [dict(c.means) for c in ordered]
    per_case: dict[str, list[float]] = {}
    for v in counted:
        for k, x in v.items():
            per_case.setdefault(k, []).append(x)
    cis = _intervals(run, per_case, counted, resamples=resamples, seed=seed,
                     clusters=[c.cluster for c in ordered])
    overall = metrics.get("overall_metrics", {}) if isinstance(metrics, dict) else {}
    for key, value in overall.items() if isinstance(overall, dict) else ():
        bounds = figure_interval(overall, key)  # an interval the task computed (judge-corrected)
        if bounds is not None and isinstance(value, (int, float)) and key not in cis:
            cis[key] = stats.MeanCI(float(value), bounds[0], bounds[1], len(counted), 0.95)
    return ReportFigures(metrics, values, verdicts, cis, run.metrics is not None)


def render_report(run: str | Path | RunResults, *, resamples: int = 10_000, seed: int = 0) -> str:
    """The HTML text of a run's report."""
    run = RunResults.open(run)
    fig = report_figures(run, resamples=resamples, seed=seed)
    metrics, values, verdicts, cis = fig.metrics, fig.values, fig.verdicts, fig.cis
    note = "" if fig.finished else (
        '<p class="error">this run is not finished: figures cover the cases done so far</p>')
    title = f"queryeval report · {run.task_name} · {run.batch_id[:8]}"
    settings = overall_figures(metrics.get("overall_metrics", {}), figure_kinds(run.task))[1]
    overall_h = f"Overall ({settings})" if settings else "Overall"
    body = (
        f"<h1>{esc(run.task_name)} report</h1><p class=\"meta\">batch {esc(run.batch_id)}</p>{note}"
        f"{error_banner(metrics)}"
        f"{_meta(run)}<h2>{esc(overall_h)}</h2>{_overall(run, metrics, cis, resamples=resamples, seed=seed)}"
        f"{sequential_section(metrics.get('sequential'))}"
        f"{by_k(metrics)}{repeats_section(metrics.get('repeats'))}"
        f"{_case_charts(run, metrics, cis)}"
        f"<h2>By group</h2>{_groups(metrics, figure_kinds(run.task))}"
        f"<h2>Cases</h2>{_cases(run, values, verdicts)}"
        f"<h2>Details of cases that did not pass</h2>{_details(run, verdicts)}"
    )
    return page(title, body)


def write_html_report(run: str | Path | RunResults, output: str | Path | None = None, *,
                      resamples: int = 10_000, seed: int = 0) -> Path:
    """Write ``report_<id>.html`` beside the run log (or to ``output``); returns the path."""
    from queryeval.io.atomic import write_text_atomic

    run = RunResults.open(run)
    path = Path(output) if output is not None else run.log.paths.folder / f"report_{run.batch_id}.html"
    write_text_atomic(path, render_report(run, resamples=resamples, seed=seed))
    return path
