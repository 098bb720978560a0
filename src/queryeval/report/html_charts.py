"""The charts of every page, built from the figures that page already holds (nothing is
computed here but the layout): the run report and the viewer's run page (headline figures
with their intervals, the recall@k curve, the per-case distribution of each score, the
per-case pass rate under ``--repeats``, test-suite verdicts by reason) and the compare pages
(the forest plot of the paired differences with their intervals, the per-case differences,
two runs' per-case scores A against B; N runs: every run against the baseline). One drawing helper per chart kind
(:mod:`queryeval.report.html_svg`); the viewer shows the SVG this module renders, so the
HTML pages, the notebook and the viewer draw the same picture from the same figures.

Each builder returns ``[{"id", "title", "svg"}]`` (nothing when it has nothing to draw).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from queryeval.report.html_figures import _AT_K, _is_rate, figure_kinds
from queryeval.report.html_svg import bar_chart, forest_plot, line_chart, nice_extent, strip_chart
from queryeval.run.results import lower_is_better

MAX_STRIPS = 8
"""Most per-case metrics (or pairs × metrics) drawn in one strip chart."""
MAX_FOREST = 24
"""Most rows of one forest plot (the tables below it hold every metric)."""
DIFF_BINS = 21
"""Bins of a per-case difference strip (odd: 0 is the middle bin's centre)."""


def _chart(cid: str, title: str, svg: str) -> dict:
    return {"id": cid, "title": title, "svg": svg}


# --- a run ------------------------------------------------------------------------------------
def _chartable_key(task: Any, key: str, kinds: Any = None) -> bool:
    """A figure the task lets a [0, 1] chart show (not a count, setting or timing) and higher
    is better."""
    kinds = kinds if kinds is not None else figure_kinds(task)
    return kinds.chartable(key) and not lower_is_better(task, key.rsplit(".", 1)[-1])


def _chartable(task: Any, key: str, value: Any) -> bool:
    return _is_rate(value) and _chartable_key(task, key)


def overall_chart(task: Any, rows: Sequence[tuple[str, Any, tuple[float, float] | None]]) -> str:
    """The run report's Overall bars: each [0, 1] figure (higher is better) with its 95%
    interval as a whisker; ``rows``: ``(figure, value, (low, high) or None)`` in the report's
    order. Empty when no figure is chartable."""
    picked = [(key, value, ci) for key, value, ci in rows if _chartable(task, key, value)]
    if not picked:
        return ""
    return bar_chart([(key, [value]) for key, value, _ in picked], ["value"],
                     ci=[[ci] for _, _, ci in picked], title="Overall figures (95% CI)")


def at_k(overall: dict) -> dict[str, dict[int, Any]]:
    """Figures asked for at two or more cut-offs: ``{name: {k: value}}`` (``recall@5`` …)."""
    at: dict[str, dict[int, Any]] = {}
    for key, value in overall.items():
        m = _AT_K.match(str(key))
        if m and (value is None or _is_rate(value)):
            at.setdefault(m["name"], {})[int(m["k"])] = value
    return {name: ks for name, ks in at.items() if len(ks) >= 2}


def by_k_chart(at: dict[str, dict[int, Any]]) -> str:
    """The curves of :func:`at_k` over k, recall@k first (empty without any)."""
    if not at:
        return ""
    ks = sorted({k for per in at.values() for k in per})
    names = sorted(at, key=lambda n: 0 if n == "recall" else 1)  # recall@k first
    return line_chart(ks, {f"{n}@k": [at[n].get(k) for k in ks] for n in names},
                      title=f"{', '.join(f'{n}@k' for n in names)} over k")


def _case_label(row: dict) -> str:
    return str(row.get("name") or row.get("case_id"))


def reason_kind(reason: Any) -> str:
    """A test-suite reason without its particulars (numbers, quoted rows, the text after a
    colon or semicolon): ``refuted by neighbour 3 (12 rows): …`` → ``refuted by neighbour N``."""
    text = re.split(r"[:;(]", str(reason or "no reason recorded"), maxsplit=1)[0].strip()
    return re.sub(r"\d+", "N", text) or "no reason recorded"


def run_charts(task: Any, overall_rows: Sequence[dict], overall: dict,
               rows: Sequence[dict], repeats: dict | None = None) -> list[dict]:
    """The viewer's charts of a run: ``overall_rows`` as the viewer's API gives them
    (``metric``, ``value``, ``low``, ``high``: the report's Overall table), ``overall`` the
    metrics file's overall figures (for the curves over k), then :func:`case_charts` of
    ``rows`` (:func:`queryeval.report.case_rows.case_rows`) and ``repeats``."""
    out = []
    head = overall_chart(task, [(r["metric"], r["value"], (r["low"], r["high"])
                                 if r.get("low") is not None and r.get("high") is not None
                                 else None) for r in overall_rows])
    if head:
        out.append(_chart("overall", "Headline figures with their 95% intervals", head))
    curve = by_k_chart(at_k(overall))
    if curve:
        out.append(_chart("by-k", "Figures over k", curve))
    return out + case_charts(task, [r["metric"] for r in overall_rows], rows, repeats)


def _pass_rate_ci(repeats: dict | None) -> str:
    """`` (mean over cases 0.6667, 95% interval [0.5000, 0.8333])``: the repeats section's
    pass rate as the metrics file holds it (empty unless it has a mean and both bounds)."""
    fig = ((repeats or {}).get("overall") or {}).get("pass_rate") if isinstance(repeats, dict) else None
    if not isinstance(fig, dict):
        return ""
    mean, low, high = (fig.get(k) for k in ("mean", "ci_low", "ci_high"))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in (mean, low, high)):
        return ""
    level = repeats.get("confidence", 0.95)
    level = level if isinstance(level, (int, float)) and 0 < level < 1 else 0.95
    return f" (mean over cases {mean:.4f}, {level:.0%} interval [{low:.4f}, {high:.4f}])"


