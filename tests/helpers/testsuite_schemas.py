"""What the tests of testsuite schemas share with other test files: ``_run`` (moved here from test_testsuite_schemas.py)."""

from __future__ import annotations

import json
from pathlib import Path

import queryeval as qe
from helpers.testsuite_sql import case, records  # noqa: E402


def _run(tmp_path: Path, database: Path, gold: str, prediction: str, n: int = 5) -> dict:
    """One case through ``queryeval.evaluate(..., test_suite=n)``: its record."""
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps(case("c", str(database), gold)) + "\n", encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"case_id": "c", "query": prediction}) + "\n", encoding="utf-8")
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs",
                      test_suite=n)
    return records(run)["c"]
