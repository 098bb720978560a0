"""The one place the viewer reads a run's figures from: the run model and the HTML report
(nothing here computes a figure of its own).

* :func:`queryeval.report.case_rows.case_rows` (the HTML report's charts read it too): one
  row per CASE from :class:`queryeval.run.results.RunResults` (``cases``: the one
  reduction of attempts): the case's means (what the report's intervals resample), its
  verdict (``pass``/``fail``/``error``, ``flaky`` with repeats), and every attempt (its
  repeat, record index, call status and verdict; with repeats the outcomes as ``P``/``F``/``E``
  and the pass rate).
* :func:`run_figures`: the report's Overall table (value, case-bootstrap CI, n, or why
  there is no interval: :func:`queryeval.report.html.no_interval`;
  :func:`queryeval.report.html.report_figures` / :func:`~queryeval.report.html.overall_rows`)
  and the metrics file's ``repeats`` section as it is.
"""

from __future__ import annotations

from typing import Any


def run_figures(loaded: Any, *, resamples: int, seed: int = 0) -> dict:
    """The report's Overall rows (figure, value, CI low/high and n where the report shows
    one) and the metrics' ``repeats`` section (None without repeats)."""
    from queryeval.report.html import (
        figure_kinds,
        no_interval,
        overall_figures,
        overall_rows,
        report_figures,
    )

    fig = report_figures(loaded, resamples=resamples, seed=seed)
    kinds = figure_kinds(loaded.task)
    rows = []
    for key, value, ci in overall_rows(loaded, fig.metrics, fig.cis):
        rows.append({"metric": key, "value": value,
                     "low": ci.low if ci is not None else None,
                     "high": ci.high if ci is not None else None,
                     "n": ci.n if ci is not None else None,
                     "why": None if ci is not None else no_interval(key, value, fig.cis, kinds),
                     **({"clusters": ci.clusters, "design_effect": ci.design_effect,
                         "effective_n": ci.effective_n}
                        if ci is not None and ci.clusters is not None else {})})
    settings = overall_figures(fig.metrics.get("overall_metrics", {}), figure_kinds(loaded.task))[1]
    rep = fig.metrics.get("repeats")
    return {"overall_rows": rows, "settings": settings, "finished": fig.finished,
            "repeats": rep if isinstance(rep, dict) else None,
            "ci_note": {"resamples": resamples, "seed": seed}}
