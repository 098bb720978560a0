"""queryeval.testing's per-case parametrisation: a pytest run of a user's test file shows each
case as its own test, the failing one with its reason (expected vs got); check_case's verdicts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import queryeval as qe

SRC = Path(__file__).resolve().parents[1] / "src"

USER_TESTS = '''
import pytest
import queryeval as qe

def case(cid, question, country):
    return {"id": cid, "conversation": [{"role": "user", "content": question, "target": {
        "indicator_selection": [{"dataset_id": "D", "dimensions": [
            {"dimension_name": "COUNTRY", "values": [{"id": country, "name": country}]}]}]}}]}

SUITE = [case("mex", "mexico", "MEX"), case("usa", "usa", "USA"), case("deu", "germany", "DEU")]

def bot(request):
    text = request["messages"][-1]["content"]
    code = {"mexico": "MEX", "usa": "USA", "germany": "FRA"}[text]
    return {"indicator_selection": [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": code, "name": code}]}]}]}

@pytest.mark.parametrize("case", qe.testing.cases(SUITE))
def test_case(case):
    qe.testing.check_case(case, bot)
'''


@pytest.mark.slow
def test_each_case_is_a_test_and_the_failure_says_expected_vs_got(tmp_path):
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "--rootdir", str(tmp_path), "-rf", str(tmp_path / "test_user.py")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 2 passed" in out
    assert "FAILED test_user.py::test_case[deu]" in out
    assert "_ test_case[deu] _" in out and "test_case[mex]" not in out
    assert "E       AssertionError: case deu: macro_precision = 0 (wanted >= 1), " \
           "macro_recall = 0 (wanted >= 1)\n" in out
    assert 'E         expected: [{"dataset_id": "D", "dimensions": [{"dimension_name": "COUNTRY", ' \
           '"values": [{"id": "DEU", "name": "DEU"}]}]}]\n' in out
    assert 'E         got:      [{"dataset_id": "D", "dimensions": [{"dimension_name": "COUNTRY", ' \
           '"values": [{"id": "FRA", "name": "FRA"}]}]}]\n' in out
    assert "def check_case" not in out  # the helper's own frame is hidden


CASES = [
    {"id": "a", "conversation": [{"role": "user", "content": "x", "target": {
        "answers": {"n": "3", "m": "4"}}}]},
]


def test_check_case_passes_fails_and_thresholds():
    assert qe.testing.check_case(CASES[0], lambda r: {"response": "@n[3] @m[4]"})["status"] == "ok"
    with pytest.raises(AssertionError) as err:
        qe.testing.check_case(CASES[0], lambda r: {"response": "@n[3] @m[5]"})
    text = str(err.value)
    assert text.startswith("case a: ") and "(wanted >= 1)" in text
    assert 'expected: {"n": "3", "m": "4"}' in text and 'got:      {"n": "3", "m": "5"}' in text
    # 1 of 2 sub-answers: a threshold of 0.5 on the proportion correct passes, 0.6 fails
    record = qe.testing.check_case(CASES[0], lambda r: {"response": "@n[3] @m[5]"},
                                   thresholds={"proportion_correct": 0.5})
    assert record["scores"]["proportion_correct"] == 0.5
    with pytest.raises(AssertionError,
                       match=r"^case a: proportion_correct = 0\.5 \(wanted >= 0\.6\)"):
        qe.testing.check_case(CASES[0], lambda r: {"response": "@n[3] @m[5]"},
                              thresholds={"proportion_correct": 0.6})
    with pytest.raises(AssertionError, match=r"^case a: no per-case metric nope \(has: "):
        qe.testing.check_case(CASES[0], lambda r: {"response": ""}, thresholds={"nope": 1})


def test_check_case_reports_a_failed_call():
    def boom(request):
        raise RuntimeError("model offline")

    with pytest.raises(AssertionError) as err:
        qe.testing.check_case(CASES[0], boom)
    assert str(err.value) == "case a: the system call failed: exception: RuntimeError: model offline"


def test_cases_keep_task_options_and_ids(examples_dir):
    params = qe.testing.cases(examples_dir / "retrieval" / "questions.csv", k=3,
                              corpus=examples_dir / "retrieval" / "corpus.jsonl")
    assert len(params) == 67 and params[0].id == params[0].values[0].case.id
    first = params[0].values[0]
    assert first.task == "retrieval" and first.options["k"] == 3
    record = qe.testing.check_case(first)  # the built-in BM25 retriever over the corpus
    assert record["k"] == 3 and len(record["retrieved_chunks"]) == 3
