"""The LLM judge in the task kinds that execute or extract (``query``, ``answers``): where
the deterministic scoring cannot decide, the judge's verdict decides the case, and the record
says so (``decided_by: judge``, ``judge: {verdict, reason, why, model, prompt_version}``).

For the query task (seed 003) execution cannot decide when:

* ``gold_failed``: the gold query itself fails, so there is no table to compare with;
* ``unscorable``: the predicted table could not be compared (the comparison raised);
* ``inexact_mapping``: the column-mapping search ran out of budget below a perfect match;
* ``equivalence_unknown``: an equivalence check (``record["equivalence"]["verdict"]``)
  answered ``unknown``.

Under ``when=always`` every case with a predicted query is judged. A case the judge decides
passes on its verdict (``--repeats``' pass rate, the HTML pass column); its F1 figures stay
those of execution (a gold failure enters no mean, as before). A judge that gives no verdict
(``judge_malformed``, ``judge_call``) makes the case an error: never a pass.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from queryeval.systems.judge import JudgeOptions
from queryeval.tasks.content import Note

_LOCK = threading.Lock()

EVIDENCE_CHARS = 4000
"""The most characters of result rows shown to the judge (the first rows of each table)."""


def judge_client(task: Any) -> Any:
    """The task's judge, made on first use (the runner scores cases on several threads)."""
    from queryeval.systems.judge import make_judge

    with _LOCK:
        client = task.__dict__.get("_judge_client")
        if client is None:
            client = task.__dict__["_judge_client"] = make_judge(task.options.judge)
    return client


def close_judge(task: Any) -> None:
    client = task.__dict__.pop("_judge_client", None)
    if client is not None:
        client.close()


def judge_batch_info(options: JudgeOptions | None) -> dict:
    """What the run log's ``evaluation_config`` records about the judge (or nothing)."""
    from queryeval.systems.judge import judge_info, recorded_agreement

    if options is None:
        return {}
    return {"judge": {**judge_info(options), "agreement": recorded_agreement(options)}}


def _ci(f: dict) -> str:
    if f.get("value") is None:
        return "n/a"
    lo, hi = f.get("ci_low"), f.get("ci_high")
    return f"{f['value']:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None else "")


def judge_note(options: JudgeOptions, judged: Any) -> Note:
    """The summary line of a judged run: how many cases the judge decided and, when a
    ``judge-check`` was recorded for this model and prompt version, its agreement."""
    from queryeval.systems.judge import recorded_agreement
    from queryeval.systems.judge.prompt import PROMPT_VERSION

    count = "no" if not judged else (f"{judged:g}" if isinstance(judged, float) else str(judged))
    head = (f"judge {options.model} (prompt {PROMPT_VERSION}, when={options.when}): "
            f"{count} case(s) decided by the judge.")
    check = recorded_agreement(options)
    if check is None:
        return Note(head + " No judge-check is recorded for this model and prompt version: "
                    "its agreement with human labels is unmeasured (queryeval judge-check).",
                    "warning")
    return Note(head + f" Measured agreement on {check.get('n')} labelled case(s): "
                f"kappa {_ci(check.get('kappa') or {})}, TPR {_ci(check.get('tpr') or {})}, "
                f"TNR {_ci(check.get('tnr') or {})}, accuracy "
                f"{_ci(check.get('accuracy') or {})}.")


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
    if stored.get("error"):
        record["status"] = "error"
        record["error_kinds"] = sorted({*record.get("error_kinds", []), stored["error"]["kind"]})
        record["decided_by"] = "inconclusive"
        return record
    record["decided_by"] = "judge"
    if inconclusive(record) == "gold_failed":  # decided after all: no longer the case's error
        record["error_kinds"] = [k for k in record.get("error_kinds", []) if k != "gold_query"]
        record["status"] = "error" if record["error_kinds"] else "ok"
    return record


def _ask(task: Any, record: dict, why: str) -> dict:
    from queryeval.systems.judge import JudgeItem

    judge = judge_client(task)
    v = judge.judge(JudgeItem(
        case_id=str(record["case_id"]), question=record.get("question") or "",
        reference=record["gold_query"], response=record["predicted_query"], kind="query",
        context=_evidence(record, why)))
    out = {"verdict": v.verdict, "reason": v.reason, "why": why, "model": v.model,
           "prompt_version": v.prompt_version, "cached": v.cached}
    if v.error:
        out["error"] = v.error
    return out


def judge_verdict(record: dict) -> bool | None:
    """The judge's pass/fail for a case it decided (None: the scores decide)."""
    if record.get("decided_by") != "judge" or record.get("status") == "error":
        return None
    return (record.get("judge") or {}).get("verdict") == "pass"
