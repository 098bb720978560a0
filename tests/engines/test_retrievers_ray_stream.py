"""The Ray executor shares the streamed index's embedding cache: a corpus embedded on Ray Data
is not embedded again, by Ray or locally, and a local run's vectors serve a Ray run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'queryeval[ray]')")

from queryeval.engines.retrievers import DenseRetriever, HashingEncoder  # noqa: E402
from queryeval.engines.retrievers.ray_embed import index_with_ray  # noqa: E402
from queryeval.suite.corpus_stream import open_corpus  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


def _corpus(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"chunk_id": f"c{i}", "content": f"row {i} of table {i % 13}"}) + "\n")
    return path


def test_streamed_index_on_ray_shares_the_cache(local_ray, tmp_path: Path) -> None:
    corpus = open_corpus(_corpus(tmp_path / "c.jsonl", 120))
    cache = tmp_path / "cache"
    local = DenseRetriever(encoder=HashingEncoder(32), cache=False)
    local.index_corpus(corpus)

    on_ray = DenseRetriever(encoder=HashingEncoder(32), cache=cache, stream_batch=50)
    with index_with_ray(num_actors=1, batch_size=16):
        on_ray.index_corpus(corpus)
    assert on_ray.embedder.stats.texts_embedded == 120  # on the actors, counted on the driver
    np.testing.assert_allclose(on_ray.doc_embeddings, local.doc_embeddings, atol=1e-7)

    again = DenseRetriever(encoder=HashingEncoder(32), cache=cache, stream_batch=50)
    with index_with_ray(num_actors=1, batch_size=16):
        again.index_corpus(corpus)
    assert again.embedder.stats.texts_requested == 0  # the matrix file: nothing sent to Ray
    enc = HashingEncoder(32)
    here = DenseRetriever(encoder=enc, cache=cache)
    here.index_corpus(corpus)  # a local run reuses what Ray embedded
    assert enc.calls == 0
    np.testing.assert_array_equal(here.doc_embeddings, on_ray.doc_embeddings)
    assert here.search(["row 7 of table 7"], 3) == on_ray.search(["row 7 of table 7"], 3)
