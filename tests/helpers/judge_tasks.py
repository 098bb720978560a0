"""What the tests of judge tasks share with other test files: ``CASES``, ``QCASES``, ``QRESP``, ``RESPONSES``, ``shop`` (moved here from test_judge_tasks.py)."""

from __future__ import annotations

import pytest

from helpers.judge_fixtures import values_judge  # noqa: F401 - the fixture "fake", one per test
from helpers.query_task import make_shop_db

CASES = [{"id": f"c{i}", "conversation": [{"role": "user", "content": f"question {i}?",
          "target": {"answers": [{"name": "n", "value": str(i)}]}}]} for i in range(5)]


RESPONSES = [
    {"id": "c0", "response": "@n[0]"},              # rules: pass
    {"id": "c1", "response": "@n[7]"},              # rules: fail
    {"id": "c2", "response": "The answer is 2."},   # inconclusive -> judge: pass
    {"id": "c3", "response": "It is about 30."},    # inconclusive -> judge: fail
    {"id": "c4", "response": None},                 # missing: never judged
]


@pytest.fixture
def shop(tmp_path):
    return make_shop_db(tmp_path / "shop.sqlite")


QCASES = [
    {"id": "ok", "conversation": [{"role": "user", "content": "cheap items", "target": {
        "query": {"gold": "SELECT name FROM items WHERE price < 1"}}}]},
    {"id": "goldbad", "conversation": [{"role": "user", "content": "cheap items", "target": {
        "query": {"gold": "SELECT name FROM nosuchtable WHERE price < 1"}}}]},
]


QRESP = [{"case_id": "ok", "query": "SELECT name FROM items WHERE price <= 0.5"},
         {"case_id": "goldbad", "query": "SELECT name FROM items WHERE price < 1"}]
