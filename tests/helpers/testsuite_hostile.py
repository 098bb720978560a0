"""What the tests of testsuite hostile share with other test files: ``_suite_predicting_the_gold``, ``checks`` (moved here from test_testsuite_hostile.py)."""

from __future__ import annotations

import json

import pytest

from helpers.sandbox import needs_sandbox  # noqa: E402
from helpers.testsuite_sql import case  # noqa: E402
from queryeval.engines.query import base


@pytest.fixture(params=[True, False], ids=["checks-on", "checks-off"])
def checks(request, monkeypatch) -> bool:
    if not request.param and needs_sandbox.args[0]:
        pytest.skip(needs_sandbox.kwargs["reason"])
    monkeypatch.setattr(base, "QUERY_CHECKS", request.param)
    return request.param


def _suite_predicting_the_gold(tmp_path, database, golds: dict) -> tuple:
    """A query suite of ``golds`` (case id -> gold) on ``database`` and recorded predictions
    equal to each gold, so that the test suite's neighbours are asked for."""
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps(case(k, str(database), q)) + "\n"
                             for k, q in golds.items()), encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"case_id": k, "query": q}) + "\n"
                             for k, q in golds.items()), encoding="utf-8")
    return suite, preds
