"""--test-suite with the default cache folder (no $QUERYEVAL_CACHE_DIR; here a relative
$XDG_CACHE_HOME) judges as with an absolute one: every case was "unknown" (the gold "failed on
every candidate database": the sandboxed worker was allowed a relative folder)."""

from __future__ import annotations

import json

from helpers.testsuite_sql import build_example
from queryeval.cli.app import main


def test_default_relative_cache_folder_gives_the_verdicts(tmp_path, monkeypatch):
    build_example(tmp_path)
    monkeypatch.delenv("QUERYEVAL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "xdg")  # relative: made absolute at the start
    monkeypatch.chdir(tmp_path)
    code = main(["run", "suite.yaml", "--task", "query", "--responses", "predictions.jsonl",
                 "--test-suite", "5", "--out", "runs", "-q", "--no-report"])
    assert code == 0
    doc = json.loads(next((tmp_path / "runs").rglob("metrics_*.json")).read_text())
    o = doc["overall_metrics"]
    # the two predictions right by accident (docs/test-suite.md), the other three equal
    assert (o["test_suite_refuted"], o["test_suite_unknown"]) == (2, 0)
    assert o["test_suite_accuracy"] == 3 / 5
    assert (tmp_path / "xdg" / "queryeval" / "testsuite").is_dir()