def case_charts(task: Any, order: Sequence[str], rows: Sequence[dict],
                repeats: dict | None = None) -> list[dict]:
    """The charts of a run's cases, for the HTML report and the viewer alike: the per-case
    distribution of each [0, 1] score (in ``order``, the Overall table's), the per-case pass
    rate under ``--repeats`` (its caption with the repeats section's mean pass rate and
    interval), the test-suite verdicts by reason. ``rows``:
    :func:`queryeval.report.case_rows.case_rows` (each case's means, pass rate, deciding
    rule), of which only the cases the figures count are drawn (a row ``counted`` False, a
    case ``--on-error skip`` leaves out, is not; the captions say how many were left out);
    ``repeats``: the metrics file's ``repeats`` section."""
    out = []
    order = list(order)
    left_out = sum(1 for r in rows if r.get("counted") is False)
    rows = [r for r in rows if r.get("counted") is not False]  # the cases the figures count
    note = (f" ({left_out} case(s) left out by --on-error skip, as from the headline figures)"
            if left_out else "")
    per_case: list[str] = []
    for row in rows:
        per_case += [k for k in row["metrics"] if k not in per_case]
    per_case.sort(key=lambda k: order.index(k) if k in order else len(order))
    kinds = figure_kinds(task)
    picked = [k for k in per_case if _chartable_key(task, k, kinds)
              and all(_is_rate(r["metrics"][k]) for r in rows if k in r["metrics"])]
    if picked:
        strips = [(k, [(r["metrics"][k], _case_label(r)) for r in rows if k in r["metrics"]])
                  for k in picked[:MAX_STRIPS]]
        out.append(_chart("distribution", "Per-case scores: how many cases at each value"
                          + (f" (first {MAX_STRIPS} of {len(picked)} scores)"
                             if len(picked) > MAX_STRIPS else "") + note,
                          strip_chart(strips, title="Per-case scores", low=0.0, high=1.0,
                                      bins=20, ticks=[0.0, 0.25, 0.5, 0.75, 1.0],
                                      x_label="per-case value (mean over attempts)")))
    rates = [(r["pass_rate"], _case_label(r)) for r in rows if r.get("pass_rate") is not None]
    tries = max((len(r.get("attempts") or ()) for r in rows), default=0)
    if rates and tries > 1:  # one bin per possible pass rate: 0, 1/R, …, 1
        half = 0.5 / tries
        out.append(_chart("pass-rate", f"Per-case pass rate over {tries} attempts"
                          + _pass_rate_ci(repeats) + note,
                          strip_chart([("pass rate", rates)], title="Per-case pass rate",
                                      low=-half, high=1 + half, bins=tries + 1,
                                      ticks=[i / tries for i in range(tries + 1)]
                                      if tries <= 10 else [0.0, 0.5, 1.0],
                                      x_label="share of a case's attempts that passed")))
    suite = [r for r in rows if (r.get("decided") or {}).get("figure") == "test_suite_match"]
    if suite:
        reasons: dict[tuple[str, str], int] = {}
        for r in suite:
            d = r["decided"]
            word = ("inconclusive" if d.get("value") is None else
                    "pass" if d["value"] == 1 else "refuted" if d["value"] == 0 else "partial")
            key = (word, reason_kind(d.get("reason")))
            reasons[key] = reasons.get(key, 0) + 1
        ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append(_chart("test-suite", "Test-suite verdicts by reason (share of cases)",
                          bar_chart([(f"{w}: {why} ({n})", [n / len(suite)])
                                     for (w, why), n in ranked], ["share of cases"],
                                    title="Test-suite verdicts by reason", width=900,
                                    label_width=420, label_chars=64)))
    return out


