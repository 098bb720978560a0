"""A newcomer's audit of the CI surfaces on a query case whose gold fails: JUnit, the step
summary (and OTel's explanation) said ``call failed: gold_query`` — the system's call did not
fail, the gold did, and the engine's reason was on the record. They now say ``the gold query
failed (failed): sqlite: no such column: nope``. Failed before the fix."""

from __future__ import annotations

import json
import sqlite3

import pytest

from helpers.ci_lab import cli

junitparser = pytest.importorskip("junitparser")


def test_a_failed_gold_is_not_called_a_failed_call(tmp_path):
    con = sqlite3.connect(tmp_path / "co.sqlite")
    con.executescript("CREATE TABLE emp(name TEXT); INSERT INTO emp VALUES ('ann');")
    con.commit()
    con.close()
    (tmp_path / "s.yaml").write_text(
        "id: goldbad\nconversation:\n- role: user\n  content: q\n  target:\n"
        "    query: {source: co.sqlite, gold: 'SELECT nope FROM emp'}\n")
    (tmp_path / "p.jsonl").write_text(
        json.dumps({"case_id": "goldbad", "query": "SELECT name FROM emp"}) + "\n")
    summary = tmp_path / "summary.md"
    res = cli(["run", tmp_path / "s.yaml", "--responses", tmp_path / "p.jsonl", "-q",
               "--out", tmp_path / "runs", "--junit", tmp_path / "j.xml"],
              env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "false"})
    # a suite whose every gold fails scores nothing: exit 2 naming the gold's error, after the
    # run log and the CI outputs are written (tests/cli/test_gold_failures_exit.py)
    assert res.exit_code == 2, res.output
    assert "every gold query failed (1 of 1 cases)" in " ".join(res.output.split())
    (case,) = [c for s in junitparser.JUnitXml.fromfile(str(tmp_path / "j.xml")) for c in s]
    (err,) = case.result
    assert type(err).__name__ == "Error"
    assert err.message == "the gold query failed (failed): sqlite: no such column: nope"
    assert "the gold query failed (failed): sqlite: no such column: nope" in summary.read_text()
    assert "call failed" not in summary.read_text()
