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


# -- assert_suite takes what qe.evaluate takes; repeats figures (issue 23, item 7) ------------

FLAKY = [{"id": c, "conversation": [{"role": "user", "content": c,
                                     "target": {"answers": {"n": "3"}}}]} for c in "abc"]


def flaky(request):
    """"a" always right, "b" right on even repeats (2 of 4), "c" never."""
    case, rep = request["messages"][-1]["content"], request.get("repeat", 0)
    ok = case == "a" or (case == "b" and rep % 2 == 0)
    return {"response": "@n[3]" if ok else "@n[4]"}


async def async_flaky(request):
    return flaky(request)


def test_assert_suite_takes_a_callable_async_system_and_repeats(tmp_path):
    """A function (sync or ``async def``) is a system here as in qe.evaluate and check_case;
    ``repeats``/``pass_k`` are forwarded and their figures gateable (hand-computed: pass@2 =
    (1 + 5/6 + 0)/3, pass^2 = (1 + 1/6 + 0)/3)."""
    metrics = qe.testing.assert_suite(FLAKY, system=flaky, thresholds={"psaq": 0.6})
    assert metrics["overall_metrics"]["psaq"] == pytest.approx(2 / 3)  # one call: a, b right
    for system in (flaky, async_flaky):
        metrics = qe.testing.assert_suite(FLAKY, system=system, repeats=4, pass_k=[2, 4],
                                          thresholds={"pass@2": 0.61, "pass_rate": 0.5})
        overall = metrics["repeats"]["overall"]
        assert overall["pass@2"]["mean"] == pytest.approx(11 / 18, abs=1e-12)
        assert overall["pass^2"]["mean"] == pytest.approx(7 / 18, abs=1e-12)
    with pytest.raises(AssertionError, match=r"pass\^2 = 0\.3889 < 0\.5"):
        qe.testing.assert_suite(FLAKY, system=flaky, repeats=4, pass_k=[2],
                                thresholds={"pass^2": 0.5}, out=tmp_path / "o")
    assert list((tmp_path / "o").rglob("batch_*.json"))
    with pytest.raises(qe.ConfigError, match="pass@3"):
        qe.testing.assert_suite(FLAKY, system=flaky, repeats=4, thresholds={"pass@3": 0.5})


def test_check_case_with_repeats_gates_the_case_figures():
    """``check_case(..., repeats=N)``: the case's own pass rate / pass@k / pass^k over N
    attempts (the run's repeat statistics); without thresholds every attempt must pass."""
    (a, b, c) = FLAKY
    record = qe.testing.check_case(a, flaky, repeats=4)
    assert record["case_id"] == "a"
    qe.testing.check_case(b, flaky, repeats=4, pass_k=[2], thresholds={"pass@2": 5 / 6})
    with pytest.raises(AssertionError) as err:
        qe.testing.check_case(b, flaky, repeats=4, pass_k=[2], thresholds={"pass^2": 0.2})
    assert str(err.value).startswith("case b: pass^2 = 0.1667 (wanted >= 0.2)")
    with pytest.raises(AssertionError) as err:
        qe.testing.check_case(b, async_flaky, repeats=4)
    assert "case b: pass_rate = 0.5 (wanted >= 1)" in str(err.value)
    assert "PFPF" in str(err.value)


def test_check_case_refuses_a_pass_k_the_run_will_not_report_before_any_call():
    """``thresholds={"pass@3": ...}`` with ``repeats=5`` and no ``pass_k`` (the run reports
    pass@1 and pass@5): refused before the system is called, as ``--fail-under`` is, and
    with ``pass_k=[3]`` the gate is checked."""
    calls = []

    def counting(request):
        calls.append(request.get("repeat"))
        return flaky(request)

    (_, b, _) = FLAKY
    with pytest.raises(qe.ConfigError, match=r"pass@3.*available: .*pass@5"):
        qe.testing.check_case(b, counting, repeats=5, thresholds={"pass@3": 0.5})
    assert calls == []
    qe.testing.check_case(b, counting, repeats=5, pass_k=[3], thresholds={"pass@3": 0.5})
    assert sorted(calls) == [0, 1, 2, 3, 4]


def test_assert_suite_forwards_labels_and_options_as_qe_evaluate(examples_dir):
    """DABench questions with their labels file, recorded responses and the tables option:
    the same figures as qe.evaluate given the same arguments."""
    ex = examples_dir / "answers"
    kwargs = {"labels": ex / "labels.jsonl", "responses": ex / "responses.jsonl",
              "tables": ex / "tables"}
    want = qe.evaluate(ex / "questions.jsonl", **kwargs).metrics["overall_metrics"]
    got = qe.testing.assert_suite(ex / "questions.jsonl", thresholds={"psaq": 0.0}, **kwargs)
    assert got["overall_metrics"] == want and want["questions"] > 0
