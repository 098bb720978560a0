"""Seed 002's answer side: a generated answer scored against the case's reference answer.

When the case has a reference answer (``target.retrieval.answer``) and the system's output
has an ``answer`` (``{"retrieved_chunks": [...], "answer": "..."}``), the record gets
``generated_answer`` and two scores beside the retrieval figures: ``answer_exact_match`` and
``answer_f1`` (SQuAD normalisation, :mod:`queryeval.metrics.squad`). With the task option
``judge`` (:class:`~queryeval.engines.judge.JudgeOptions`), answers the exact match did not
decide go to the judge (``when="always"``: every answer); its verdict is recorded on the
case as ``answer_judge`` and ``answer_correct`` is 1.0 when the exact match or the judge
passed it (a judge error never passes).
"""

from __future__ import annotations

from typing import Any

from queryeval.metrics.squad import DEFAULT_VERSION, SquadVersion, exact_match, token_f1

ANSWER_KEY = "answer"
"""The key of the generated answer in a system's output (and in a recorded retrieval line)."""

ANSWER_METRICS = ("answer_exact_match", "answer_f1")


def parse_answer(raw: Any) -> str | None:
    """The generated answer of an output object, None when it has none."""
    if not isinstance(raw, dict) or raw.get(ANSWER_KEY) is None:
        return None
    value = raw[ANSWER_KEY]
    if not isinstance(value, str):
        raise ValueError(f"{ANSWER_KEY}: must be text, got {type(value).__name__}")
    return value


def answer_scores(reference: str, generated: str | None,
                  squad: SquadVersion = DEFAULT_VERSION) -> dict[str, float]:
    """``answer_exact_match`` and ``answer_f1`` under SQuAD ``squad`` (v2.0 or v1.1:
    :mod:`queryeval.metrics.squad`); empty when either side is missing."""
    if generated is None or not reference:
        return {}
    return {"answer_exact_match": exact_match(reference, generated),
            "answer_f1": token_f1(reference, generated, squad)}


class AnswerJudge:
    """The task's judge, made on first use (``make_judge`` is looked up then, so a test or a
    plugin may replace it) and closed with the task."""

    def __init__(self, options: Any) -> None:
        self.options = options
        self._judge = None

    def needed(self, exact: float) -> bool:
        when = self.options.when
        return when == "always" or (when == "inconclusive" and exact < 1.0)

    def verdict(self, case_id: str, question: str, reference: str, generated: str) -> dict:
        """The judge's verdict as the record stores it; a failing call is an error verdict."""
        from queryeval.engines import judge as judge_mod

        try:
            if self._judge is None:
                self._judge = judge_mod.make_judge(self.options)
            v = self._judge.judge(judge_mod.JudgeItem(
                case_id=case_id, question=question, reference=reference, response=generated))
        except Exception as exc:  # noqa: BLE001 - a failing judge is recorded, the run goes on
            return {"verdict": None, "reason": "", "passed": False,
                    "error": {"kind": "judge_call", "message": f"{type(exc).__name__}: {exc}"[:500]}}
        return {"verdict": v.verdict, "reason": v.reason, "passed": bool(v.passed), "error": v.error,
                "model": v.model, "prompt_version": v.prompt_version, "cached": v.cached}

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()
            self._judge = None


def score_answer(record: dict, reference: str, generated: str | None,
                 judge: AnswerJudge | None, squad: SquadVersion = DEFAULT_VERSION) -> None:
    """Add the answer's fields and scores to ``record`` (nothing without both answers)."""
    scores = answer_scores(reference, generated, squad)
    if not scores or generated is None:
        return
    record["generated_answer"] = generated
    if judge is not None:
        passed = scores["answer_exact_match"] == 1.0
        if judge.needed(scores["answer_exact_match"]):
            v = judge.verdict(str(record.get("qa_pair_id")), str(record.get("question")),
                              reference, generated)
            record["answer_judge"] = v
            passed = passed or v["passed"]
        scores["answer_correct"] = 1.0 if passed else 0.0
    record["answer_scores"] = scores


def answer_figures(values: dict[str, Any]) -> dict[str, Any]:
    """The run's answer figures from running means (:class:`~queryeval.tasks.accum.Values`
    per score name): the mean of each, and ``answered_questions``."""
    out: dict[str, Any] = {}
    n = 0
    for name, col in values.items():
        out[name] = col.mean()
        n = max(n, len(col))
    if out:
        out["answered_questions"] = n
    return out
