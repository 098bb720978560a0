"""Checking DeepEval's '|'-joined context lists against a corpus whose chunks hold '|'
(docs/formats.md "List cells"): the lookup by piece against testing every such chunk.

    python bench/formats_joined.py [N_CHUNKS] [N_TEXTS]
"""

from __future__ import annotations

import random
import sys
import time

from queryeval.suite.foreign.contexts import ChunkIndex, normalise
from queryeval.suite.retrieval import Chunk


def main(n_chunks: int = 10_000, n_texts: int = 2_000) -> None:
    rnd = random.Random(0)
    words = [f"w{i}" for i in range(5000)]

    def para(n: int) -> str:
        return " ".join(rnd.choice(words) for _ in range(n))

    # half the chunks are markdown table rows (they hold '|'), half prose
    chunks = [Chunk(chunk_id=f"p{i}", content=f"| {para(5)} | {para(5)} |" if i % 2 else para(60))
              for i in range(n_chunks)]
    texts = ["|".join(para(60) for _ in range(5)) for _ in range(n_texts)]
    texts[::10] = ["|".join([para(20), chunks[i].content, para(20)]) for i in range(1, n_texts // 5, 2)][
        :len(texts[::10])]  # every tenth text holds a table row
    index = ChunkIndex(chunks)
    start = time.perf_counter()
    found = [index.holding("|", t) for t in texts]
    indexed = time.perf_counter() - start
    piped = [(normalise(c.content), c) for c in index.by_text.values() if "|" in c.content]
    sample = texts[: max(1, n_texts // 20)]
    start = time.perf_counter()
    brute = [next((c for n, c in piped if n in whole), None)
             for whole in (normalise(t) for t in sample)]
    each = (time.perf_counter() - start) * n_texts / len(sample)
    assert brute == found[: len(sample)]
    print(f"{n_texts:,} joined texts, {len(piped):,} chunks holding '|': "
          f"lookup by piece {indexed:.2f} s, testing every chunk ~{each:.1f} s "
          f"({sum(f is not None for f in found):,} texts refused)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
