"""What the tests of viewer headline share with other test files: ``flaky_retriever`` (moved here from test_viewer_headline.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

EX = Path(__file__).resolve().parents[2] / "examples" / "retrieval"


CHUNKS = [json.loads(line)["chunk_id"] for line in (EX / "corpus.jsonl").read_text().splitlines()]


EXPECTED = {}  # question -> its chunk id, read once from the suite's own file


def _expected() -> dict[str, str]:
    if not EXPECTED:
        import csv

        with open(EX / "questions.csv", newline="") as fh:
            EXPECTED.update({row["question"]: row["chunk_id"] for row in csv.DictReader(fh)})
    return EXPECTED


def flaky_retriever(req: dict) -> dict:
    """The right chunk first in about 60% of the attempts (seeded by question and repeat),
    else ten other chunks."""
    rng = random.Random(f"{req['question']}:{req.get('repeat', 0)}")
    right = _expected()[req["question"]]
    others = [c for c in CHUNKS if c != right][:10]
    ranked = [right, *others[:9]] if rng.random() < 0.6 else others
    return {"retrieved_chunks": [{"chunk_id": c, "score": 10.0 - i} for i, c in enumerate(ranked)]}
