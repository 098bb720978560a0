"""What the tests of formats e2e share with other test files: ``CORPUS``, ``IDS``, ``PARIS``, ``RAGAS``, ``RECALL2``, ``write_jsonl`` (moved here from test_formats_e2e.py)."""

from __future__ import annotations

import json

from queryeval.suite.retrieval import qa_pair_id

PARIS = "Paris is the capital of France."


BERLIN = "Berlin  is the capital\nof Germany."


MADRID = "Madrid is the capital of Spain."


CORPUS = [{"chunk_id": "c1", "content": PARIS}, {"chunk_id": "c2", "content": BERLIN},
          {"chunk_id": "c3", "content": MADRID}]


# A ragas EvaluationDataset after a run: suite fields and recorded outputs in one file.
RAGAS = [
    {"user_input": "Capital of France?", "reference_contexts": [PARIS], "reference": "Paris",
     "retrieved_contexts": [MADRID, PARIS], "response": "Paris"},
    # neither context is byte-equal to c2's text: they match it once normalised
    {"user_input": "Capital of Germany?", "reference_contexts": ["Berlin is the capital of Germany."],
     "reference": "Berlin", "retrieved_contexts": ["Berlin is the capital  of Germany."],
     "response": "Berlin"},
    {"user_input": "Capital of Spain?", "reference_contexts": [MADRID], "reference": "Madrid",
     "retrieved_contexts": ["A text in no chunk."], "response": "Lisbon"},
]


IDS = [qa_pair_id("", r["user_input"], r["reference"]) for r in RAGAS]


RECALL2 = dict(zip(IDS, [1.0, 1.0, 0.0], strict=True))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
