"""Per-task renderers of one case's details in the HTML report.

:func:`render_details` picks, in order: the task's own ``html_details(record) -> str`` hook,
a renderer registered here for the task name (:data:`RENDERERS`), or the generic fallback
that shows each turn's question, error, expected (target) and produced (output) values and
scores as pretty JSON. Every user-supplied string goes through :func:`esc`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from queryeval.report.freeform_html import freeform_details
from queryeval.report.html_page import esc, fmt
from queryeval.report.judge_html import decision_html
from queryeval.report.numbers import value_text


def _pretty(value: Any) -> str:
    return esc(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _error(turn: dict) -> str:
    err = turn.get("error")
    if not err:
        return ""
    if isinstance(err, dict):
        text = f"{err.get('kind', 'error')}: {err.get('message', '')}"
    else:
        text = str(err)
    return f'<p class="error">call failed — {esc(text)}</p>'


def _question(turn: dict) -> str:
    label = f"turn {turn.get('turn')}" if "turn" in turn else "turn"
    q = turn.get("question")
    return f"<h4>{esc(label)}{': ' + esc(q) if q else ''}</h4>"


# --- generic --------------------------------------------------------------------------------
def generic_details(record: dict) -> str:
    """Each turn's target, output, error and scores; a record without turns as JSON."""
    turns = record.get("turns")
    if not isinstance(turns, list) or not turns:
        shown = {k: v for k, v in record.items() if k not in ("case_id", "name", "tags")}
        return f"<pre>{_pretty(shown)}</pre>"
    parts = []
    for t in turns:
        if not isinstance(t, dict):
            parts.append(f"<pre>{_pretty(t)}</pre>")
            continue
        parts.append(_question(t) + _error(t))
        parts.append('<div class="charts">'
                     f'<div><b>expected</b><pre>{_pretty(t.get("target"))}</pre></div>'
                     f'<div><b>produced</b><pre>{_pretty(t.get("output"))}</pre></div></div>')
        if t.get("scores") is not None:
            parts.append(f'<details><summary>scores</summary><pre>{_pretty(t["scores"])}</pre></details>')
    return "".join(parts)


# --- term selection (seed 000) ----------------------------------------------------------------
def _terms(terms: list) -> str:
    if not terms:
        return "—"
    items = "".join(f"<li><code>{esc(t[0])}</code> {esc(t[1])}</li>" if isinstance(t, (list, tuple))
                    and len(t) == 2 else f"<li>{esc(t)}</li>" for t in terms)
    return f'<ul class="terms">{items}</ul>'


def selection_details(record: dict) -> str:
    """Per turn, one row per (dataset, dimension): precision, recall, the terms found, the
    missed terms (false negatives) and the extra ones (false positives)."""
    parts = []
    for t in record.get("turns", []):
        parts.append(_question(t) + _error(t))
        dims = (t.get("scores") or {}).get("dimensions", [])
        if not dims:
            parts.append('<p class="note">nothing expected, nothing selected</p>')
            continue
        rows = []
        for d in dims:
            where = f"{d['dataset_id']} / {d['dimension']}"
            status = "" if d.get("in_target") else ' <span class="fail">(not in target)</span>'
            cls = "pass" if not d.get("fn") and not d.get("fp") else "fail"
            rows.append(
                f'<tr><td class="{cls}">{esc(where)}{status}</td>'
                f'<td class="num">{esc(fmt(d.get("precision")))}</td>'
                f'<td class="num">{esc(fmt(d.get("recall")))}</td>'
                f"<td>{_terms(d.get('tp', []))}</td><td>{_terms(d.get('fn', []))}</td>"
                f"<td>{_terms(d.get('fp', []))}</td></tr>")
        parts.append("<table><thead><tr><th>dataset / dimension</th><th>precision</th><th>recall</th>"
                     "<th>found (TP)</th><th>missed (FN)</th><th>extra (FP)</th></tr></thead>"
                     f"<tbody>{''.join(rows)}</tbody></table>")
    return "".join(parts)


