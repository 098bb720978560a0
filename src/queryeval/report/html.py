"""``queryeval report RUN``: one self-contained HTML page per run (``report_<id>.html``).

Sections: the run's metadata; overall figures with 95% bootstrap confidence intervals of the
per-case means; per-group bars for whatever ``group_metrics`` holds (tag, dimension, dataset,
concept, field, …); spider charts for groups of 3+ members measured on [0, 1]; a per-case
table with filtering and sorting; the details of every case that did not pass, linked from
the table (rendered per task, see :mod:`queryeval.report.html_details`). Works for any task
kind from its records and metrics; inline CSS/JS/SVG only, no network.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from queryeval.report import stats
from queryeval.report.compare import LoadedRun, case_metrics, load_run, lower_is_better
from queryeval.report.html_details import render_details
from queryeval.report.html_page import esc, num_cell, page, table
from queryeval.report.html_svg import bar_chart, radar_chart

MAX_BARS = 60
MAX_SERIES = 4
RADAR_MAX_AXES = 40


# --- figures ----------------------------------------------------------------------------------
def flatten(figures: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts of figures -> ``{"a.b": value}``; lists are dropped (not figures)."""
    out: dict[str, Any] = {}
    if not isinstance(figures, dict):
        return {prefix or "value": figures}
    for key, value in figures.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(flatten(value, name))
        elif not isinstance(value, list):
            out[name] = value
    return out


def _is_rate(v: Any) -> bool:
    return isinstance(v, float) and math.isfinite(v) and 0.0 <= v <= 1.0


def rate_keys(members: dict[str, dict[str, Any]]) -> list[str]:
    """Keys whose values are, for every member, a float in [0, 1] or None (not all None).
    Counts are ints in the metrics JSON, so they never qualify; nor do latencies and other
    better-lower figures (by name, see :func:`lower_is_better`)."""
    keys: list[str] = []
    for figures in members.values():
        keys += [k for k in figures if k not in keys]
    return [k for k in keys if not lower_is_better(None, k.rsplit(".", 1)[-1])
            and all(f.get(k) is None or _is_rate(f.get(k)) for f in members.values())
            and any(_is_rate(f.get(k)) for f in members.values())]


def _prefer(keys: list[str]) -> list[str]:
    """PSAQ first (seed 001's spider chart), then the rest in their order."""
    return sorted(keys, key=lambda k: 0 if "psaq" in k.lower() else 1)


#: Task name -> which per-case metrics decide pass/fail (default: every better-higher [0, 1]
#: metric). Retrieval: the correct chunk is in the top k (precision@k < 1 even then).
PASS_METRICS: dict[str, Callable[[str], bool]] = {
    "retrieval": lambda k: k.startswith(("hit_rate@", "recall@")),
}


def verdict(task: Any, record: dict, values: dict[str, float], task_name: str | None = None) -> str:
    """``error`` (a call failed), ``pass`` (every deciding [0, 1] score equals 1) or ``fail``;
    a task may decide with its own ``case_verdict(record)``."""
    hook = getattr(task, "case_verdict", None)
    if callable(hook):
        return str(hook(record))
    if record.get("status") == "error":
        return "error"
    decides = PASS_METRICS.get(task_name or getattr(task, "name", None) or "",
                               lambda k: not lower_is_better(task, k))
    rates = [v for k, v in values.items() if 0.0 <= v <= 1.0 and decides(k)]
    return "pass" if all(v == 1.0 for v in rates) else "fail"


def _counted(run: LoadedRun) -> list[dict]:
    if run.task is not None:
        return run.task.counted(run.records)
    if run.task_options.get("on_error") == "skip":
        return [r for r in run.records if r.get("status") != "error"]
    return run.records


