"""Runs that share no case cannot be compared: ``queryeval compare`` printed an empty table,
"0 paired cases" (the N-way compare not even that) and exited 0, so ``--fail-on-regression``
passed a CI step on nothing. The usual way to get there: a DeepEval/ragas dataset without
ids (case ids from the question and reference) against a native suite of the same questions
(a newcomer's audit; each test failed on the code before its fix)."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import ConfigError

QUESTIONS = [("How many stations are there?", "42", "There are 41 stations."),
             ("What is the capital of France?", "Paris", "paris.")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("disjoint")
    native = [{"id": f"q{i}", "conversation": [{"role": "user", "content": q,
               "target": {"reference": {"answer": a}}}]} for i, (q, a, _) in enumerate(QUESTIONS)]
    deepeval = root / "deepeval.json"   # no ids: each case id is the question's qa_pair_id
    deepeval.write_text(json.dumps([{"input": q, "expected_output": a, "actual_output": r}
                                    for q, a, r in QUESTIONS]))
    a = qe.evaluate(native, responses=[{"id": f"q{i}", "response": r}
                                       for i, (_, _, r) in enumerate(QUESTIONS)],
                    out=root / "runs", reports=False, name="native")
    b = qe.evaluate(str(deepeval), responses=str(deepeval), out=root / "runs", reports=False,
                    name="deepeval")
    c = qe.evaluate(native, responses=[{"id": f"q{i}", "response": "paris."}
                                       for i in range(len(QUESTIONS))],
                    out=root / "runs", reports=False, name="native2")
    # the same figures, scored apart: 1 of 2 passes in each
    assert a.overall["pass_rate"] == b.overall["pass_rate"] == 0.5
    return a, b, c


def _cli(capsys, *args) -> tuple[int, list[str]]:
    code = main(["compare", *map(str, args)])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.err.strip().splitlines()


def test_two_runs_without_a_common_case_are_refused(runs, capsys):
    a, b, _ = runs
    for extra in ([], ["--fail-on-regression"]):
        code, err = _cli(capsys, a.path, b.path, *extra)
        assert code == 2 and len(err) == 1, err
        assert err[0].startswith("error: the runs share no case")
        assert "2 in native" in err[0] and "2 in deepeval" in err[0]
    with pytest.raises(ConfigError, match="share no case"):
        qe.compare(a, b)


def test_n_way_compare_without_a_common_case_is_refused(runs, capsys):
    a, b, c = runs
    code, err = _cli(capsys, a.path, c.path, b.path)
    assert code == 2 and len(err) == 1 and "share no case" in err[0], err
    with pytest.raises(ConfigError, match="share no case"):
        qe.compare(a, c, b)
    # runs that do share their cases still compare
    comp = qe.compare(a, c, pairs="all", resamples=100)
    assert comp.overall.n["passed"] == 2
    assert comp.overall.means["passed"] == pytest.approx([0.5, 0.5])
