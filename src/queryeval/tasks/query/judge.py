"""The LLM judge in the task kinds that execute or extract (``query``, ``answers``): where
the deterministic scoring cannot decide, the judge's verdict decides the case, and the record
says so (``decided_by``, ``judge``: the record fields of :mod:`queryeval.tasks.judging`, the
one path every task asks the judge through).

For the query task (seed 003) execution cannot decide when:

* ``gold_failed``: the gold query itself fails, so there is no table to compare with;
* ``unscorable``: the predicted table could not be compared (the comparison raised);
* ``inexact_mapping``: the column-mapping search ran out of budget below a perfect match;
* ``equivalence_unknown``: an equivalence check (``record["equivalence"]["verdict"]``)
  answered ``unknown``.

Under ``when=always`` every case with a predicted query is judged. A case the judge decides
passes on its verdict (``--repeats``' pass rate, the HTML pass column); its F1 figures stay
those of execution (a gold failure enters no mean, as before). A judge that gives no verdict
(``judge_malformed``, ``judge_call``) makes the case an error (``decided_by: error``): never
a pass.
"""

from __future__ import annotations

import json
from typing import Any

from queryeval.engines.judge import JudgeItem, JudgeOptions
from queryeval.tasks.judging import judge_error

EVIDENCE_CHARS = 4000
"""The most characters of result rows shown to the judge (the first rows of each table)."""


def inconclusive(record: dict) -> str | None:
    """Why execution cannot decide a query case (None: it decided)."""
    if record.get("predicted_query") is None or record.get("error"):
        return None  # no query to judge, or the system's call failed
    if record.get("scores") is None and "gold_query" in record.get("error_kinds", []):
        return "gold_failed"
    if (record.get("equivalence") or {}).get("verdict") == "unknown":
        return "equivalence_unknown"
    if (record.get("predicted_execution") or {}).get("status") == "unscorable":
        return "unscorable"
    if record.get("mapping_exact") is False and (record.get("scores") or {}).get(
            "exact_match_f1") != 1.0:
        return "inexact_mapping"
    return None


def _evidence(record: dict, why: str) -> str:
    parts = [f"Why the scorer could not decide: {why}."]
    for name, key in (("reference", "gold_execution"), ("assistant's", "predicted_execution")):
        info = record.get(key) or {}
        if info:
            status = info.get("status")
            parts.append(f"Running the {name} query: {status}"
                         + (f" ({info['reason']})" if info.get("reason") else ""))
    sample = record.get("result_sample")
    if sample:
        text = json.dumps({k: sample[k] for k in ("gold", "predicted") if k in sample},
                          ensure_ascii=False)
        parts.append("First result rows: " + text[:EVIDENCE_CHARS])
    return "\n".join(parts)


def settle(task: Any, record: dict, *, ask: bool = True) -> dict:
    """Ask the judge about a scored query record where execution cannot decide (``ask``:
    call it; a rescore keeps the stored verdict and never calls), then apply the verdict."""
    opts: JudgeOptions | None = task.options.judge
    if opts is None:
        return record
    stored = record.get("judge")
    if ask:
        why = None
        if opts.when == "always" and record.get("predicted_query") is not None \
                and not record.get("error"):
            why = "always"
        elif opts.when == "inconclusive":
            why = inconclusive(record)
        stored = _ask(task, record, why) if why else None
    record["judge"] = stored
    if stored is None:
        record["decided_by"] = "inconclusive" if inconclusive(record) else "rules"
        return record
    error = judge_error(stored)
    if error:
        record["status"] = "error"
        record["error_kinds"] = sorted({*record.get("error_kinds", []), error["kind"]})
        record["decided_by"] = "error"
        return record
    record["decided_by"] = "judge"
    if inconclusive(record) == "gold_failed":  # decided after all: no longer the case's error
        record["error_kinds"] = [k for k in record.get("error_kinds", []) if k != "gold_query"]
        record["status"] = "error" if record["error_kinds"] else "ok"
    return record


def _ask(task: Any, record: dict, why: str) -> dict:
    return task.case_judge.ask(JudgeItem(
        case_id=str(record["case_id"]), question=record.get("question") or "",
        reference=record["gold_query"], response=record["predicted_query"], kind="query",
        context=_evidence(record, why)), why)


def judge_verdict(record: dict) -> bool | None:
    """The judge's pass/fail for a case it decided (None: the scores decide)."""
    if record.get("decided_by") != "judge" or record.get("status") == "error":
        return None
    return (record.get("judge") or {}).get("verdict") == "pass"