# --- comparisons ------------------------------------------------------------------------------
def _drawn(m: Any) -> bool:
    """A metric whose difference is drawn: tested (not a count, not a twin) and on [0, 1]."""
    return (getattr(m, "tested", True) and m.diff is not None
            and all(v is not None and 0 <= v <= 1 for v in (m.mean_a, m.mean_b)))


def _ci_name(results: Sequence[Any], confidence: float) -> str:
    clusters = {m.clusters for m in results if getattr(m, "clusters", None)}
    robust = (f" cluster-robust ({', '.join(map(str, sorted(clusters)))} clusters)"
              if clusters else "")
    return f"{confidence:.0%}{robust} paired interval"


def _tip(label: str, m: Any, verdict: str, ci_name: str) -> str:
    ci = ("no interval" if m.ci_low is None or m.ci_high is None
          else f"{ci_name} [{m.ci_low:+.4f}, {m.ci_high:+.4f}]")
    return (f"{label}: {m.mean_a:.4f} → {m.mean_b:.4f}, difference {m.diff:+.4f}, {ci}; "
            f"n = {m.n}; {verdict}")


def _strip_rows(items: Sequence[tuple[str, Any]]) -> list[tuple[str, list[tuple[float, str]]]]:
    """Per (label, metric comparison): each paired case's difference, the moved cases from
    the comparison's flips (with their names), the other n − moved at 0."""
    out = []
    for label, m in items:
        moved = [(f.b - f.a, str(f.name or f.case_id)) for f in (*m.improved, *m.regressed)]
        out.append((label, moved + [(0.0, "unchanged")] * (m.n - len(moved))))
    return out


def _diff_strip(items: Sequence[tuple[str, Any]], title: str) -> str:
    rows = _strip_rows(items)
    extent = nice_extent([v for _, vs in rows for v, _ in vs])
    return strip_chart(rows, title=title, low=-extent, high=extent, bins=DIFF_BINS,
                       ticks=[-extent, -extent / 2, 0.0, extent / 2, extent],
                       x_label="per-case difference (second − first); cases unchanged at 0",
                       signed=True)


def scatter_chart(comp: Any, metrics: Sequence[Any] | None = None) -> str:
    """The per-case paired scatter (x: A's score, y: B's) of the drawn metrics, at most
    :data:`MAX_STRIPS`, from the comparison's own paired values (``paired_values``: the
    cases its differences are of, a ``--cases`` subset's when given); a metric with a
    per-case value off [0, 1] is left out (``metrics``: those, when already chosen). Each
    point coloured by the comparison's flips (better, worse, else the same). Empty without
    any."""
    from queryeval.report.html_svg import scatter_plot

    panels = []
    for m in (_scattered(comp) if metrics is None else metrics)[:MAX_STRIPS]:
        better = {f.case_id for f in m.improved}
        worse = {f.case_id for f in m.regressed}
        panels.append((m.metric, [(a, b, "better" if c in better else "worse" if c in worse
                                   else "same", str(name or c))
                                  for c, name, a, b in m.paired_values]))
    if not panels:
        return ""
    return scatter_plot(panels, title="Per-case scores: A (x) against B (y)",
                        x_label=f"A: {comp.run_a.get('label')}",
                        y_label=f"B: {comp.run_b.get('label')}")


def _scattered(comp: Any) -> list[Any]:
    """The drawn metrics whose every paired value is on [0, 1] (the scatter's square)."""
    return [m for m in comp.metrics if _drawn(m) and m.paired_values and all(
        _is_rate(float(v)) for _, _, a, b in m.paired_values for v in (a, b))]


