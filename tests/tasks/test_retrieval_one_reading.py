"""Retrieval's recorded outputs are read once, and its aggregate can be fed record by record.

* ``read_recorded_line`` returns its reading marked (``ReadChunks``, ``ReadOutput``);
  ``parse_output`` hands back a fresh copy of a marked reading without reading it again, and
  reads anything else (what a system returns) in full.
* ``RetrievalTask.accumulator()`` is the aggregate's own loop: fed record by record it gives
  the figures ``aggregate`` gives, here checked against values computed by hand.
"""

from __future__ import annotations

import json

import pytest

from queryeval.run.runner import RetryPolicy, call_turn
from queryeval.suite.retrieval import content_hash
from queryeval.systems.recorded import RecordedSystem
from queryeval.tasks.base import get_task
from queryeval.tasks.retrieval import task as retrieval_mod
from queryeval.tasks.retrieval.task import ReadChunks, ReadOutput


def _chunk(chunk_id: str, score: float, text: str) -> dict:
    return {"chunk_id": chunk_id, "score": score, "content": text}


def _counting_hash(monkeypatch) -> list[str]:
    seen: list[str] = []

    def counted(text: str) -> str:
        seen.append(text)
        return content_hash(text)

    monkeypatch.setattr(retrieval_mod, "content_hash", counted)
    return seen


def test_a_recorded_line_is_read_once_per_call(tmp_path, monkeypatch):
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        json.dumps({"qa_pair_id": "a", "retrieved_chunks": [_chunk("c1", 0.9, "one"), _chunk("c2", 0.5, "two")]})
        + "\n" + json.dumps({"qa_pair_id": "b", "retrieved_chunks": [_chunk("c3", 0.7, "three")],
                             "answer": "42"}) + "\n", encoding="utf-8")
    task = get_task("retrieval", {"k": [1, 2]})
    system = RecordedSystem.load(responses, task)
    system.bind([("a", [0]), ("b", [0])])
    seen = _counting_hash(monkeypatch)
    policy = RetryPolicy()
    a = call_turn(system, task, {"case_id": "a", "turn": 0}, timeout=None, policy=policy)
    b = call_turn(system, task, {"case_id": "b", "turn": 0}, timeout=None, policy=policy)
    # each chunk's text hashed once: at the call's reading of the line, not again at parse_output
    assert seen == ["one", "two", "three"]
    assert a.error is None and b.error is None
    assert a.output == {"retrieved_chunks": [
        {"chunk_id": "c1", "score": 0.9, "content": "one", "content_hash": content_hash("one")},
        {"chunk_id": "c2", "score": 0.5, "content": "two", "content_hash": content_hash("two")}],
        "answer": None}
    assert b.output == {"retrieved_chunks": [
        {"chunk_id": "c3", "score": 0.7, "content": "three", "content_hash": content_hash("three")}],
        "answer": "42"}
    # the output stored in the record is plain JSON data, not the marked reading
    assert type(a.output) is dict and type(a.output["retrieved_chunks"]) is list


def test_a_marked_reading_is_copied_and_anything_else_read_in_full(monkeypatch):
    task = get_task("retrieval", {"k": [3]})
    _, _, read = task.read_recorded_line({"qa_pair_id": "q", "retrieved_chunks": [_chunk("x", 1, "t")]})
    assert type(read) is ReadChunks
    seen = _counting_hash(monkeypatch)
    first, second = task.parse_output(read), task.parse_output(read)
    assert seen == []  # not read again
    assert first == second == {"retrieved_chunks": [
        {"chunk_id": "x", "score": 1.0, "content": "t", "content_hash": content_hash("t")}], "answer": None}
    # fresh chunk dicts each time: a record never shares them with another record
    assert first["retrieved_chunks"][0] is not second["retrieved_chunks"][0]
    assert first["retrieved_chunks"][0] is not read[0]
    # a plain list (what a system returns) is read in full: its text hashed, its score checked
    assert task.parse_output([_chunk("x", 1, "t")]) == first
    assert seen == ["t"]
    with pytest.raises(ValueError, match=r"\[0\]\.score: must be a number"):
        task.parse_output([{"chunk_id": "x", "score": "high", "content": "t"}])
    _, _, read = task.read_recorded_line({"qa_pair_id": "q", "retrieved_chunks": [_chunk("x", 1, "t")],
                                          "answer": "yes"})
    assert type(read) is ReadOutput
    assert task.parse_output(read)["answer"] == "yes"
    assert len(seen) == 2  # the reading hashed "t" once more; parse_output did not


def _record(case: str, dataset: str, rank: int | None, k: int, time_ms: float) -> dict:
    """A scored seed-shaped record: its relevant chunk at ``rank`` (None: not retrieved)."""
    chunks = [{"chunk_id": f"{case}-{i}", "score": 1.0 - i / 10, "content": None,
               "content_hash": "h" * 32 if i == rank else f"{i:032d}"} for i in range(1, k + 1)]
    record = {"case_id": case, "status": "ok", "error_kinds": [], "qa_pair_id": case,
              "dataset": dataset, "expected_chunk": {"chunk_id": "", "content_hash": "h" * 32},
              "evaluation_result": {"retrieval_time_ms": time_ms}, "retrieved_chunks": chunks}
    return get_task("retrieval", {"k": [k]})._evaluate(record)


def test_the_accumulator_gives_the_aggregate_computed_by_hand():
    task = get_task("retrieval", {"k": [1, 3]})
    records = [_record("a", "d1", 1, 3, 10.0), _record("b", "d1", 3, 3, 20.0),
               _record("c", "d2", None, 3, 30.0), _record("d", "d2", 2, 3, 40.0)]
    acc = task.accumulator()
    for r in records:
        acc.add(r)
    fed = acc.result()
    assert fed == task.aggregate(iter(records))
    overall = fed["overall_metrics"]
    assert overall["recall@3"] == 0.75  # 3 of 4 found in the top 3
    assert overall["mrr@3"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 4, rel=1e-15)  # 0.4583...
    assert overall["recall@1"] == 0.25  # only a is found at rank 1
    assert overall["mrr@1"] == 0.25
    assert overall["mean_retrieval_time_ms"] == 25.0
    assert overall["total_questions"] == 4 and overall["successful_retrievals"] == 3
    assert fed["dataset_metrics"]["d1"]["recall_at_k"] == 1.0
    assert fed["dataset_metrics"]["d2"]["recall_at_k"] == 0.5
    assert fed["group_metrics"]["dataset"]["d2"]["recall@1"] == 0.0
    assert fed["incorrect_retrievals_analysis"]["avg_score_incorrect"] == 0.9  # c's best score


def test_a_pickled_recorded_system_answers_the_same(tmp_path):
    # --executor ray ships the recorded system pickled (its outputs, marked as read)
    import pickle

    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"qa_pair_id": "a", "retrieved_chunks": [_chunk("c1", 2, "one")]})
                         + "\n", encoding="utf-8")
    task = get_task("retrieval", {"k": [1]})
    system = RecordedSystem.load(responses, task)
    system.bind([("a", [0])])
    shipped = pickle.loads(pickle.dumps(system))
    request, policy = {"case_id": "a", "turn": 0}, RetryPolicy()
    here = call_turn(system, task, request, timeout=None, policy=policy)
    there = call_turn(shipped, task, request, timeout=None, policy=policy)
    assert there.output == here.output == {"retrieved_chunks": [
        {"chunk_id": "c1", "score": 2.0, "content": "one", "content_hash": content_hash("one")}],
        "answer": None}
