"""The freeform task end to end: the target key ``reference`` picks it, the ladder decides
each case and names the rule, the judge is asked only where ``when`` says (a fake judge
patched where the task looks it up), a judge error never passes, a re-score reuses stored
verdicts, and every figure is hand-computed."""

from __future__ import annotations

import csv
import json

import pytest

import queryeval as qe
from helpers.freeform_task import FakeJudge  # noqa: E402,F401
from queryeval.errors import InputError
from queryeval.suite.models import Target

# id -> (reference, response, ladder verdict, ladder rule)
CASES = {
    "exact": ({"answer": "Paris"}, "paris.", "pass", "exact"),
    "alias": ({"answer": "United States", "aliases": ["USA"]}, "USA", "pass", "alias"),
    "unit": ({"answer": "3.5 km"}, "The trail is 3500 m long.", "pass", "unit"),
    "number": ({"answer": "42"}, "There are 41 stations.", "fail", "number"),
    "date": ({"answer": "2024-02-01"}, "On February 1, 2024.", "pass", "date"),
    "text": ({"answer": "a supply shortage"}, "Suppliers could not deliver.", None,
             "inconclusive"),
    "words": ({"answer": "42"}, "forty-two", None, "inconclusive"),
    "missing": ({"answer": "Paris"}, None, "fail", "missing"),
}
JUDGE = {"model": "fake-judge", "base_url": "http://127.0.0.1:9/v1"}


def _cases():
    return [{"id": cid, "conversation": [{"role": "user", "content": f"question {cid}?",
                                          "target": {"reference": ref}}]}
            for cid, (ref, *_rest) in CASES.items()]


def _responses():
    return [{"id": cid, "response": resp} for cid, (_r, resp, *_rest) in CASES.items()]


@pytest.fixture
def fake(monkeypatch):
    judge = FakeJudge(passes={"text"})
    monkeypatch.setattr("queryeval.engines.judge.make_judge", lambda options: judge)
    return judge


def _run(tmp_path, **kwargs):
    return qe.evaluate(_cases(), responses=_responses(), out=tmp_path / "runs", **kwargs)


def _by_id(run):
    return {r["case_id"]: r for r in run.records}


def test_target_key_reference_names_the_freeform_task():
    assert Target.model_validate({"reference": {"answer": "x"}}).task_kinds() == {"freeform"}
    assert Target.model_validate({"answers": {"n": "1"}}).task_kinds() == {"answers"}


def test_ladder_without_judge_inferred_task(tmp_path):
    run = _run(tmp_path)
    assert run.task_name == "freeform"
    recs = _by_id(run)
    for cid, (_ref, _resp, verdict, rule) in CASES.items():
        r = recs[cid]
        assert (r["rule"], r["rule_verdict"], r["decided_by"]) == (rule, verdict, rule), cid
        assert r["passed"] is (verdict == "pass") and r["judge"] is None
    o = run.overall
    # passes: exact, alias, unit, date = 4 of 8
    assert (o["pass_rate"], o["cases"], o["passed"], o["inconclusive"]) == (0.5, 8, 4, 2)
    assert (o["judge_decided"], o["judge_errors"], o["errors"]) == (0, 0, 0)
    assert {k: o[f"decided_{k}"] for k in ("missing", "exact", "alias", "date", "number",
                                          "unit")} == dict.fromkeys(
        ("missing", "exact", "alias", "date", "number", "unit"), 1)
    # SQuAD EM: exact 1, alias 1 (against the alias); the others 0 -> 2/8
    assert o["exact_match"] == pytest.approx(2 / 8)
    groups = run.metrics["group_metrics"]["decided_by"]
    assert groups["inconclusive"] == {"cases": 2, "passed": 0, "pass_rate": 0.0}
    assert groups["exact"] == {"cases": 1, "passed": 1, "pass_rate": 1.0}
    assert o["judge_when"] == "none" and "judge" not in run.config


def test_explicit_task_and_reports_show_the_rule(tmp_path):
    run = _run(tmp_path, task="freeform", reports=True)
    with open(run.folder / f"results_{run.batch_id}.csv", newline="") as fh:
        rows = {r["case_id"]: r for r in csv.DictReader(fh)}
    assert rows["unit"]["decided_by"] == "unit" and rows["unit"]["detail"] == "3500 m = 3.5 km"
    assert rows["number"]["detail"] == "41 differs from 42"
    from openpyxl import load_workbook

    ws = load_workbook(run.folder / f"report_{run.batch_id}.xlsx")["Overview"]
    head = [c.value for c in ws[1]]
    cells = {row[0]: dict(zip(head, row, strict=True)) for row in ws.iter_rows(min_row=2, values_only=True)}
    assert cells["date"]["decided_by"] == "date" and cells["text"]["decided_by"] == "inconclusive"
    page = (run.folder / f"report_{run.batch_id}.html").read_text()
    assert "41 differs from 42" in page and "no rule decides a text answer" in page


