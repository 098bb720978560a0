"""``queryeval audit --test-suite N``: a SQL gold that neither its database nor any of N
neighbour databases tells apart from a near-miss mutant is reported (issue 28 item 5), from
the test suite's own ``under_constrained``; without the option nothing is built."""

from __future__ import annotations

import json

from helpers.audit_ties_deadline import _suite
from queryeval.cli.app import main
from queryeval.engines.query.neighbours import under_constrained


def test_audit_reports_golds_no_neighbour_tells_from_a_mutant(company, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    suite = _suite(tmp_path, {"loose": "SELECT DISTINCT id FROM emp",
                              "tight": "SELECT name FROM emp WHERE salary > 100"})
    report = tmp_path / "a.json"
    args = ["audit", str(suite), "--database", str(company), "--json", str(report)]
    assert main([*args, "--test-suite", "10"]) == 0
    found = {r["case_id"]: r for r in json.loads(report.read_text(encoding="utf-8"))["golds"]}
    # the same survivors as the test suite's function finds for that gold, N and seed
    expected = under_constrained("SELECT DISTINCT id FROM emp", company, 10, 0,
                                 cache_dir=tmp_path / "direct")
    assert "SELECT id FROM emp" in expected
    assert found["loose"]["under_constrained"] == {"mutants": expected, "neighbours": 10}
    assert found["loose"]["status"] == "ok"  # a warning, not a broken gold
    assert any("near-miss mutant" in w for w in found["loose"]["warnings"])
    assert "under_constrained" not in found["tight"]
    out = " ".join(capsys.readouterr().out.split())
    assert "1 with warnings" in out
    # without --test-suite no neighbour is built and no finding is made
    assert main(args) == 0
    found = {r["case_id"]: r for r in json.loads(report.read_text(encoding="utf-8"))["golds"]}
    assert all("under_constrained" not in r for r in found.values())
