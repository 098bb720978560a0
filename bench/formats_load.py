"""Loading a ragas suite whose contexts are matched to a corpus (docs/formats.md), against
the anchor of reading the same corpus alone, in the same run.

    python bench/formats_load.py [N_CHUNKS] [N_SAMPLES]
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

from queryeval.suite.loader import load_suite
from queryeval.suite.retrieval import read_corpus


def main(n_chunks: int = 100_000, n_samples: int = 10_000) -> None:
    rnd = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        texts = [" ".join(rnd.choice(words) for _ in range(60)) for _ in range(n_chunks)]
        with open(folder / "corpus.jsonl", "w") as fh:
            for i, text in enumerate(texts):
                fh.write(json.dumps({"chunk_id": f"c{i}", "content": text}) + "\n")
        with open(folder / "ragas.jsonl", "w") as fh:
            for q in range(n_samples):  # whitespace differs from the chunk: matched normalised
                ctx = texts[rnd.randrange(n_chunks)].replace(" ", "  ", 3)
                fh.write(json.dumps({"user_input": f"q{q}", "reference": "r",
                                     "reference_contexts": [ctx]}) + "\n")
        t = time.perf_counter()
        read_corpus(folder / "corpus.jsonl")
        anchor = time.perf_counter() - t
        t = time.perf_counter()
        load_suite(folder / "ragas.jsonl", corpus=folder / "corpus.jsonl")
        matched = time.perf_counter() - t
        t = time.perf_counter()
        load_suite(folder / "ragas.jsonl")
        plain = time.perf_counter() - t
    print(f"anchor: read_corpus of {n_chunks:,} chunks: {anchor:.2f} s")
    print(f"ragas suite of {n_samples:,} samples matched to it: {matched:.2f} s "
          f"({matched / anchor:.2f}x the anchor)")
    print(f"the same suite without a corpus (contexts by their own MD5): {plain:.2f} s "
          f"({plain / anchor:.2f}x)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
