"""The one place the viewer reads a run's figures from: the functions the HTML report and the
metrics file use (nothing here computes a figure of its own).

* :func:`case_rows`: one row per CASE: the per-case metrics the report's intervals resample
  (a run with ``--repeats``: each case's mean over its attempts, :func:`queryeval.run.repeats.case_means`),
  the report's pass/fail verdict (:func:`queryeval.report.html.verdict`; with repeats the
  case's attempts as ``P``/``F``/``E`` from :func:`queryeval.run.repeats.repeat_stats`, the
  function that writes ``repeats_<id>.csv``), and every attempt (its repeat, record index,
  call status and verdict).
* :func:`run_figures`: the report's Overall table (value, case-bootstrap CI, n;
  :func:`queryeval.report.html.report_figures` / :func:`~queryeval.report.html.overall_rows`)
  and the metrics file's ``repeats`` section as it is.

When the shared per-case results model (``queryeval.run.results``) lands, these two
functions are what changes.
"""

from __future__ import annotations

from typing import Any

VERDICTS = ("pass", "fail", "error", "flaky")
"""A case's verdict: the report's ``pass``/``fail``/``error``; with repeats, ``flaky`` when
some attempts passed and some did not."""


def _repeated(records: list[dict]) -> bool:
    return any("repeat" in r for r in records)


def case_rows(loaded: Any) -> list[dict]:
    """One row per case (suite order): case_id, name, tags, status (the call status: ``error``
    when any attempt's call failed), verdict, metrics, attempts."""
    from queryeval.report.compare import case_metrics
    from queryeval.report.html import verdict

    records = loaded.records
    values = [case_metrics(loaded.task, r) for r in records]
    verdicts = [verdict(loaded.task, r, v, loaded.task_name)
                for r, v in zip(records, values, strict=True)]
    if not _repeated(records):
        return [_row(r, v, verd, [_attempt(k, r, verd)])
                for k, (r, v, verd) in enumerate(zip(records, values, verdicts, strict=True))]
    from queryeval.run.repeats import case_means, repeat_stats

    means = case_means(records, lambda r: case_metrics(loaded.task, r))
    passed = ((lambda r: loaded.task.case_passed(r)) if loaded.task is not None
              else (lambda r: verdict(None, r, case_metrics(None, r), loaded.task_name) == "pass"))
    stats = repeat_stats(records, _repeats(loaded), [], passed, lambda r: {})
    per_case = {row["case_id"]: row for row in stats.rows}
    firsts: dict[str, int] = {}
    attempts: dict[str, list[dict]] = {}
    for k, (r, verd) in enumerate(zip(records, verdicts, strict=True)):
        cid = str(r["case_id"])
        firsts.setdefault(cid, k)
        attempts.setdefault(cid, []).append(_attempt(k, r, verd))
    rows = []
    for cid, first in firsts.items():
        tries = sorted(attempts[cid], key=lambda a: (a["repeat"] is None, a["repeat"] or 0))
        st = per_case[cid]
        outcomes = str(st["outcomes"])
        if st["flaky"]:
            verd = "flaky"
        elif st["passes"] == st["attempts"]:
            verd = "pass"
        else:
            verd = "error" if outcomes and set(outcomes) == {"E"} else "fail"
        row = _row(records[first], means[cid], verd, tries)
        row.update(status="error" if any(a["status"] == "error" for a in tries) else
                   row["status"], outcomes=outcomes, pass_rate=st["pass_rate"])
        rows.append(row)
    return rows


def _repeats(loaded: Any) -> int:
    rep = (loaded.batch.get("evaluation_config") or {}).get("repeats")
    return rep if isinstance(rep, int) and not isinstance(rep, bool) and rep > 0 else 1


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
    from queryeval.report.html import overall_figures, overall_rows, report_figures

    fig = report_figures(loaded, resamples=resamples, seed=seed)
    rows = []
    for key, value, ci in overall_rows(loaded, fig.metrics, fig.cis):
        rows.append({"metric": key, "value": value,
                     "low": ci.low if ci is not None else None,
                     "high": ci.high if ci is not None else None,
                     "n": ci.n if ci is not None else None})
    settings = overall_figures(fig.metrics.get("overall_metrics", {}))[1]
    rep = fig.metrics.get("repeats")
    return {"overall_rows": rows, "settings": settings, "finished": fig.finished,
            "repeats": rep if isinstance(rep, dict) else None,
            "ci_note": {"resamples": resamples, "seed": seed}}