def compare_charts(comp: Any, *, scatter: bool = False) -> list[dict]:
    """The two-run compare's charts (:class:`queryeval.report.compare.Comparison`): the
    forest plot of B − A per tested [0, 1] metric with the comparison's paired interval
    (cluster-robust when the cases have clusters), coloured by its verdict; the per-case
    differences of each; with ``scatter``, the A-vs-B per-case scatter (:func:`scatter_chart`)."""
    drawn = [m for m in comp.metrics if _drawn(m)]
    if not drawn:
        return []
    ci_name = _ci_name(drawn, comp.confidence)
    rows = [(m.metric, m.diff, m.ci_low, m.ci_high, m.verdict) for m in drawn[:MAX_FOREST]]
    more = f" (first {MAX_FOREST} of {len(drawn)})" if len(drawn) > MAX_FOREST else ""
    title = f"B − A per metric with its {ci_name}{more}"
    forest = forest_plot(rows, title=title, x_label="difference B − A",
                         tips=[_tip(m.metric, m, m.verdict, ci_name) for m in drawn[:MAX_FOREST]])
    strip = _diff_strip([(m.metric, m) for m in drawn[:MAX_STRIPS]],
                        "Per-case differences B − A")
    out = [_chart("forest", title, forest),
           _chart("paired", "Per-case differences B − A: how many cases moved, and how far"
                  + (f" (first {MAX_STRIPS} metrics)" if len(drawn) > MAX_STRIPS else ""),
                  strip)]
    scattered = _scattered(comp) if scatter else []
    svg = scatter_chart(comp, scattered) if scattered else ""
    if svg:
        shown = len(scattered)
        out.append(_chart("scatter", "Per-case scores, A (x) against B (y): above the "
                          "diagonal B scored higher; green better, red worse, grey the same"
                          + (f" (first {MAX_STRIPS} of {shown} metrics)"
                             if shown > MAX_STRIPS else ""), svg))
    return out


def nway_charts(comp: Any) -> list[dict]:
    """The N-way compare's charts (:class:`queryeval.report.compare.NWayComparison`):
    one forest plot of every run against the baseline (Δ with its paired interval, per
    tested [0, 1] metric, grouped by metric; the verdict from the overall table's Holm
    adjustment as in the Δ table), and each run's per-case differences against it."""
    from queryeval.report.compare import letter

    verdicts = {(v["run_b"], v["metric"]): v["verdict"] for v in comp.verdicts()
                if v["run_a"] == 0}
    pairs = [(j, m) for (i, j), results in comp.pair_results.items() if i == 0
             for m in results if _drawn(m)]
    if not pairs:
        return []
    order = list(dict.fromkeys(m.metric for _, m in pairs))
    pairs.sort(key=lambda p: (order.index(p[1].metric), p[0]))
    ci_name = _ci_name([m for _, m in pairs], comp.confidence)
    shown = pairs[:MAX_FOREST]
    labels = [f"{m.metric}: {letter(j)} − a" for j, m in shown]
    rows = [(lb, m.diff, m.ci_low, m.ci_high, verdicts.get((j, m.metric), "not tested"))
            for lb, (j, m) in zip(labels, shown, strict=True)]
    names = [f"{lb} ({comp.labels[j]} − {comp.labels[0]})" for lb, (j, _) in zip(labels, shown, strict=True)]
    more = f" (first {MAX_FOREST} of {len(pairs)})" if len(pairs) > MAX_FOREST else ""
    title = f"Every run against the baseline a: Δ with its {ci_name}{more}"
    forest = forest_plot(rows, title=title, x_label="difference against the baseline a",
                         tips=[_tip(n, m, r[4], ci_name)
                               for n, (_, m), r in zip(names, shown, rows, strict=True)])
    strip = _diff_strip([(lb, m) for lb, (_, m) in zip(labels, shown, strict=True)][:MAX_STRIPS],
                        "Per-case differences against the baseline")
    return [_chart("forest", title, forest),
            _chart("paired", "Per-case differences against the baseline a"
                   + (f" (first {MAX_STRIPS})" if len(shown) > MAX_STRIPS else ""), strip)]


def figure_html(charts: Sequence[dict]) -> str:
    """The charts as HTML figures (the SVG with its title as caption), in one flex box."""
    from queryeval.report.html_page import esc

    if not charts:
        return ""
    figs = "".join(f'<figure class="chart" data-chart="{esc(c["id"])}">{c["svg"]}'
                   f"<figcaption class=\"note\">{esc(c['title'])}</figcaption></figure>"
                   for c in charts)
    return f'<div class="charts">{figs}</div>'