# --- sections ---------------------------------------------------------------------------------
def _meta(run: LoadedRun) -> str:
    b = run.batch
    cfg = b.get("evaluation_config", {})
    suite = b.get("suite_info", {})
    rows = [("task", b.get("task")), ("batch", run.batch_id), ("status", b.get("status")),
            ("started", b.get("timestamp")), ("completed", b.get("completed_at")),
            ("suite", f"{suite.get('path', cfg.get('suite'))} ({suite.get('hash', '')[:19]}…)"),
            ("system", cfg.get("system") or f"recorded: {cfg.get('responses')}"),
            ("task options", json.dumps(cfg.get("task_options", {}), ensure_ascii=False)),
            ("software", json.dumps(b.get("software_info", {}), ensure_ascii=False))]
    if b.get("rescored_from"):
        src = b["rescored_from"]
        rows.append(("rescored from", f"{src.get('batch_id')} with "
                     f"{json.dumps(src.get('changed_options', {}), ensure_ascii=False)}"))
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="meta"><tbody>{body}</tbody></table>'


def _overall(run: LoadedRun, metrics: dict, per_case: dict[str, list[float]], *,
             resamples: int, seed: int) -> str:
    overall = metrics.get("overall_metrics", {})
    rows, chart_rows, chart_ci = [], [], []
    cis = {k: stats.bootstrap_ci(v, resamples=resamples, seed=seed) for k, v in per_case.items()}
    for key, value in flatten(overall).items():
        ci = cis.get(key)
        agrees = (ci is not None and ci.mean is not None and isinstance(value, (int, float))
                  and abs(ci.mean - value) <= 1e-9)
        interval = f"[{ci.low:.4f}, {ci.high:.4f}]" if agrees else "—"
        rows.append([f"<td>{esc(key)}</td>", num_cell(value) if not isinstance(value, str)
                     else f"<td>{esc(value)}</td>", f'<td class="num">{esc(interval)}</td>',
                     f'<td class="num">{ci.n if agrees else ""}</td>'])
        if _is_rate(value) and not lower_is_better(run.task, key.rsplit(".", 1)[-1]):
            chart_rows.append((key, [value]))
            chart_ci.append([(ci.low, ci.high) if agrees else None])
    out = [table(["metric", "value", "95% CI of the case mean", "cases"], rows)]
    out.append('<p class="note">Intervals: percentile bootstrap over cases '
               f"({resamples} resamples, seed {seed}); shown for figures that are means over "
               "cases.</p>")
    if chart_rows:
        out.append(bar_chart(chart_rows, ["value"], ci=chart_ci, title="Overall figures (95% CI)"))
    return "".join(out)


def _groups(metrics: dict) -> str:
    groups = metrics.get("group_metrics") or {}
    out = []
    for kind, members in groups.items():
        if not isinstance(members, dict) or not members:
            continue
        flat = {str(name): flatten(figures) for name, figures in members.items()}
        keys = rate_keys(flat)
        out.append(f"<h3>by {esc(kind)} ({len(flat)})</h3>")
        charts = []
        if keys:
            series = _prefer(keys)[:MAX_SERIES]
            names = list(flat)[:MAX_BARS]
            charts.append(bar_chart([(n, [flat[n].get(k) for k in series]) for n in names], series,
                                    title=f"by {kind}"))
            if len(names) < len(flat):
                charts.append(f'<p class="note">first {MAX_BARS} of {len(flat)} shown; the '
                              "table lists all</p>")
            full = [k for k in _prefer(keys) if all(_is_rate(f.get(k)) for f in flat.values())]
            if 3 <= len(flat) <= RADAR_MAX_AXES and full:
                charts.append(radar_chart(list(flat), {k: [flat[n][k] for n in flat] for k in full[:3]},
                                          title=f"{', '.join(full[:3])} by {kind}"))
        out.append(f'<div class="charts">{"".join(charts)}</div>')
        cols: list[str] = []
        for figures in flat.values():
            cols += [k for k in figures if k not in cols]
        rows = [[f"<td>{esc(n)}</td>", *(num_cell(f.get(k)) if not isinstance(f.get(k), str)
                                         else f"<td>{esc(f.get(k))}</td>" for k in cols)]
                for n, f in flat.items()]
        out.append(f"<details><summary>table by {esc(kind)}</summary>{table([kind, *cols], rows)}</details>")
    return "".join(out) or '<p class="note">no group figures in this run</p>'


