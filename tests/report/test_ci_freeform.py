"""A newcomer's audit of the CI surfaces on a free-form run: JUnit, the step summary and the
OTel explanation said ``expected null, got null`` for every failed free-form case (the
record keeps ``reference`` and ``response``, which ``expected_got`` did not know). Now they
say the reference's answer, the response and the ladder's reason. Failed before the fix."""

from __future__ import annotations

import json

import pytest

from helpers.ci_lab import cli

junitparser = pytest.importorskip("junitparser")

CASES = [
    ("count", "How many stations?", "42", "There are 41 stations."),
    ("trail", "How long is the trail?", "3.5 km", "It is 3,500 metres."),
    ("city", "Capital?", "Paris", "The capital is Paris."),
]


def test_freeform_failures_say_reference_response_and_reason(tmp_path):
    cases = tmp_path / "cases.jsonl"
    responses = tmp_path / "responses.jsonl"
    cases.write_text("".join(json.dumps({"id": i, "conversation": [
        {"role": "user", "content": q, "target": {"reference": {"answer": a}}}]}) + "\n"
        for i, q, a, _ in CASES))
    responses.write_text("".join(json.dumps({"id": i, "response": r}) + "\n"
                                 for i, _, _, r in CASES))
    summary = tmp_path / "summary.md"
    res = cli(["run", cases, "--responses", responses, "--out", tmp_path / "runs", "-q",
               "--junit", tmp_path / "j.xml"],
              env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "false"})
    assert res.exit_code == 0, res.output
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "j.xml"))
    got = {json.loads(c.system_out)["case_id"]: (c.result[0].message if c.result else None)
           for s in xml for c in s}
    assert got == {
        "count": 'expected "42", got "There are 41 stations." (number: 41 differs from 42)',
        "trail": None,
        "city": 'expected "Paris", got "The capital is Paris." '
                "(inconclusive: no rule decides a text answer)",
    }
    text = summary.read_text()
    assert "expected null" not in text
    assert "(number: 41 differs from 42)" in text
