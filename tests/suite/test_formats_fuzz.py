"""The foreign-format readers under the readers' fuzzer (tests/suite/test_fuzz_readers.py): every
mutated or structured file is accepted or refused with one InputError naming the file, never
a crash."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given

from helpers.fuzz_readers import (
    FUZZ,
    Reader,
    check,
    csv_table,
    json_document,
    jsonl_records,
    mutated,
)


def _load(path: Path):
    from queryeval.suite import load_suite

    return [c.id for c in load_suite(path).iter_cases()]


def _recorded(path: Path):
    from queryeval.systems.recorded import RecordedSystem
    from queryeval.tasks.base import get_task

    return RecordedSystem.load(path, get_task("retrieval"))


RAGAS_JSONL = (json.dumps({"user_input": "q1", "reference_contexts": ["a b"], "reference": "r",
                           "retrieved_contexts": ["a  b", "c"], "response": "r"}) + "\n"
               + json.dumps({"user_input": "q2", "reference": "x"}) + "\n").encode()
RAGAS_OUT = (json.dumps({"user_input": "q1", "reference": "r", "retrieved_contexts": ["a  b", "c"],
                         "response": "r"}) + "\n"
             + json.dumps({"user_input": "q2", "retrieved_contexts": [], "response": "x"})
             + "\n").encode()
RAGAS_CSV = b'user_input,reference_contexts,reference\nq1,"[\'a b\']",r\nq2,,x\n'
DEEPEVAL_JSON = json.dumps([{"input": "q", "expected_output": "a", "context": ["c"]},
                            {"input": "q2", "expected_output": "b"}]).encode()
INSPECT_JSONL = (json.dumps({"id": "s", "input": [{"role": "user", "content": "q"}],
                             "target": ["a", "b"]}) + "\n").encode()

READERS = [
    Reader("ragas-jsonl", "ragas.jsonl", RAGAS_JSONL, _load, jsonl_records(RAGAS_JSONL)),
    Reader("ragas-csv", "ragas.csv", RAGAS_CSV, _load, csv_table(RAGAS_CSV)),
    Reader("deepeval-json", "goldens.json", DEEPEVAL_JSON, _load, json_document(DEEPEVAL_JSON)),
    Reader("inspect-jsonl", "samples.jsonl", INSPECT_JSONL, _load, jsonl_records(INSPECT_JSONL)),
    Reader("ragas-recorded", "outputs.jsonl", RAGAS_OUT, _recorded, jsonl_records(RAGAS_OUT)),
]


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_seed_is_accepted(reader, tmp_path):
    assert check(reader, reader.seed, tmp_path) == "accepted"


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_mutated_and_structured(reader):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)

        @FUZZ
        @given(data=mutated(reader.seed))
        def run_mutated(data: bytes) -> None:
            check(reader, data, folder)

        @FUZZ
        @given(data=reader.structured)
        def run_structured(data: bytes) -> None:
            check(reader, data, folder)

        run_mutated()
        run_structured()
