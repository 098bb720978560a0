"""``qe.testing.check_case`` gives the same reason for a failed case as the JUnit report (a
newcomer's audit; each test failed on the code before its fix): a free-form case failed with
"exact_match = 0 (wanted >= 1), token_f1 = 0 (wanted >= 1)" — figures the pass rule does not
read — and no word of the rule that failed it; a query case whose gold failed said "the
system call failed: gold_query" although the system answered."""

from __future__ import annotations

import sqlite3

import pytest

import queryeval as qe
from queryeval.report.junit import case_outcome


def test_a_freeform_failure_names_the_rule_not_the_squad_figures():
    case = {"id": "count", "conversation": [{"role": "user", "content": "How many stations?",
            "target": {"reference": {"answer": "42"}}}]}
    with pytest.raises(AssertionError) as err:
        qe.testing.check_case(case, lambda r: {"response": "There are 41 stations."})
    first = str(err.value).splitlines()[0]
    assert first == "case count: passed = 0 (wanted >= 1) (number: 41 differs from 42)"
    # a pass by the ladder with exact_match 0 still passes
    record = qe.testing.check_case(case, lambda r: {"response": "There are 42 stations."})
    assert record["scores"]["exact_match"] == 0.0 and record["passed"] is True


def test_a_failed_gold_is_not_a_failed_system_call(tmp_path):
    db = tmp_path / "t.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
    case = {"id": "g", "conversation": [{"role": "user", "content": "q", "target": {
        "query": {"gold": "SELECT nope FROM t", "source": str(db)}}}]}
    with pytest.raises(AssertionError) as err:
        qe.testing.check_case(case, lambda r: {"query": "SELECT a FROM t"})
    text = str(err.value)
    assert "system call failed" not in text
    assert text.startswith("case g: the gold query failed (failed): ") and "nope" in text
    # the JUnit report's words for the same record
    run = qe.evaluate([case], system=lambda r: {"query": "SELECT a FROM t"},
                      out=tmp_path / "runs", reports=False)
    (result,) = run.results.cases
    _, message, _ = case_outcome(run.results.records, result)
    assert text == f"case g: {message}"


def test_a_failed_call_keeps_its_words():
    def boom(request):
        raise RuntimeError("model offline")

    case = {"id": "a", "conversation": [{"role": "user", "content": "q", "target": {
        "reference": {"answer": "Paris"}}}]}
    with pytest.raises(AssertionError, match=r"^case a: the system call failed: exception: "
                                             r"RuntimeError: model offline$"):
        qe.testing.check_case(case, boom, retries=0)
