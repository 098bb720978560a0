"""The one place the viewer reads a run's figures from: the run model and the HTML report
(nothing here computes a figure of its own).

* :func:`case_rows`: one row per CASE from :class:`queryeval.run.results.RunResults`
  (``cases``: the one reduction of attempts): the case's means (what the report's intervals
  resample), its verdict (``pass``/``fail``/``error``, ``flaky`` with repeats), and every
  attempt (its repeat, record index, call status and verdict; with repeats the outcomes as
  ``P``/``F``/``E`` and the pass rate).
* :func:`run_figures`: the report's Overall table (value, case-bootstrap CI, n, or why
  there is no interval: :func:`queryeval.report.html.no_interval`;
  :func:`queryeval.report.html.report_figures` / :func:`~queryeval.report.html.overall_rows`)
  and the metrics file's ``repeats`` section as it is.
"""

from __future__ import annotations

from typing import Any

VERDICTS = ("pass", "fail", "error", "flaky")
"""A case's verdict: the report's ``pass``/``fail``/``error``; with repeats, ``flaky`` when
some attempts passed and some did not."""


def case_rows(loaded: Any) -> list[dict]:
    """One row per case (suite order): case_id, name, tags, status (the call status: ``error``
    when any attempt's call failed), verdict, metrics, attempts; all read from
    ``loaded.cases`` (:func:`queryeval.run.results.reduce_cases`). ``decided``: what decided
    the case (:func:`queryeval.report.junit.deciding`: ``test_suite_match`` under
    --test-suite, the judge's verdict or ``decided_by``; None when the scores decide), of
    the first attempt that did not pass (else the first); ``reason``: why, in words — for a
    pass or fail the deciding rule's reason, else for a case that did not pass the JUnit
    report's line (:func:`queryeval.report.junit.case_outcome`: expected vs got, the failed
    call, a flaky case's pass rate)."""
    from queryeval.report.junit import case_outcome, deciding

    records = loaded.records
    repeated = any("repeat" in r for r in records)
    rows = []
    for case in loaded.cases:
        tries = [_attempt(a.index, records[a.index], a.verdict) for a in case.attempts]
        row = _row(records[case.attempts[0].index], dict(case.means), case.verdict, tries)
        shown = next((a for a in case.attempts if not a.passed), case.attempts[0])
        decided = deciding(records[shown.index])
        message = case_outcome(records, case)[1]
        why = (decided or {}).get("reason") if case.verdict in ("pass", "fail") else None
        row.update(decided=decided, reason=why or message or None)
        if repeated:
            row.update(status="error" if case.errored else row["status"],
                       outcomes=case.outcomes, pass_rate=case.pass_rate)
        rows.append(row)
    return rows


def _text(v: Any) -> str | None:
    return v if v is None or isinstance(v, str) else str(v)[:200]


def _attempt(index: int, record: dict, verd: str) -> dict:
    rep = record.get("repeat")
    return {"repeat": rep if isinstance(rep, int) and not isinstance(rep, bool) else None,
            "index": index, "status": _text(record.get("status")), "verdict": verd}


def _row(record: dict, metrics: dict, verd: str, attempts: list[dict]) -> dict:
    tags = record.get("tags")
    return {"case_id": str(record["case_id"]), "name": _text(record.get("name")),
            "status": _text(record.get("status")), "verdict": verd,
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
            "metrics": metrics, "attempts": attempts, "index": attempts[0]["index"]}


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
