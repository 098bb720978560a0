"""The predicted query's three ways to give no rows, under ``--compat bird`` and ``spider2``:
no query scores 0 (``no_query``), a result cut at max_rows proves nothing (None, unknown), a
failed query scores 0 with its status."""

from types import SimpleNamespace

import pytest

from queryeval.engines.query import QueryFailed
from queryeval.tasks.query.execution import verdict

GOLD = "SELECT a FROM t"


class _Engine:
    def __init__(self, replies: dict) -> None:
        self.replies = replies

    def execute(self, query, *, timeout_s, max_rows, text_errors):
        reply = self.replies[query]
        if isinstance(reply, Exception):
            raise reply
        return reply


def _task(mode: str, replies: dict) -> SimpleNamespace:
    engine = _Engine(replies)
    return SimpleNamespace(options=SimpleNamespace(compat=mode, timeout_s=5.0, max_rows=2),
                           engine=lambda source: engine, _exec_gold={},
                           _ordered=lambda record, query: False)


def _result(rows: list, truncated: bool = False) -> SimpleNamespace:
    return SimpleNamespace(rows=rows, columns=["a"], truncated=truncated)


def _record(pred: str | None) -> dict:
    return {"language": "sql", "source": "db", "gold_query": GOLD, "predicted_query": pred}


@pytest.mark.parametrize("mode", ["bird", "spider2"])
def test_no_predicted_query_scores_zero(mode):
    task = _task(mode, {GOLD: _result([(1,)])})
    for pred in (None, "  "):
        value, info = verdict(task, _record(pred))
        assert value == 0.0
        assert (info["status"], info["reason"]) == ("no_query", "no predicted query")


@pytest.mark.parametrize("mode", ["bird", "spider2"])
def test_a_cut_prediction_is_unknown(mode):
    task = _task(mode, {GOLD: _result([(1,)]), "SELECT b": _result([(1,), (2,)], truncated=True)})
    value, info = verdict(task, _record("SELECT b"))
    assert value is None
    assert (info["status"], info["reason"]) == ("unknown", "the result was cut at max_rows=2")


@pytest.mark.parametrize("mode", ["bird", "spider2"])
def test_a_failed_prediction_scores_zero_with_its_status(mode):
    task = _task(mode, {GOLD: _result([(1,)]), "SELECT c": QueryFailed("no such column: c")})
    value, info = verdict(task, _record("SELECT c"))
    assert value == 0.0
    assert (info["status"], info["reason"]) == ("failed", "predicted query: no such column: c")


@pytest.mark.parametrize("mode", ["bird", "spider2"])
def test_a_matching_prediction_scores_one(mode):
    task = _task(mode, {GOLD: _result([(1,)]), "SELECT 1 AS a": _result([(1,)])})
    value, info = verdict(task, _record("SELECT 1 AS a"))
    assert value == 1.0
    assert info["status"] == "ok" and info["predicted_rows"] == 1
