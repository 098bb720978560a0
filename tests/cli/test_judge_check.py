"""``queryeval judge-check`` and ``qe.judge_agreement`` end to end against the fake judge."""

from __future__ import annotations

import json
import warnings

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

import queryeval as qe
from helpers.judge_fake import FakeJudgeServer, completion, contains_rule, verdict_reply
from queryeval.cli.app import main
from queryeval.engines.judge import JudgeOptions, recorded_agreement
from queryeval.engines.judge.prompt import PROMPT_VERSION
from queryeval.errors import InputError


@pytest.fixture
def fake():
    server = FakeJudgeServer()  # pass iff the reference is in the response
    yield server
    server.close()


def _labels(tmp_path, n=24):
    """Case i: the response contains the reference when i % 3 != 0; the human label is
    pass when i % 4 != 0. So the judge (containment) and the human disagree where those
    two differ."""
    rows = []
    for i in range(n):
        ref = f"val{i}"
        resp = f"it is {ref}" if i % 3 else "no idea"
        rows.append({"id": f"q{i}", "question": f"question {i}?", "reference": ref,
                     "response": resp, "label": "pass" if i % 4 else "fail"})
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    human = [r["label"] for r in rows]
    judge = ["pass" if i % 3 else "fail" for i in range(n)]
    return path, human, judge


def test_judge_agreement_matches_scikit_learn(fake, tmp_path):
    path, human, judge = _labels(tmp_path)
    rep = qe.judge_agreement(path, fake.options(tmp_path), out=tmp_path / "rep.json")
    assert rep.n == 24 and rep.prompt_version == PROMPT_VERSION
    assert rep.figures["confusion"] == confusion_matrix(human, judge, labels=["fail", "pass"]).tolist()
    assert rep.kappa == pytest.approx(cohen_kappa_score(human, judge))
    (tn, fp), (fn, tp) = rep.figures["confusion"]
    assert rep.figures["tpr"]["value"] == pytest.approx(tp / (tp + fn))
    assert rep.figures["tnr"]["value"] == pytest.approx(tn / (tn + fp))
    assert rep.figures["accuracy"]["value"] == pytest.approx((tn + tp) / 24)
    want = sorted(f"q{i}" for i in range(24) if human[i] != judge[i])
    assert sorted(d["id"] for d in rep.disagreements) == want
    doc = json.loads((tmp_path / "rep.json").read_text())
    assert doc["figures"]["kappa"]["value"] == pytest.approx(rep.kappa)
    for k in ("kappa", "tpr", "tnr", "accuracy"):
        f = rep.figures[k]
        assert f["ci_low"] <= f["value"] <= f["ci_high"]
    # recorded for this model and prompt version: a run with this judge finds it
    found = recorded_agreement(JudgeOptions(**fake.options(tmp_path)))
    assert found["n"] == 24 and found["kappa"]["value"] == pytest.approx(rep.kappa)
    assert recorded_agreement(JudgeOptions(**fake.options(tmp_path, model="other"))) is None


def test_repeats_bypass_the_cache_and_measure_self_consistency(fake, tmp_path):
    path, _, _ = _labels(tmp_path, n=6)
    # q0 flips with each request about it; every other case answers by containment
    asked = []

    def script(n, body):
        if "question 0?" in body["messages"][1]["content"]:
            asked.append(n)
            return verdict_reply("pass" if len(asked) % 2 else "fail")
        return contains_rule(body)

    fake.script = script
    qe.judge_agreement(path, fake.options(tmp_path), record=False)  # warms the cache
    before = len(fake.requests)
    rep = qe.judge_agreement(path, fake.options(tmp_path), repeats=3, record=False)
    assert len(fake.requests) - before == 18  # 6 cases x 3 rounds, none from the cache
    s = rep.self_consistency
    assert (s["cases"], s["repeats"], s["undecided"]) == (6, 3, 0)
    assert s["unanimous"] == pytest.approx(5 / 6)
    assert s["pairwise"] == pytest.approx((5 + 1 / 3) / 6)


def test_undecided_cases_are_listed_and_enter_no_figure(fake, tmp_path):
    path, human, judge = _labels(tmp_path, n=8)
    fake.script = lambda n, body: (completion("nope") if "question 1?" in body["messages"][1]["content"]
                                   else contains_rule(body))
    rep = qe.judge_agreement(path, fake.options(tmp_path, malformed_retries=0), record=False)
    assert [u["id"] for u in rep.undecided] == ["q1"]
    assert rep.undecided[0]["error"]["kind"] == "judge_malformed"
    keep = [i for i in range(8) if i != 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = cohen_kappa_score([human[i] for i in keep], [judge[i] for i in keep])
    assert rep.n == 7 and rep.kappa == pytest.approx(k)


def test_cli_judge_check_end_to_end(fake, tmp_path, capsys):
    path, human, judge = _labels(tmp_path)
    out = tmp_path / "check.json"
    code = main(["judge-check", str(path), "--judge-model", "judge-test",
                 "--judge-base-url", fake.url, "--out", str(out),
                 "--checks-dir", str(tmp_path / "checks"), "--cache-dir", str(tmp_path / "c")])
    text = capsys.readouterr().out
    assert code == 0, text
    doc = json.loads(out.read_text())
    assert doc["figures"]["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judge))
    assert "Cohen's kappa" in text and f"{doc['figures']['kappa']['value']:.3f}" in text
    assert "disagreement(s)" in text and "recorded:" in text
    [rec] = (tmp_path / "checks").glob("*.json")
    assert json.loads(rec.read_text())["prompt_version"] == PROMPT_VERSION
    # a run with that judge carries the measured agreement in its log
    cases = [{"id": "a", "conversation": [{"role": "user", "content": "q?",
              "target": {"answers": [{"name": "n", "value": "1"}]}}]}]
    run = qe.evaluate(cases, responses=[{"id": "a", "response": "one is 1"}],
                      out=tmp_path / "runs", judge={"model": "judge-test", "base_url": fake.url,
                                                    "checks_dir": str(tmp_path / "checks"),
                                                    "cache_dir": str(tmp_path / "c")})
    agreement = json.loads(run.path.read_text())["evaluation_config"]["judge"]["agreement"]
    assert agreement["kappa"]["value"] == pytest.approx(doc["figures"]["kappa"]["value"])


@pytest.mark.parametrize("line, field", [
    ({"id": "x", "question": "q", "reference": "r", "response": "s"}, "label"),
    ({"id": "x", "question": "q", "reference": "r", "response": "s", "label": "yes"}, "label"),
    ({"id": "x", "question": 3, "reference": "r", "response": "s", "label": "pass"}, "question"),
])
def test_bad_labels_are_one_line(tmp_path, capsys, line, field):
    path = tmp_path / "labels.jsonl"
    good = {"id": "ok", "question": "q", "reference": "r", "response": "s", "label": "pass"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(InputError) as err:
        qe.judge_agreement(path, model="m", base_url="http://127.0.0.1:9/v1", record=False)
    assert err.value.line == 2 and err.value.field == field
    code = main(["judge-check", str(path), "--judge-model", "m", "--judge-base-url",
                 "http://127.0.0.1:9/v1", "--out", str(tmp_path / "o.json")])
    msg = capsys.readouterr().err
    assert code == 2 and ":2:" in msg and "Traceback" not in msg
