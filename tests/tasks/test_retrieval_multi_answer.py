"""Seed 002's answer side (issue 26, item 3): a generated answer scored beside the retrieval
figures (SQuAD exact match and token F1, hand-computed), and the judge path with a fake judge
put where the task looks it up (``queryeval.engines.judge.make_judge``)."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
import queryeval.engines.judge as judge_mod
from helpers.retrieval_multi_answer import JUDGE, QUESTIONS, TEXT, FakeJudge  # noqa: E402,F401
from queryeval.errors import InputError

# hand-computed (SQuAD normalisation: lower case, punctuation dropped, articles dropped)
# q0: "lowincome families" vs "low income families": 1 common token of 2 and 3 -> F1 0.4
# q1: "one dollar" == "one dollar" -> EM 1; q2: no common token -> 0; q3 no answer; q4 no reference
WANT = {0: (0.0, 0.4), 1: (1.0, 1.0), 2: (0.0, 0.0)}


def test_answer_exact_match_and_f1_hand_computed(answered):
    tmp, questions, responses, ids = answered
    run = qe.evaluate(str(questions), responses=str(responses), k=[1], out=tmp / "runs", reports=True)
    recs = {r["qa_pair_id"]: r for r in run.records}
    for i, (em, f1) in WANT.items():
        r = recs[ids[i]]
        assert r["scores"]["answer_exact_match"] == em
        assert r["scores"]["answer_f1"] == pytest.approx(f1)
        assert r["generated_answer"] == QUESTIONS[i][2]
        assert r["scores"]["recall@1"] == 1.0  # beside the retrieval figures
    for i in (3, 4):  # no generated answer, no reference: no answer scores
        assert "answer_f1" not in recs[ids[i]]["scores"] and "answer_judge" not in recs[ids[i]]
    o = run.overall
    assert o["answer_exact_match"] == pytest.approx(1 / 3)
    assert o["answer_f1"] == pytest.approx((0.4 + 1 + 0) / 3)
    assert o["answered_questions"] == 3
    assert "answer_correct" not in o  # only with a judge
    assert run.results.vector("answer_f1") == pytest.approx({ids[i]: WANT[i][1] for i in WANT})
    # the seed's layout: results CSV one row per retrieved chunk, metrics file keys
    doc = json.loads((run.folder / f"metrics_{run.batch_id}.json").read_text())
    assert doc["overall_metrics"]["answer_f1"] == pytest.approx(o["answer_f1"])


def test_answer_must_be_text(answered):
    tmp, questions, responses, ids = answered
    lines = responses.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["answer"] = 3
    responses.write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    with pytest.raises(InputError, match=r"responses.jsonl:1: .*answer: must be text"):
        qe.evaluate(str(questions), responses=str(responses), k=[1], out=tmp / "runs")


def test_answer_from_a_system_call(answered):
    tmp, questions, _, ids = answered
    gen = {q: g for q, _, g in QUESTIONS}

    def rag(request):
        out = {"retrieved_chunks": [{"chunk_id": "c1", "score": 1.0, "content": TEXT}]}
        if gen[request["question"]] is not None:
            out["answer"] = gen[request["question"]]
        return out

    run = qe.evaluate(str(questions), rag, k=[1], out=tmp / "sys", system_name="rag")
    assert run.overall["answer_f1"] == pytest.approx((0.4 + 1 + 0) / 3)


def test_judge_decides_what_exact_match_did_not(answered, monkeypatch):
    tmp, questions, responses, ids = answered
    fake = FakeJudge(ids)
    made = []
    monkeypatch.setattr(judge_mod, "make_judge", lambda options: made.append(options) or fake)
    run = qe.evaluate(str(questions), responses=str(responses), k=[1], judge=JUDGE, out=tmp / "runs")
    recs = {r["qa_pair_id"]: r for r in run.records}
    # inconclusive (the default): q0 and q2 (EM 0) go to the judge, q1 (EM 1) does not
    assert sorted(i.case_id for i in fake.items) == sorted([ids[0], ids[2]])
    item = next(i for i in fake.items if i.case_id == ids[0])
    assert (item.question, item.reference, item.response) == QUESTIONS[0]
    assert len(made) == 1 and made[0].model == "fake-model" and fake.closed
    assert recs[ids[0]]["answer_judge"]["verdict"] == "pass"
    assert recs[ids[0]]["answer_judge"]["reason"] == "same meaning"
    assert recs[ids[2]]["answer_judge"]["verdict"] == "fail"
    assert "answer_judge" not in recs[ids[1]]
    correct = {ids[0]: 1.0, ids[1]: 1.0, ids[2]: 0.0}
    assert {c: recs[c]["scores"]["answer_correct"] for c in correct} == correct
    assert run.overall["answer_correct"] == pytest.approx(2 / 3)
    # the exact match stays what it was
    assert run.overall["answer_exact_match"] == pytest.approx(1 / 3)
    # the batch file records the judge (judge_info)
    batch = json.loads((run.folder / f"batch_{run.batch_id}.json").read_text())
    assert batch["evaluation_config"]["judge"]["model"] == "fake-model"


def test_judge_error_is_recorded_and_never_passes(answered, monkeypatch):
    tmp, questions, responses, ids = answered
    fake = FakeJudge(["none", "none", "none"])  # raises on every item
    monkeypatch.setattr(judge_mod, "make_judge", lambda options: fake)
    run = qe.evaluate(str(questions), responses=str(responses), k=[1],
                      judge={**JUDGE, "when": "always"}, out=tmp / "runs")
    recs = {r["qa_pair_id"]: r for r in run.records}
    assert len(fake.items) == 3  # always: q1 (EM 1) is asked too
    v = recs[ids[0]]["answer_judge"]
    assert v["verdict"] is None and v["error"]["kind"] == "judge_call" and "endpoint down" in v["error"]["message"]
    assert recs[ids[0]]["scores"]["answer_correct"] == 0.0
    assert recs[ids[1]]["scores"]["answer_correct"] == 1.0  # decided by the exact match
    assert run.overall["errors"] == 0  # the system's calls did not fail; the run went on


def test_judge_that_cannot_be_made_is_recorded(answered):
    """The real ``make_judge`` (not built on this branch) raises: every judged case records
    the error and fails; the run finishes."""
    tmp, questions, responses, ids = answered
    run = qe.evaluate(str(questions), responses=str(responses), k=[1], judge=JUDGE, out=tmp / "runs")
    recs = {r["qa_pair_id"]: r for r in run.records}
    assert recs[ids[0]]["answer_judge"]["error"]["kind"] == "judge_call"
    assert run.overall["answer_correct"] == pytest.approx(1 / 3)


def test_judge_never_makes_no_call(answered, monkeypatch):
    tmp, questions, responses, ids = answered
    monkeypatch.setattr(judge_mod, "make_judge", lambda options: pytest.fail("no judge expected"))
    run = qe.evaluate(str(questions), responses=str(responses), k=[1],
                      judge={**JUDGE, "when": "never"}, out=tmp / "runs")
    assert run.overall["answer_correct"] == pytest.approx(1 / 3)
    assert not any("answer_judge" in r for r in run.records)
