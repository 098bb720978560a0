"""The freeform task's case details in the HTML report: the question, the reference and its
aliases, the response, and what decided the case: the ladder's rule and why, or the judge's
verdict and reason (or the judge's error). Every string goes through :func:`esc`."""

from __future__ import annotations

from queryeval.report.html_page import esc
from queryeval.report.judge_html import judge_line


def freeform_details(record: dict) -> str:
    ref = record["reference"]
    parts = [f"<h4>{esc(record.get('question') or '')}</h4>"]
    err = record.get("error")
    if err:
        parts.append(f'<p class="error">{esc(err.get("kind", "error"))}: '
                     f'{esc(err.get("message", ""))}</p>')
    aliases = ref.get("aliases") or []
    parts.append(f"<p><b>reference</b> {esc(ref['answer'])}"
                 + (f" <span class=\"note\">(also: {esc('; '.join(aliases))})</span>"
                    if aliases else "") + "</p>")
    verdict = record.get("rule_verdict") or "inconclusive"
    parts.append(f"<p><b>ladder</b> {esc(record.get('rule'))} → {esc(verdict)}: "
                 f"{esc(record.get('detail') or '')}</p>")
    parts.append(judge_line(record.get("judge")))
    parts.append(f"<p><b>decided by</b> {esc(record.get('decided_by'))}</p>")
    response = record.get("response")
    parts.append(f"<pre>{esc(response)}</pre>" if response
                 else '<p class="fail">no response</p>')
    return "".join(parts)