# --- retrieval (seed 002) and queries (seed 003) ----------------------------------------------
def _chunk_text(text: object, limit: int = 600) -> str:
    """A chunk's text, the first ``limit`` characters shown and the rest behind a fold."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return f'<span class="wrap">{esc(text)}</span>'
    return (f'<span class="wrap">{esc(text[:limit])}</span><details><summary>… '
            f'{len(text) - limit} more characters</summary><span class="wrap">{esc(text[limit:])}'
            "</span></details>")


def retrieval_details(record: dict) -> str:
    """The question, the expected chunk with its text (from the log, or from ``--corpus``
    through the task's ``report_record``), and the retrieved chunks in rank order with their
    text and the correct one marked."""
    expected = record["expected_chunk"] or {}
    result = record.get("evaluation_result") or {}
    want = str(expected.get("content_hash") or "").lower()
    rows = []
    for rank, c in enumerate(record.get("retrieved_chunks") or [], start=1):
        ok = bool(c["relevant"]) if "relevant" in c else (  # the task's mark (report_record)
            bool(want) and str(c.get("content_hash") or "").lower() == want)
        rows.append(f'<tr><td class="num">{rank}</td><td class="{"pass" if ok else ""}">'
                    f'{esc(c.get("chunk_id"))}{" ✔ expected" if ok else ""}</td>'
                    f'<td class="num">{esc(fmt(c.get("score")))}</td>'
                    f'<td>{_chunk_text(c.get("content"))}</td></tr>')
    err = _error(record)
    content = expected.get("content")
    shown = (_chunk_text(content) if content is not None else
             '<span class="note">(its text is not in the log; run the report with the '
             "run's --corpus in place to see it)</span>")
    rank = result.get("rank_if_found")
    where = f"found at rank {esc(rank)}" if rank else \
        f'<span class="fail">not in the top {esc(record.get("k", len(rows)))}</span>'
    table = ("<table><thead><tr><th>rank</th><th>chunk</th><th>score</th><th>content</th></tr>"
             f"</thead><tbody>{''.join(rows)}</tbody></table>" if rows else
             '<p class="note">nothing retrieved</p>')
    return (f'<h4 class="wrap">{esc(record.get("question"))}</h4>{err}'
            f"<p>expected chunk <code>{esc(expected.get('chunk_id'))}</code> "
            f"({esc(expected.get('name'))}, {esc(expected.get('source'))}): {where}</p>"
            f'<blockquote class="expected">{shown}</blockquote>{table}')


def _rows_table(title: str, part: dict | None) -> str:
    """One result table's first rows, matched rows marked (✓, green) and the others (✗)."""
    if not part:
        return f'<div><b>{esc(title)}</b><p class="note">no result table</p></div>'
    cols, rows, matched = part.get("columns") or [], part.get("rows") or [], part.get("matched") or []
    heads = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for i, row in enumerate(rows):
        ok = i < len(matched) and matched[i]
        cls = "hit" if ok else "miss"
        body.append(f'<tr><td class="{cls}">{"✓" if ok else "✗"}</td>'
                    + "".join(f'<td class="{cls}">{"<i>unbound</i>" if v is None else esc(value_text(v))}</td>'
                              for v in row) + "</tr>")
    total = part.get("total", len(rows))
    more = f"first {len(rows)} of {total} rows" if total > len(rows) else f"{total} rows"
    return (f'<div><b>{esc(title)}</b> <span class="note">({esc(more)})</span>'
            f'<table class="rows"><thead><tr><th></th>{heads}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _execution(info: dict | None) -> str:
    info = info or {}
    status = info.get("status")
    text = f"{status}" + (f", {info.get('rows')} rows × {info.get('columns')} columns"
                          if status == "ok" else "")
    if info.get("truncated"):
        text += " (truncated)"
    reason = info.get("reason")
    return (f'<p class="note">{esc(text)}</p>'
            + (f'<p class="reason error">{esc(reason)}</p>' if reason else ""))


def query_details(record: dict) -> str:
    """Gold and predicted queries side by side, how each ran, and their result rows side by
    side (first rows, the chosen column mapping, matched rows marked), then the scores."""
    gold, pred = record["gold_query"], record.get("predicted_query")
    sample = record.get("result_sample")
    parts = [f'<h4 class="wrap">{esc(record.get("question"))}</h4>{_error(record)}'
             '<div class="rowsbox">'
             f'<div><b>gold query</b><pre>{esc(gold)}</pre>{_execution(record.get("gold_execution"))}</div>'
             f'<div><b>predicted query</b><pre>{esc(pred)}</pre>'
             f'{_execution(record.get("predicted_execution"))}</div></div>',
             _why(record), decision_html(record)]
    if isinstance(sample, dict):
        mapping = sample.get("mapping")
        pairs = ", ".join(f"{g} ← {p}" for g, p in zip(sample["gold"].get("columns") or [],
                                                      mapping or [], strict=False))
        parts.append('<p class="note">column mapping (gold ← predicted): '
                     f"{esc(pairs) if mapping else 'none (no mapping was searched)'}; "
                     "✓ marks a row found in the other table (cells compared as text)</p>")
        if record.get("mapping_exact") is False:
            row, bound = (record.get("scores") or {}).get("row_matching_f1"), \
                record.get("row_f1_bound")
            known = isinstance(row, float) and isinstance(bound, float)
            if known and bound <= row:
                # the ceiling is reached: row F1 is optimal; ties were left unsettled
                parts.append(f'<p class="note"><b>exact: false</b> — row F1 {row:.4f} is '
                             "optimal (no mapping can exceed it), but the column-mapping "
                             "search ran out of its budget before settling ties between "
                             "mappings as good: entity F1 may be below the optimum</p>")
            else:
                ceiling = (f"best found {row:.4f}, no mapping can exceed {bound:.4f}; "
                           if known else "")
                parts.append(f'<p class="note"><b>exact: false</b> — {ceiling}the '
                             "column-mapping search ran out of its budget; the figures are "
                             "those of the best mapping found and may be below the optimum</p>")
        parts.append('<div class="rowsbox">' + _rows_table("gold rows", sample.get("gold"))
                     + _rows_table("predicted rows", sample.get("predicted")) + "</div>")
    else:
        parts.append('<p class="note">no result rows in this log (written before they were '
                     "kept; re-score it to add them)</p>")
    parts.append(_test_suite(record.get("test_suite")))
    scores = record.get("scores") or {}
    if scores:
        parts.append(table_of_scores(scores))
    return "".join(parts)


def _why(record: dict) -> str:
    """The record's ``explanation`` (why the tables differ, computed when the case was scored)
    and ``touched`` (what the queries read), as written; nothing when the record has neither."""
    items = record.get("explanation")
    out = ""
    if isinstance(items, list) and items:
        lis = "".join(f'<li class="why-{esc(i.get("kind"))}"><b>{esc(i.get("kind"))}</b>: '
                      f'{esc(i.get("message"))}</li>' for i in items if isinstance(i, dict))
        out += f'<div class="why"><b>why the tables differ</b><ul>{lis}</ul></div>'
    touched = record.get("touched")
    if isinstance(touched, dict) and touched.get("message"):
        out += f'<p class="note touched"><b>what the query touched</b>: {esc(touched["message"])}</p>'
    return out


def _test_suite(ts: dict | None) -> str:
    """--test-suite: the verdict in words and, for a refutation, the distinguishing database
    (its rows; for a graph the triples it added and removed) and both results there."""
    if not isinstance(ts, dict):
        return ""
    verdict = {1.0: "equal", 0.0: "refuted", None: "unknown"}.get(ts.get("match"), "?")
    out = [f'<p class="note"><b>test suite ({esc(verdict)})</b>: {esc(ts.get("reason"))}</p>']
    refuted = ts.get("refuted_by")
    if isinstance(refuted, dict):
        for name, part in (refuted.get("database") or {}).items():
            cols, rows = part.get("columns") or [], part.get("rows") or []
            body = "".join("<tr>" + "".join(f"<td>{'<i>NULL</i>' if v is None else esc(value_text(v))}</td>"
                                            for v in row) + "</tr>" for row in rows)
            out.append(f'<div><b>{esc(name)}</b> <span class="note">({esc(part.get("total"))} rows)</span>'
                       f'<table class="rows"><thead><tr>{"".join(f"<th>{esc(c)}</th>" for c in cols)}'
                       f"</tr></thead><tbody>{body}</tbody></table></div>")
        sample = refuted.get("result_sample") or {}
        out.append('<div class="rowsbox">' + _rows_table("gold rows there", sample.get("gold"))
                   + _rows_table("predicted rows there", sample.get("predicted")) + "</div>")
    return "".join(out)


def table_of_scores(scores: dict) -> str:
    """A record's scores as one compact row."""
    heads = "".join(f'<th class="num">{esc(k)}</th>' for k in scores)
    cells = "".join(f'<td class="num">{esc(fmt(v))}</td>' for v in scores.values())
    return (f'<div class="scroll"><table><thead><tr>{heads}</tr></thead><tbody><tr>{cells}'
            "</tr></tbody></table></div>")


# --- closed-form answers (seed 001) -----------------------------------------------------------
QUESTION_CHARS = 300
"""Longer questions are cut with an ellipsis; the full text is one click away."""


def _long_text(text: object, limit: int = QUESTION_CHARS) -> str:
    """Text cut to ``limit`` characters with an ellipsis, the full text in a fold (and as
    the tooltip)."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return f'<span class="wrap">{esc(text)}</span>'
    return (f'<details class="long"><summary title="{esc(text)}"><span class="wrap">'
            f"{esc(text[:limit - 1].rstrip())}…</span></summary>"
            f'<span class="wrap">{esc(text)}</span></details>')


def sub_answer_line(sub: dict) -> str:
    """``✓ @name: expected [v], got [w]`` (or ``got (none)``), as in the xlsx."""
    got = "(none)" if sub.get("extracted") is None else f"[{sub['extracted']}]"
    mark = "✓" if sub.get("matched") else "✗"
    return f"{mark} @{sub.get('name')}: expected [{sub.get('expected')}], got {got}"


def answers_details(record: dict) -> str:
    """The question (long ones cut, full text on click), the response (or why there is
    none), and one line per sub-answer: ``✓/✗ @name: expected …, got …``."""
    parts = [f"<h4>{_long_text(record.get('question'))}</h4>", _error(record)]
    if record.get("status") == "error":
        state = '<span class="error">no response: the call failed</span>'
    elif record.get("skipped"):
        state = '<span class="fail">missing response (skipped: not scored)</span>'
    elif not record.get("answered"):
        state = '<span class="fail">missing response (scored 0)</span>'
    else:
        state = ""
    if state:
        parts.append(f"<p>{state}</p>")
    parts.append(decision_html(record))
    subs = record["subquestions"]  # not an answers record: the generic renderer shows it
    items = "".join(f'<li class="{"ok" if s.get("matched") else "no"}">'
                    f"{esc(sub_answer_line(s))}</li>" for s in subs)
    scores = record.get("scores") or {}
    counts = (f" — {scores['correct_subquestions']} of {scores['subquestions']} right"
              if "correct_subquestions" in scores else "")
    parts.append(f"<p><b>sub-answers</b>{esc(counts)}</p><ul class=\"subs\">{items}</ul>")
    response = record.get("response")
    if response:
        parts.append(f"<details><summary>response ({len(response)} characters)</summary>"
                     f"<pre>{esc(response)}</pre></details>")
    if record.get("reformatted") is not None:
        parts.append(f"<details><summary>reformatted response</summary>"
                     f"<pre>{esc(record['reformatted'])}</pre></details>")
    return "".join(parts)


#: Task name -> renderer of a record's details (HTML). Other task kinds register here or give
#: their Task class an ``html_details(record)`` method.
RENDERERS: dict[str, Callable[[dict], str]] = {
    "indicator_selection": selection_details,
    "retrieval": retrieval_details,
    "query": query_details,
    "answers": answers_details,
    "freeform": freeform_details,
}


def render_details(task_name: str | None, task: Any, record: dict) -> str:
    """A record's details; the task's ``report_record(record)`` may first add what the log
    lacks (e.g. the expected chunk's text from the corpus)."""
    enrich = getattr(task, "report_record", None)
    if callable(enrich):
        record = enrich(record)
    hook = getattr(task, "html_details", None)
    if callable(hook):
        return hook(record)
    renderer = RENDERERS.get(task_name or "", generic_details)
    try:
        return renderer(record)
    except (KeyError, TypeError, IndexError, AttributeError):
        # a record of an older or unexpected shape: show it rather than fail the report
        return generic_details(record)