def _cases(run: LoadedRun, values: list[dict[str, float]], verdicts: list[str]) -> str:
    cols: list[str] = []
    for v in values:
        cols += [k for k in v if k not in cols]
    rows = []
    for i, (rec, v, verd) in enumerate(zip(run.records, values, verdicts, strict=True)):
        cid = esc(rec.get("case_id"))
        link = f'<a href="#case-{i}">{cid}</a>' if verd != "pass" else cid
        tags = "".join(f'<span class="tag">{esc(t)}</span>' for t in rec.get("tags") or [])
        rows.append(f'<tr data-status="{esc(verd)}"><td>{link}</td><td>{esc(rec.get("name"))}</td>'
                    f'<td>{tags}</td><td class="{esc(verd)}">{esc(verd)}</td>'
                    + "".join(num_cell(v.get(k)) for k in cols)
                    + f'<td>{esc(", ".join(rec.get("error_kinds") or []))}</td></tr>')
    heads = "".join(f"<th>{esc(h)}</th>" for h in ("case", "name", "tags", "status"))
    heads += "".join(f'<th class="num">{esc(k)}</th>' for k in cols) + "<th>errors</th>"
    counts = {s: verdicts.count(s) for s in ("pass", "fail", "error")}
    options = "".join(f'<option value="{s}">{s} ({n})</option>' for s, n in counts.items())
    return (
        '<div class="filters"><input type="search" id="filter-text" placeholder="filter cases…" '
        'aria-label="filter cases"><select id="filter-status" aria-label="status">'
        f'<option value="">all ({len(verdicts)})</option>{options}</select>'
        '<span id="filter-count" class="note"></span></div>'
        f'<table id="cases"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _details(run: LoadedRun, verdicts: list[str]) -> str:
    out = []
    for i, (rec, verd) in enumerate(zip(run.records, verdicts, strict=True)):
        if verd == "pass":
            continue
        out.append(f'<section class="case" id="case-{i}"><h3><span class="{esc(verd)}">'
                   f'[{esc(verd)}]</span> {esc(rec.get("name") or "")} <code>{esc(rec.get("case_id"))}'
                   f'</code><a class="back" href="#cases">back to table</a></h3>'
                   f"{render_details(run.task_name, run.task, rec)}</section>")
    return "".join(out) or '<p class="note">every case passed</p>'


# --- the page ---------------------------------------------------------------------------------
def render_report(run: str | Path | LoadedRun, *, resamples: int = 10_000, seed: int = 0) -> str:
    """The HTML text of a run's report."""
    run = load_run(run)
    metrics = run.metrics
    note = ""
    if metrics is None:
        note = '<p class="error">this run is not finished: figures cover the cases done so far</p>'
        metrics = run.task.aggregate(run.records) if run.task is not None else {}
    values = [case_metrics(run.task, r) for r in run.records]
    verdicts = [verdict(run.task, r, v, run.task_name)
                for r, v in zip(run.records, values, strict=True)]
    counted_ids = {id(r) for r in _counted(run)}
    per_case: dict[str, list[float]] = {}
    for rec, v in zip(run.records, values, strict=True):
        if id(rec) in counted_ids:
            for k, x in v.items():
                per_case.setdefault(k, []).append(x)
    title = f"queryeval report · {run.task_name} · {run.batch_id[:8]}"
    body = (
        f"<h1>{esc(run.task_name)} report</h1><p class=\"meta\">batch {esc(run.batch_id)}</p>{note}"
        f"{_meta(run)}<h2>Overall</h2>{_overall(run, metrics, per_case, resamples=resamples, seed=seed)}"
        f"<h2>By group</h2>{_groups(metrics)}"
        f"<h2>Cases</h2>{_cases(run, values, verdicts)}"
        f"<h2>Details of cases that did not pass</h2>{_details(run, verdicts)}"
    )
    return page(title, body)


def write_html_report(run: str | Path | LoadedRun, output: str | Path | None = None, *,
                      resamples: int = 10_000, seed: int = 0) -> Path:
    """Write ``report_<id>.html`` beside the run log (or to ``output``); returns the path."""
    from queryeval.io.atomic import write_text_atomic

    run = load_run(run)
    path = Path(output) if output is not None else run.log.paths.folder / f"report_{run.batch_id}.html"
    write_text_atomic(path, render_report(run, resamples=resamples, seed=seed))
    return path
