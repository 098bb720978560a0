"""The retrieval task's answer judge (``judge=...``) prints the judge's note on the console, as
freeform, answers and query do (tasks/judging.py), from the run's judge_decided and
judge_errors figures (counted once, in the aggregate, from each record's ``answer_judge``)."""

from __future__ import annotations

import json

import queryeval as qe
import queryeval.engines.judge as judge_mod
from helpers.retrieval_multi_answer import JUDGE, FakeJudge  # noqa: F401
from queryeval.engines.judge.prompt import PROMPT_VERSION


def _console(run: qe.Run) -> str:
    return " ".join(str(run).split())


def test_retrieval_judge_note_counts_the_cases_it_decided(answered, monkeypatch):
    tmp, questions, responses, ids = answered
    monkeypatch.setattr(judge_mod, "make_judge", lambda options: FakeJudge(ids))
    run = qe.evaluate(str(questions), responses=str(responses), k=[1], judge=JUDGE,
                      out=tmp / "runs", reports=True)
    # q0 and q2 (exact match 0) went to the judge, which decided both; q1 needed no judge
    assert (run.overall["judge_decided"], run.overall["judge_errors"]) == (2, 0)
    doc = json.loads((run.folder / f"metrics_{run.batch_id}.json").read_text())
    assert doc["overall_metrics"]["judge_decided"] == 2
    text = _console(run)
    assert (f"judge fake-model (prompt {PROMPT_VERSION}, when=inconclusive): 2 case(s) "
            "decided by the judge. No judge-check is recorded") in text


def test_retrieval_judge_note_counts_the_cases_left_without_a_verdict(answered, monkeypatch):
    tmp, questions, responses, ids = answered
    monkeypatch.setattr(judge_mod, "make_judge", lambda options: FakeJudge(["none"] * 3))
    run = qe.evaluate(str(questions), responses=str(responses), k=[1],
                      judge={**JUDGE, "when": "always"}, out=tmp / "runs")
    assert (run.overall["judge_decided"], run.overall["judge_errors"]) == (0, 3)
    assert ("when=always): no case(s) decided by the judge, 3 left without a verdict "
            "(errors).") in _console(run)


def test_retrieval_without_a_judge_has_no_judge_note(answered):
    tmp, questions, responses, _ = answered
    run = qe.evaluate(str(questions), responses=str(responses), k=[1], out=tmp / "runs")
    assert "judge_decided" not in run.overall
    assert "decided by the judge" not in _console(run)
