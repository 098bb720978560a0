"""Bad tolerances on a reference must stop the run in one line naming file, record and field
(a newcomer's audit; each test failed on the code before its fix).

Before: ``"rel_tol": true`` was read as a relative tolerance of 1.0 (100 %), so "6 km" passed
against "3.5" km; ``"abs_tol": true`` on a query gold was a tolerance of 1.0; a tolerance on
an answer that is not one number ("3.5 zorks") was silently ignored and the case left
inconclusive."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import InputError


def _suite(tmp_path, reference: dict, response: str):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "far", "conversation": [{
        "role": "user", "content": "How far is it?", "target": {"reference": reference}}]})
        + "\n")
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "far", "response": response}) + "\n")
    return cases, responses


def _cli(capsys, tmp_path, cases, responses) -> tuple[int, list[str]]:
    """``queryeval run`` as the console script runs it: exit code and every output line."""
    code = main(["run", str(cases), "--responses", str(responses),
                 "--out", str(tmp_path / "runs"), "--no-report", "-q"])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    return code, text.strip().splitlines()


@pytest.mark.parametrize("field", ["abs_tol", "rel_tol"])
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_tolerance_is_refused(capsys, tmp_path, field, value):
    # true used to be a tolerance of 1.0: "6 km" passed against 3.5 km with rel_tol true
    cases, responses = _suite(tmp_path, {"answer": "3.5", "unit": "km", field: value}, "6 km")
    code, lines = _cli(capsys, tmp_path, cases, responses)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: {cases}:1: ")
    assert f"target.reference.{field}" in lines[0]
    assert not list((tmp_path / "runs").rglob("results_*.jsonl"))


def test_a_boolean_tolerance_on_a_query_gold_is_refused(tmp_path):
    cases = [{"id": "q", "conversation": [{"role": "user", "content": "q", "target": {
        "query": {"gold": "SELECT 1", "abs_tol": True}}}]}]
    with pytest.raises(InputError, match=r"target.query.abs_tol"):
        qe.evaluate(cases, responses=[{"id": "q", "query": "SELECT 1"}],
                    out=tmp_path / "r", reports=False)


@pytest.mark.parametrize("answer", ["3.5 zorks", "Paris", "about 42", "2024-02-01"])
def test_a_tolerance_on_an_answer_that_is_not_one_number_is_refused(capsys, tmp_path, answer):
    # the tolerance was silently ignored: the case went to the text rule (inconclusive)
    cases, responses = _suite(tmp_path, {"answer": answer, "abs_tol": 0.1}, "3.5")
    code, lines = _cli(capsys, tmp_path, cases, responses)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: {cases}:1: ")
    assert "target.reference" in lines[0] and "abs_tol" in lines[0] and answer in lines[0]


@pytest.mark.parametrize("reference, response, passed", [
    ({"answer": "3.5", "unit": "km", "rel_tol": 0.1}, "3.7 km", True),   # 5.7 % off
    ({"answer": "3.5", "unit": "km", "rel_tol": 0.01}, "3.7 km", False),
    ({"answer": "12%", "abs_tol": 0.5}, "12.3 percent", True),
    ({"answer": "3.5 km", "abs_tol": 0}, "3500 m", True),
    ({"answer": "1,234,567", "rel_tol": 0.01}, "1.23 million", True),  # "about" would hedge it
])
def test_numeric_tolerances_still_apply(tmp_path, reference, response, passed):
    cases, responses = _suite(tmp_path, reference, response)
    run = qe.evaluate(str(cases), responses=str(responses), out=tmp_path / "r", reports=False)
    assert run.overall["pass_rate"] == (1.0 if passed else 0.0)


@pytest.mark.parametrize("option", ["abs_tol=true", "rel_tol=false"])
def test_a_boolean_tolerance_option_of_the_query_task_is_refused(capsys, tmp_path, option):
    # --option abs_tol=true was a tolerance of 1.0 for every case of the run
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "q", "conversation": [{"role": "user", "content": "q",
                                 "target": {"query": {"gold": "SELECT 1"}}}]}) + "\n")
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "q", "query": "SELECT 2"}) + "\n")
    code = main(["run", str(cases), "--responses", str(responses), "--database",
                 str(tmp_path / "none.sqlite"), "--option", option,
                 "--out", str(tmp_path / "runs"), "--no-report", "-q"])
    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in lines[0], lines
    assert option.split("=")[0] in lines[0] and "must be a number" in lines[0]


@pytest.mark.parametrize("unit", ["furlongzz", "km/", "__import__('os')"])
def test_an_unknown_unit_names_the_file_and_line(capsys, tmp_path, unit):
    # it named the case only ("case 'far': target.reference.unit ..."), not the file or line
    cases, responses = _suite(tmp_path, {"answer": "3.5", "unit": unit, "abs_tol": 0.1}, "3.5")
    code, lines = _cli(capsys, tmp_path, cases, responses)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: {cases}:1: conversation[0].target.reference.unit: ")
    assert "is not a unit pint knows" in lines[0]