def test_judge_only_for_inconclusive_by_default(tmp_path, fake):
    run = _run(tmp_path, judge=JUDGE, reports=True)
    assert sorted(i.case_id for i in fake.asked) == ["text", "words"]
    assert fake.closed
    recs = _by_id(run)
    assert (recs["text"]["decided_by"], recs["text"]["passed"]) == ("judge", True)
    assert recs["text"]["judge"]["reason"] == "pass for text"
    assert (recs["words"]["decided_by"], recs["words"]["passed"]) == ("judge", False)
    assert recs["number"]["judge"] is None and recs["number"]["decided_by"] == "number"
    # the HTML details of a case the judge failed show its reason
    page = (run.folder / f"report_{run.batch_id}.html").read_text()
    assert "fail for words" in page
    o = run.overall
    assert (o["pass_rate"], o["passed"], o["inconclusive"], o["judge_decided"]) == (
        5 / 8, 5, 2, 2)
    # what the judge saw
    item = next(i for i in fake.asked if i.case_id == "text")
    assert (item.question, item.reference, item.response) == (
        "question text?", "a supply shortage", "Suppliers could not deliver.")
    # the run log stores the judge (its prompt and version through judge_info)
    judge = run.config["judge"]
    assert judge["model"] == "fake-judge" and {"prompt", "prompt_version"} <= set(judge)


def test_judge_always_and_never(tmp_path, fake):
    run = _run(tmp_path, judge={**JUDGE, "when": "always"})
    # every case with a response (the missing one has nothing to judge)
    assert sorted(i.case_id for i in fake.asked) == sorted(c for c in CASES if c != "missing")
    recs = _by_id(run)
    # the judge decides every case; the ladder's verdict is kept beside it
    assert (recs["exact"]["decided_by"], recs["exact"]["passed"]) == ("judge", False)
    assert recs["exact"]["rule_verdict"] == "pass"
    assert run.overall["pass_rate"] == 1 / 8  # the judge passes only "text"
    fake.asked.clear()
    run = _run(tmp_path, judge={**JUDGE, "when": "never"})
    assert fake.asked == []
    assert run.overall["pass_rate"] == 0.5 and run.overall["judge_when"] == "never"


@pytest.mark.parametrize("judge", [
    FakeJudge(error={"kind": "judge_malformed", "message": "not JSON"}),
    FakeJudge(raises=RuntimeError("connection refused")),
])
def test_a_judge_error_never_passes(tmp_path, monkeypatch, judge):
    monkeypatch.setattr("queryeval.engines.judge.make_judge", lambda options: judge)
    run = _run(tmp_path, judge=JUDGE)
    recs = _by_id(run)
    kind = "judge_malformed" if judge.error else "judge_call"
    for cid in ("text", "words"):
        r = recs[cid]
        assert (r["status"], r["passed"], r["decided_by"], r["error_kinds"]) == (
            "error", False, "error", [kind])
        assert run.task.case_passed(r) is False
    o = run.overall
    assert (o["pass_rate"], o["judge_errors"], o["errors"], o["errors_by_kind"]) == (
        0.5, 2, 2, {kind: 2})
    table = run.case_table()
    assert table.loc["text", "verdict"] == "error"


def test_rescore_reuses_the_stored_verdicts(tmp_path, fake, monkeypatch):
    from queryeval.report.rescore import rescore_run

    run = _run(tmp_path, judge=JUDGE)

    def no_judge(options):
        raise AssertionError("a re-score must not call the judge")

    monkeypatch.setattr("queryeval.engines.judge.make_judge", no_judge)
    res = rescore_run(run.path, out=tmp_path / "rescored")
    again = qe.load(res.log.paths.batch)
    assert again.overall["pass_rate"] == run.overall["pass_rate"] == 5 / 8
    assert _by_id(again)["text"]["decided_by"] == "judge"
    # re-scored with when=never: the stored verdicts no longer decide
    res = rescore_run(run.path, {"judge": {**JUDGE, "when": "never"}},
                      out=tmp_path / "never")
    assert res.metrics["overall_metrics"]["pass_rate"] == 0.5


def test_recorded_agreement_is_reported(tmp_path, fake, monkeypatch):
    monkeypatch.setattr("queryeval.engines.judge.recorded_agreement",
                        lambda options: {"kappa": {"value": 0.8, "ci": [0.7, 0.9]},
                                         "tpr": 0.9, "tnr": 0.85, "accuracy": 0.88, "n": 120})
    run = _run(tmp_path, judge=JUDGE)
    o = run.overall
    assert (o["judge_check_kappa"], o["judge_check_tpr"], o["judge_check_n"]) == (0.8, 0.9, 120)
    assert run.config["judge"]["agreement"]["n"] == 120


