"""The freeform task's use of the LLM judge: when to ask, what to ask, how a verdict (or
its absence) decides a case. The client itself is :func:`queryeval.systems.judge.make_judge`
(looked up when the first case needs it, so a run that never asks never builds it)."""

from __future__ import annotations

import math
import threading
from typing import Any

from queryeval.systems.judge import JudgeItem, JudgeOptions, JudgeVerdict

AGREEMENT_KEYS = ("kappa", "tpr", "tnr", "accuracy", "n")
"""Figures of a recorded judge-check copied into a run's overall metrics as
``judge_check_<key>``."""


class CaseJudge:
    """The judge of one run: built on first use (thread-safe), closed with the task."""

    def __init__(self, options: JudgeOptions | None) -> None:
        self.options = options
        self._judge: Any = None
        self._lock = threading.Lock()

    def wanted(self, rule: str) -> bool:
        """Whether a case the ladder left at ``rule`` goes to the judge (``when``)."""
        o = self.options
        if o is None or o.when == "never":
            return False
        return o.when == "always" or rule == "inconclusive"

    def info(self) -> dict:
        """What the batch file records: the judge (model, endpoint, ``when``, prompt and its
        version) and the agreement its judge-check measured (None when none)."""
        if self.options is None:
            return {}
        from queryeval.systems import judge as judge_mod

        info = dict(judge_mod.judge_info(self.options))
        info["agreement"] = judge_mod.recorded_agreement(self.options)
        return {"judge": info}

    def ask(self, record: dict) -> JudgeVerdict:
        """The judge's verdict on one case; a call that raises is a ``judge_call`` error and
        a reply without a verdict a ``judge_malformed`` one (never a pass)."""
        from queryeval.systems import judge as judge_mod

        with self._lock:
            if self._judge is None:
                self._judge = judge_mod.make_judge(self.options)
        ref = record["reference"]
        reference = ref["answer"]
        if ref.get("aliases"):
            reference += " (also accepted: " + "; ".join(ref["aliases"]) + ")"
        if ref.get("unit"):
            reference += f" [unit: {ref['unit']}]"
        item = JudgeItem(case_id=str(record["case_id"]), question=record.get("question") or "",
                         reference=reference, response=record.get("response") or "")
        try:
            verdict = self._judge.judge(item)
        except Exception as exc:  # noqa: BLE001 - a judge failure is recorded on its case
            return JudgeVerdict(None, error={"kind": "judge_call",
                                             "message": f"{type(exc).__name__}: {exc}"})
        if verdict.error is None and verdict.verdict not in ("pass", "fail"):
            return JudgeVerdict(None, reason=verdict.reason, model=verdict.model,
                                prompt_version=verdict.prompt_version,
                                error={"kind": "judge_malformed", "message": "no verdict"})
        return verdict

    def close(self) -> None:
        with self._lock:
            judge, self._judge = self._judge, None
        if judge is not None:
            judge.close()


def verdict_record(v: JudgeVerdict) -> dict:
    """A verdict as the case's record stores it (``record["judge"]``)."""
    return {"verdict": v.verdict, "reason": v.reason, "error": v.error, "model": v.model,
            "prompt_version": v.prompt_version, "cached": v.cached}


def judged(verdict: str | None, rule: str, judge: dict | None,
           options: JudgeOptions | None) -> tuple[bool, str, dict | None]:
    """``(passed, decided_by, error)`` of a case from the ladder's verdict and rule and the
    stored judge verdict (None: not asked). The judge decides an inconclusive case, or every
    case under ``when=always``; a judge error fails the case as an error (``decided_by``
    ``error``); a stored verdict is ignored when the options no longer ask for it."""
    asked = judge is not None and options is not None and options.when != "never" and (
        options.when == "always" or rule == "inconclusive")
    if not asked:
        return verdict == "pass", rule, None
    if judge.get("error") or judge.get("verdict") not in ("pass", "fail"):
        error = judge.get("error") or {"kind": "judge_malformed", "message": "no verdict"}
        return False, "error", dict(error)
    return judge["verdict"] == "pass", "judge", None


def _figure(value: Any) -> float | None:
    if isinstance(value, dict):
        value = next((value[k] for k in ("value", "estimate", "point") if k in value), None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def agreement_figures(options: JudgeOptions | None) -> dict[str, float]:
    """The recorded judge-check's figures for this judge, as ``judge_check_<key>`` (none
    when there is no judge or no check)."""
    if options is None:
        return {}
    from queryeval.systems import judge as judge_mod

    agreement = judge_mod.recorded_agreement(options)
    if not isinstance(agreement, dict):
        return {}
    out = {}
    for key in AGREEMENT_KEYS:
        value = _figure(agreement.get(key))
        if value is not None:
            out[f"judge_check_{key}"] = int(value) if key == "n" else value
    return out
