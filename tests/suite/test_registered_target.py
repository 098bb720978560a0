"""A registered task brings its own ground truth: a target key of its own (its name, or its
``target_key``) validated by its ``target_model``; a key no task owns is refused in one line
naming the file, the record and the key."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import queryeval as qe
from helpers.ci_lab import cli
from queryeval.errors import InputError
from queryeval.registry import TASKS
from queryeval.suite.loader import load_suite
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Task


class Span(BaseModel):
    """The ground truth of the span task: where the answer starts and ends in the reply."""

    start: int
    end: int


class SpanTask(Task):
    """Scores 1 when the reply's text between ``start`` and ``end`` is the word ``yes``."""

    name = "span_check"
    target_key = "span"
    target_model = Span
    csv_columns = ["case_id", "status", "score"]

    def parse_output(self, raw: Any) -> str:
        return raw["response"]

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        return str(obj["case_id"]), None, self.parse_output(obj)

    def score_case(self, case, outcomes) -> dict:
        span = self.target_of(case)
        record = self.base_record(case, outcomes)
        text = outcomes[0].output or ""
        record.update(error=outcomes[0].error, scores={
            "span_ok": float(text[span.start:span.end] == "yes")})
        return record

    def rescore_record(self, record: dict) -> dict:
        return record

    def aggregate(self, records: Iterable[dict]) -> dict:
        tally, ok = Tally(self), Values()
        for r in tally.counted(records):
            ok.add(r["scores"]["span_ok"])
        return {"overall_metrics": {"cases": tally.total, "span_ok": ok.mean(),
                                    **tally.error_summary()}, "group_metrics": {}}

    def csv_rows(self, record: dict) -> Iterable[dict]:
        yield {"case_id": record["case_id"], "status": record["status"],
               "score": record["scores"]["span_ok"]}


def _suite(path: Path, targets: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i, target in enumerate(targets):
            fh.write(json.dumps({"id": f"c{i}", "conversation": [
                {"role": "user", "content": "say yes", "target": target}]}) + "\n")
    return path


@pytest.fixture
def tasks():
    with TASKS.isolated():
        yield TASKS


def test_a_registered_task_reads_its_own_target_and_is_inferred(tasks, tmp_path):
    qe.register_task(SpanTask)
    suite = _suite(tmp_path / "cases.jsonl", [{"span": {"start": 0, "end": 3}},
                                              {"span": {"start": 5, "end": 8}},
                                              {"span": {"start": "2", "end": 5}}])
    loaded = load_suite(suite)
    assert loaded.task_kinds() == {"span_check"}
    # no --task: the key names its task; replies "yes, yes": c0 [0:3] "yes", c1 [5:8] "yes",
    # c2 ["2":5] (a number as text is read as one) "s, " -> 2 of 3
    run = qe.evaluate(str(suite), system=lambda request: {"response": "yes, yes"},
                      out=tmp_path / "runs")
    assert run.task.name == "span_check"
    assert run.overall["span_ok"] == pytest.approx(2 / 3)
    record = next(r for r in run.records if r["case_id"] == "c2")
    assert record["scores"]["span_ok"] == 0.0


def test_a_bad_value_under_a_registered_key_is_one_line_naming_the_field(tasks, tmp_path):
    qe.register_task(SpanTask)
    suite = _suite(tmp_path / "cases.jsonl", [{"span": {"start": 0, "end": 3}},
                                              {"span": {"start": 0}}])
    with pytest.raises(InputError) as info:
        load_suite(suite)
    message = str(info.value)
    assert "cases.jsonl:2:" in message
    assert "target.span.end" in message and "\n" not in message


def test_a_key_no_task_owns_is_refused_at_the_command_line(tasks, tmp_path):
    suite = _suite(tmp_path / "cases.jsonl", [{"span": {"start": 0, "end": 3}}])
    res = cli(["validate", suite])
    assert res.exit_code == 2
    assert "unknown target key 'span'" in res.output
    assert "Traceback" not in res.output


def test_a_task_without_a_target_model_cannot_own_a_key(tasks, tmp_path):
    class Bare(SpanTask):
        name = "bare"
        target_key = None
        target_model = None

    qe.register_task(Bare)
    suite = _suite(tmp_path / "cases.jsonl", [{"bare": {"start": 0, "end": 3}}])
    with pytest.raises(InputError, match="task 'bare' declares no target_model"):
        load_suite(suite)