def test_bad_unit_stops_the_run_before_it_starts(tmp_path):
    cases = [{"id": "c1", "conversation": [{"role": "user", "content": "q", "target": {
        "reference": {"answer": "3", "unit": "furlongz"}}}]}]
    with pytest.raises(InputError, match=r"cases\[0\]\.conversation\[0\]\.target\.reference\.unit: "
                       r".*'furlongz' is not a unit pint knows"):
        qe.evaluate(cases, responses=[{"id": "c1", "response": "3"}], out=tmp_path / "r")
    assert not list((tmp_path / "r").rglob("results_*.jsonl"))


def test_cli_run_with_the_example_suite(tmp_path):
    from pathlib import Path

    from typer.testing import CliRunner

    from queryeval.cli.app import app

    ex = Path(__file__).resolve().parents[2] / "examples" / "freeform"
    res = CliRunner().invoke(app, ["run", str(ex / "cases.jsonl"), "--responses",
                                   str(ex / "responses.jsonl"), "--out", str(tmp_path),
                                   "--fail-under", "pass_rate=0.6"])
    assert res.exit_code == 0, res.output
    doc = json.loads(next(tmp_path.rglob("metrics_*.json")).read_text())
    # 5 of 8: "About 1.23 million" hedges its figure, so population is inconclusive
    assert doc["overall_metrics"]["pass_rate"] == 5 / 8
    assert doc["overall_metrics"]["inconclusive"] == 2
    res = CliRunner().invoke(app, ["run", str(ex / "cases.jsonl"), "--responses",
                                   str(ex / "responses.jsonl"), "--out", str(tmp_path),
                                   "--fail-under", "pass_rate=0.7"])
    assert res.exit_code != 0 and "pass_rate" in res.output


def test_untrusted_text_is_escaped_in_the_html(tmp_path):
    cases = [{"id": "x", "conversation": [{"role": "user", "content": "<i>q</i>", "target": {
        "reference": {"answer": "<b>ref</b>"}}}]}]
    run = qe.evaluate(cases, responses=[{"id": "x", "response": "<script>alert(1)</script>"}],
                      out=tmp_path / "r", reports=True)
    page = (run.folder / f"report_{run.batch_id}.html").read_text()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<b>ref</b>" not in page and "&lt;b&gt;ref&lt;/b&gt;" in page


def test_yaml_suite_with_a_date_and_a_number_answer(tmp_path):
    """YAML reads ``answer: 2024-02-01`` as a date and ``3.5`` as a float: both are kept as
    text (ISO for the date), so the date and unit rules apply."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "id: d1\nconversation:\n  - role: user\n    content: When?\n    target:\n"
        "      reference:\n        answer: 2024-02-01\n---\n"
        "id: n1\nconversation:\n  - role: user\n    content: How far?\n    target:\n"
        "      reference: {answer: 3.5, unit: km}\n")
    run = qe.evaluate(str(suite), responses=[{"id": "d1", "response": "On 1 Feb 2024."},
                                             {"id": "n1", "response": "3500 m"}],
                      out=tmp_path / "r")
    recs = _by_id(run)
    assert recs["d1"]["reference"]["answer"] == "2024-02-01"
    assert (recs["d1"]["decided_by"], recs["n1"]["decided_by"]) == ("date", "unit")
    assert run.overall["pass_rate"] == 1.0


def test_squad_option_picks_the_scripts_token_f1(tmp_path):
    """``--option squad=v1.1``: the freeform figures follow SQuAD v1.1's script (the reference
    'The' and the response 'a' share no token: F1 0.0); v2.0, the default, scores 1.0."""
    cases = [{"id": "c", "conversation": [{"role": "user", "content": "which?",
                                           "target": {"reference": {"answer": "The"}}}]},
             {"id": "d", "conversation": [{"role": "user", "content": "which?",
                                           "target": {"reference": {"answer": "The cat",
                                                                    "aliases": ["an"]}}}]}]
    responses = [{"id": "c", "response": "a"}, {"id": "d", "response": "a cat"}]
    f1 = {}
    for version in ("v1.1", "v2.0", None):
        run = qe.evaluate(cases, responses=responses, out=tmp_path / str(version),
                          options={"squad": version} if version else None)
        f1[version] = {r["case_id"]: r["scores"]["token_f1"] for r in run.records}
        assert run.overall["token_f1"] == pytest.approx(sum(f1[version].values()) / 2)
    # d: v1.1 keeps the alias 'an' (empty: F1 0 there), 'The cat' gives 1.0 either way
    assert f1["v1.1"] == {"c": 0.0, "d": 1.0}
    assert f1["v2.0"] == f1[None] == {"c": 1.0, "d": 1.0}
