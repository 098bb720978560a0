"""What the tests of retrieval multi answer share with other test files: ``FakeJudge``, ``JUDGE``, ``answered`` (moved here from test_retrieval_multi_answer.py)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from queryeval.engines.judge import JudgeVerdict
from queryeval.suite.retrieval import qa_pair_id

TEXT = "Food assistance is available to families with low income."


QUESTIONS = [  # question, reference answer, generated answer (None: the output has none)
    ("Who gets food help?", "low income families", "Low-income families."),
    ("How much is a senior fare?", "one dollar", "The one dollar"),
    ("How much is an adult fare?", "two dollars", "one dollar"),
    ("Are bikes allowed?", "yes", None),
    ("When are offices open?", "", "weekdays"),
]


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()  # noqa: S324


@pytest.fixture
def answered(tmp_path: Path):
    questions = tmp_path / "questions.csv"
    with questions.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer", "document_name", "dataset", "chunk_id", "content_hash"])
        for q, a, _ in QUESTIONS:
            w.writerow([q, a, "d.pdf", "A", "c1", md5(TEXT)])
    ids = [qa_pair_id("A", q, a) for q, a, _ in QUESTIONS]
    responses = tmp_path / "responses.jsonl"
    with responses.open("w") as fh:
        for cid, (_, _, gen) in zip(ids, QUESTIONS, strict=True):
            line = {"qa_pair_id": cid, "retrieved_chunks": [{"chunk_id": "c1", "score": 1.0, "content": TEXT}]}
            if gen is not None:
                line["answer"] = gen
            fh.write(json.dumps(line) + "\n")
    return tmp_path, questions, responses, ids


class FakeJudge:
    """Passes q0, fails q2 and raises on anything else it is asked."""

    def __init__(self, ids):
        self.ids = ids
        self.items = []
        self.closed = False

    def judge(self, item):
        self.items.append(item)
        if item.case_id == self.ids[0]:
            return JudgeVerdict(verdict="pass", reason="same meaning", model="fake", prompt_version="v1")
        if item.case_id == self.ids[2]:
            return JudgeVerdict(verdict="fail", reason="wrong amount", model="fake")
        raise RuntimeError("endpoint down")

    def close(self):
        self.closed = True


JUDGE = {"model": "fake-model", "base_url": "http://127.0.0.1:9"}
