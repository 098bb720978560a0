"""The judge's part of a case's details in the HTML report, the same for every task that asks
it (docs/judge.md): its verdict and reason, why it was asked, its model and prompt version,
or the error it left, all read from the record (``judge``, ``decided_by``) and escaped."""

from __future__ import annotations

from queryeval.report.html_page import esc


def judge_line(judge: dict | None) -> str:
    """``judge pass: <reason> (asked: inconclusive; model, prompt v)``, and the error of a
    judge that gave no verdict; nothing when the judge was not asked."""
    if not isinstance(judge, dict):
        return ""
    said = judge.get("verdict") or "no verdict"
    why = f"asked: {judge['why']}; " if judge.get("why") else ""
    out = (f'<p class="judge"><b>judge</b> {esc(said)}: {esc(judge.get("reason") or "")}'
           f' <span class="note">({esc(why)}{esc(judge.get("model") or "")}, prompt '
           f'{esc(judge.get("prompt_version") or "?")})</span></p>')
    err = judge.get("error")
    if isinstance(err, dict):
        out += (f'<p class="error">judge error — {esc(err.get("kind", "error"))}: '
                f'{esc(err.get("message", ""))}</p>')
    return out


def decision_html(record: dict) -> str:
    """What decided a case of a judged run (``decided_by``) and the judge's line; nothing for a
    run without a judge (its records have no ``decided_by``)."""
    if "decided_by" not in record:
        return ""
    return (f'<p class="decided"><b>decided by</b> {esc(record.get("decided_by"))}</p>'
            + judge_line(record.get("judge")))
