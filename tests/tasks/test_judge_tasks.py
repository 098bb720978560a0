"""The judge in the answers task (responses with no ``@name[value]``) and the query task
(where execution cannot decide), against the loopback fake judge."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from helpers.judge_fake import completion, verdict_reply
from helpers.judge_fixtures import values_judge  # noqa: F401 - the fixture "fake", one per test
from helpers.judge_tasks import CASES, QCASES, QRESP, RESPONSES  # noqa: E402,F401
from queryeval.engines.judge.checks import save_check
from queryeval.engines.judge.prompt import ANSWER_PROMPT, PROMPT_VERSION


def _records(run) -> dict:
    return {r["case_id"]: r for r in run.records}


def test_answers_judges_only_inconclusive_cases(fake, tmp_path):
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs",
                      judge=fake.options(tmp_path))
    assert len(fake.requests) == 2  # c2 and c3 only
    recs = _records(run)
    assert {c: r["decided_by"] for c, r in recs.items()} == {
        "c0": "rules", "c1": "rules", "c2": "judge", "c3": "judge", "c4": "rules"}
    assert {c: r["scores"]["all_correct"] for c, r in recs.items()} == {
        "c0": 1.0, "c1": 0.0, "c2": 1.0, "c3": 0.0, "c4": 0.0}
    assert recs["c2"]["judge"]["reason"] == "values found" and recs["c2"]["judge"]["why"] == "inconclusive"
    assert recs["c2"]["rules_verdict"] == "fail" and recs["c0"]["judge"] is None
    assert run.overall["judge_decided"] == 2 and run.overall["abq"] == pytest.approx(2 / 5)
    batch = json.loads(run.path.read_text())["evaluation_config"]["judge"]
    assert batch["prompt_version"] == PROMPT_VERSION and batch["prompt"] == ANSWER_PROMPT
    assert batch["model"] == "judge-test" and batch["agreement"] is None
    user = fake.requests[0]["body"]["messages"][1]["content"]
    assert "<reference>\nn: 2\n</reference>" in user or "<reference>\nn: 3\n</reference>" in user
    # the CSV carries what decided each case and the judge's reason
    csv_text = (run.folder / f"results_{run.batch_id}.csv").read_text()
    assert "decided_by" in csv_text.splitlines()[0] and "value missing" in csv_text


def test_answers_without_judge_unchanged(tmp_path):
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs")
    recs = _records(run)
    assert "decided_by" not in recs["c2"] and "judge_decided" not in run.overall
    assert recs["c2"]["scores"]["all_correct"] == 0.0


def test_answers_when_never_and_always(fake, tmp_path):
    never = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "n",
                        judge=fake.options(tmp_path, when="never"))
    assert fake.requests == []
    assert _records(never)["c2"]["decided_by"] == "inconclusive"
    assert _records(never)["c2"]["scores"]["all_correct"] == 0.0
    always = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "a",
                         judge=fake.options(tmp_path, when="always"))
    assert len(fake.requests) == 4  # every answered case
    recs = _records(always)
    # c1's "@n[7]": the rules fail it, and so does the judge (7 is not 1); c2 passes
    assert recs["c1"]["decided_by"] == "judge" and recs["c1"]["rules_verdict"] == "fail"
    assert recs["c0"]["judge"]["why"] == "always" and recs["c0"]["rules_verdict"] == "pass"
    assert [recs[c]["scores"]["all_correct"] for c in ("c0", "c1", "c2", "c3")] == [1, 0, 1, 0]
    assert always.overall["judge_decided"] == 4


def test_answers_malformed_judge_is_an_error_never_a_pass(fake, tmp_path):
    fake.script = lambda n, body: completion("PASS")
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs",
                      judge=fake.options(tmp_path, malformed_retries=1))
    recs = _records(run)
    assert recs["c2"]["status"] == "error" and recs["c2"]["error_kinds"] == ["judge_malformed"]
    assert recs["c2"]["scores"]["all_correct"] == 0.0
    assert run.overall["errors_by_kind"] == {"judge_malformed": 2}
    assert len(fake.requests) == 4  # 2 cases x (1 + 1 retry)


def test_answers_rescore_keeps_the_verdict_and_calls_nothing(fake, tmp_path):
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs",
                      judge=fake.options(tmp_path))
    from queryeval.tasks.answers.task import AnswersTask

    task = AnswersTask({"judge": fake.options(tmp_path)})
    again = {r["case_id"]: task.rescore_record(r) for r in run.records}
    assert len(fake.requests) == 2
    assert again["c2"]["scores"]["all_correct"] == 1.0 and again["c2"]["decided_by"] == "judge"


def test_recorded_agreement_lands_in_the_run_log(fake, tmp_path):
    opts = fake.options(tmp_path)
    save_check({"model": "judge-test", "prompt_version": PROMPT_VERSION, "n": 40,
                "kappa": {"value": 0.8, "ci_low": 0.6, "ci_high": 0.95},
                "tpr": {"value": 0.9, "ci_low": 0.8, "ci_high": 1.0},
                "tnr": {"value": 0.85, "ci_low": 0.7, "ci_high": 1.0},
                "accuracy": {"value": 0.875, "ci_low": 0.77, "ci_high": 0.97}},
               opts["checks_dir"])
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs", judge=opts)
    agreement = json.loads(run.path.read_text())["evaluation_config"]["judge"]["agreement"]
    assert agreement["n"] == 40 and agreement["kappa"]["value"] == 0.8
    from queryeval.engines.judge import JudgeOptions
    from queryeval.tasks.judging import judge_note

    note = judge_note(JudgeOptions(**opts), 2)
    assert "2 case(s) decided by the judge" in note.text and "kappa 0.800 [0.600, 0.950]" in note.text


# --- the query task ----------------------------------------------------------------------


def test_query_judges_a_failing_gold_only(fake, tmp_path, shop):
    fake.script = lambda n, body: verdict_reply("pass", "same filter on the real table")
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "runs",
                      judge=fake.options(tmp_path))
    assert len(fake.requests) == 1
    body = fake.requests[0]["body"]
    assert body["messages"][0]["content"].startswith("You grade database queries")
    assert "Why the scorer could not decide: gold_failed." in body["messages"][1]["content"]
    recs = _records(run)
    assert recs["ok"]["decided_by"] == "rules" and recs["ok"]["judge"] is None
    g = recs["goldbad"]
    assert (g["decided_by"], g["status"], g["scores"]) == ("judge", "ok", None)
    assert g["judge"]["why"] == "gold_failed" and g["judge"]["verdict"] == "pass"
    assert run.overall["judge_decided"] == 1 and run.overall["gold_failures"] == 1
    assert run.overall["errors"] == 0
    assert run.results.case("goldbad").verdict == "pass"


def test_query_when_always_judges_every_case_and_clears_the_gold_failure(fake, tmp_path, shop):
    fake.script = lambda n, body: verdict_reply("fail" if "WHERE price <= 0.5" in
                                                body["messages"][1]["content"] else "pass")
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "runs",
                      judge=fake.options(tmp_path, when="always"))
    assert len(fake.requests) == 2
    recs = _records(run)
    assert recs["ok"]["decided_by"] == "judge" and recs["ok"]["scores"]["perfect_match"] == 1.0
    assert run.results.case("ok").verdict == "fail"  # the judge's verdict, not execution's
    assert (recs["goldbad"]["status"], run.results.case("goldbad").verdict) == ("ok", "pass")
    assert run.overall["judge_decided"] == 2


def test_query_without_judge_gold_failure_stays_an_error(tmp_path, shop):
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "runs")
    g = _records(run)["goldbad"]
    assert g["status"] == "error" and "decided_by" not in g
    assert run.results.case("goldbad").verdict == "error"


def test_query_judge_fail_and_malformed(fake, tmp_path, shop):
    fake.script = lambda n, body: verdict_reply("fail", "wrong table")
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "f",
                      judge=fake.options(tmp_path))
    assert run.results.case("goldbad").verdict == "fail"
    fake.script = lambda n, body: completion("no idea")
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "m",
                      judge=fake.options(tmp_path / "other", malformed_retries=0))
    g = _records(run)["goldbad"]
    assert g["status"] == "error" and "judge_malformed" in g["error_kinds"]
    assert run.results.case("goldbad").verdict == "error"


def test_query_unknown_equivalence_is_inconclusive():
    from queryeval.tasks.query.judge import inconclusive

    base = {"predicted_query": "SELECT 1", "error": None, "error_kinds": [],
            "scores": {"exact_match_f1": 0.5}}
    assert inconclusive(base) is None
    assert inconclusive({**base, "equivalence": {"verdict": "unknown"}}) == "equivalence_unknown"
    assert inconclusive({**base, "mapping_exact": False}) == "inexact_mapping"
    assert inconclusive({**base, "predicted_execution": {"status": "unscorable"}}) == "unscorable"
    assert inconclusive({**base, "scores": None, "error_kinds": ["gold_query"]}) == "gold_failed"
    assert inconclusive({**base, "predicted_query": None, "scores": None,
                         "error_kinds": ["gold_query"]}) is None


# --- the command line ------------------------------------------------------------------------

def _files(tmp_path):
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(r) + "\n" for r in RESPONSES))
    return suite, resp


def test_cli_judge_flags_reach_the_task(fake, tmp_path, monkeypatch):
    from queryeval.cli.app import main

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "qc"))
    monkeypatch.setenv("QE_JUDGE_KEY", "sk-cli")
    suite, resp = _files(tmp_path)
    out = tmp_path / "runs"
    assert main(["run", str(suite), "--responses", str(resp), "--out", str(out), "-q",
                 "--judge-model", "judge-cli", "--judge-base-url", fake.url,
                 "--judge-api-key-env", "QE_JUDGE_KEY", "--judge-when", "always"]) == 0
    [batch] = out.rglob("batch_*.json")
    judge = json.loads(batch.read_text())["evaluation_config"]["task_options"]["judge"]
    assert (judge["model"], judge["base_url"], judge["api_key_env"], judge["when"]) == (
        "judge-cli", fake.url, "QE_JUDGE_KEY", "always")
    assert judge["cache_dir"] == str(tmp_path / "qc" / "judge")
    assert len(fake.requests) == 4
    assert fake.requests[0]["body"]["model"] == "judge-cli"
    assert fake.requests[0]["headers"]["Authorization"] == "Bearer sk-cli"


def test_cli_judge_model_without_base_url_is_one_line(tmp_path, capsys):
    from queryeval.cli.app import main

    suite, resp = _files(tmp_path)
    code = main(["run", str(suite), "--responses", str(resp), "--out", str(tmp_path / "r"),
                 "-q", "--judge-model", "m"])
    err = capsys.readouterr().err
    assert code == 2 and "--judge-base-url" in err and "Traceback" not in err


def test_cli_judge_on_a_task_without_judge_is_refused(fake, tmp_path, capsys):
    from queryeval.cli.app import main

    suite = tmp_path / "cases.jsonl"
    suite.write_text(json.dumps({"id": "s1", "conversation": [{"role": "user", "content": "q",
                     "target": {"indicator_selection": {"indicators": ["a"]}}}]}) + "\n")
    resp = tmp_path / "r.jsonl"
    resp.write_text(json.dumps({"case_id": "s1", "output": {"indicators": ["a"]}}) + "\n")
    code = main(["run", str(suite), "--responses", str(resp), "--out", str(tmp_path / "r"),
                 "-q", "--judge-model", "m", "--judge-base-url", fake.url])
    err = capsys.readouterr().err
    assert code == 2 and "judge" in err and "Traceback" not in err


def test_unset_key_variable_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    from queryeval.cli.app import main
    from queryeval.errors import ConfigError

    monkeypatch.delenv("QE_NO_SUCH_KEY", raising=False)
    suite, resp = _files(tmp_path)
    code = main(["run", str(suite), "--responses", str(resp), "--out", str(tmp_path / "r"),
                 "-q", "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1",
                 "--judge-api-key-env", "QE_NO_SUCH_KEY"])
    assert code == 2 and "QE_NO_SUCH_KEY" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing started
    with pytest.raises(ConfigError, match="QE_NO_SUCH_KEY"):
        qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "r2",
                    judge={"model": "m", "base_url": "http://127.0.0.1:9/v1",
                           "api_key_env": "QE_NO_SUCH_KEY"})
    assert not (tmp_path / "r2").exists()


def test_cli_option_judge_json_is_completed_by_the_flags(fake, tmp_path):
    from queryeval.cli.app import main

    suite, resp = _files(tmp_path)
    out = tmp_path / "runs"
    assert main(["run", str(suite), "--responses", str(resp), "--out", str(out), "-q",
                 "--option", 'judge={"response_format": "none", "malformed_retries": 0}',
                 "--judge-model", "judge-cli", "--judge-base-url", fake.url]) == 0
    [batch] = out.rglob("batch_*.json")
    judge = json.loads(batch.read_text())["evaluation_config"]["task_options"]["judge"]
    assert (judge["response_format"], judge["malformed_retries"], judge["model"]) == (
        "none", 0, "judge-cli")
    assert "response_format" not in fake.requests[0]["body"]
