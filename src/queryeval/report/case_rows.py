"""One row per case of a run, read from the run model
(:class:`queryeval.run.results.RunResults`: ``cases``, the one reduction of attempts) and
the JUnit report's deciding rule: what the viewer's cases table lists and what the run
charts (:func:`queryeval.report.html_charts.run_charts`) of the HTML report and the viewer
are drawn from (nothing here computes a figure of its own).
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
    call, a flaky case's pass rate). ``counted``: whether the run's figures count the case
    (False for a case ``--on-error skip`` leaves out: :meth:`RunResults.counted`)."""
    from queryeval.report.junit import case_outcome, deciding

    records = loaded.records
    repeated = any("repeat" in r for r in records)
    count = getattr(loaded, "counted", None)  # the cases the figures count
    counted = {c.case_id for c in count()} if callable(count) else None
    rows = []
    for case in loaded.cases:
        tries = [_attempt(a.index, records[a.index], a.verdict) for a in case.attempts]
        row = _row(records[case.attempts[0].index], dict(case.means), case.verdict, tries)
        shown = next((a for a in case.attempts if not a.passed), case.attempts[0])
        decided = deciding(records[shown.index])
        message = case_outcome(records, case)[1]
        why = (decided or {}).get("reason") if case.verdict in ("pass", "fail") else None
        row.update(decided=decided, reason=why or message or None,
                   counted=counted is None or case.case_id in counted)
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
