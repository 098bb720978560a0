"""One disk-cache helper (io/caches.py: CacheFiles, read_record, write_record) under the call,
chat, embedding, store, neighbour and audit caches. Keys and file layouts are those of the
code before it (the digests below were printed by that code), so a cache folder filled
before still hits; an unreadable record is a miss, never an error."""

from __future__ import annotations

import json
import os

import pytest

from queryeval.io.caches import CacheFiles, canonical_json, read_record, write_record

CALL_KEY = "e409c3c136171f2131ed37e85cbc87a1833520231193aa521617a510a81b8f23"
CHAT_KEY = "330aa611d8dbd74fd3f4e8e9ec6b418211e1d96b5f401e75e7df0b23b0eb5c5f"
SPACE_ID = "857d89ce51fd85f44209f2dea74a9bd1"


def test_keys_are_those_written_before():
    from queryeval.engines.chat import digest
    from queryeval.engines.retrievers.cache import EmbeddingCache
    from queryeval.run.cache import call_key

    assert call_key(("sys", "1"), {"task": "answers", "case_id": "c1", "turn": 0,
                                   "repeat": 1}) == CALL_KEY
    assert digest({"model": "m", "messages": [{"role": "user", "content": "héllo"}],
                   "temperature": 0.0}) == CHAT_KEY
    assert EmbeddingCache.space_id({"model": "hash-64", "prefix": "é",
                                    "normalize": True}) == SPACE_ID


def test_canonical_json_sorts_and_packs():
    assert canonical_json({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"é"]}'.encode()
    assert canonical_json({"x": "é"}, ensure_ascii=True) == b'{"x":"\\u00e9"}'
    with pytest.raises(ValueError):
        canonical_json(float("nan"), allow_nan=False)


def test_layouts(tmp_path):
    key = "ab" + "c" * 62
    assert CacheFiles(tmp_path).path(key) == tmp_path / f"{key}.json"
    assert CacheFiles(tmp_path, fan_out=True).path(key) == tmp_path / "ab" / f"{key}.json"
    assert CacheFiles(tmp_path, fan_out=True, strip=True).path(key) == \
        tmp_path / "ab" / f"{'c' * 62}.json"


@pytest.mark.parametrize("data", [b"", b'{"raw": 1', b"[1, 2]", b'"text"', b"\xff\xfe{}",
                                  b"[" * 100_000])
def test_an_unreadable_record_is_a_miss(tmp_path, data):
    path = tmp_path / "r.json"
    path.write_bytes(data)
    assert read_record(path) is None


def test_absent_or_a_folder_is_a_miss(tmp_path):
    assert read_record(tmp_path / "none.json") is None
    assert read_record(tmp_path) is None


def test_write_record_is_whole_and_leaves_no_temporary(tmp_path):
    old = os.umask(0o022)
    try:
        write_record(tmp_path / "a" / "b.json", '{"k": "é"}')
    finally:
        os.umask(old)
    path = tmp_path / "a" / "b.json"
    assert read_record(path) == {"k": "é"}
    assert os.stat(path).st_mode & 0o777 == 0o600   # the owner's only, whatever the umask
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["b.json"]


def test_a_call_cache_written_before_still_hits(tmp_path):
    from queryeval.run.cache import MARKER, MARKER_TEXT, CallCache

    (tmp_path / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    entry = tmp_path / CALL_KEY[:2] / f"{CALL_KEY[2:]}.json"
    entry.parent.mkdir()
    entry.write_bytes(b'{"raw":{"answer":42}}')
    cache = CallCache(tmp_path)
    assert cache.get(CALL_KEY) == {"answer": 42}
    assert cache.info()["entries"] == 1
    entry.write_bytes(b'{"raw":')  # truncated: a miss
    cache.get(CALL_KEY)
    assert (cache.hits, cache.misses) == (1, 1)
    assert cache.put(CALL_KEY, {"answer": 43})
    assert entry.read_bytes() == b'{"raw":{"answer":43}}'


def test_a_chat_cache_written_before_still_hits(tmp_path):
    from queryeval.engines.chat import DiskCache

    (tmp_path / f"{CHAT_KEY}.json").write_text(
        json.dumps({"content": "yes", "model": "m"}, ensure_ascii=False, indent=1),
        encoding="utf-8")
    cache = DiskCache(tmp_path)
    assert cache.get(CHAT_KEY) == "yes"
    (tmp_path / f"{CHAT_KEY}.json").write_text('{"content": 3}', encoding="utf-8")
    assert cache.get(CHAT_KEY) is None  # not a text: a miss
    cache.put(CHAT_KEY, {"content": "no"})
    assert cache.get(CHAT_KEY) == "no"
    assert DiskCache(None).get(CHAT_KEY) is None


def test_a_neighbour_set_written_before_hits_and_a_corrupt_one_is_a_miss(tmp_path):
    from queryeval.engines.query.neighbours.distill import cached_set

    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "neighbour_000.sqlite").write_bytes(b"")
    manifest = folder / "manifest.json"
    doc = {  # as the builder writes it (indent=1)
        "folder": "/elsewhere", "dialect": "sqlite", "mutants": [["op", "SELECT 2"]],
        "neighbours": [{"file": "neighbour_000.sqlite", "rows": 3, "kills": ["SELECT 2"],
                        "tables": ["t"]}],
        "refuted_on_original": [], "survivors": [], "candidates": 5, "executions": 11,
        "seconds": 0.5, "empty_candidates": 1, "reason": "", "tables": ["t", "u"],
        "filled": ["t"], "views": {"v": ["u"]}}
    manifest.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    got = cached_set(folder, "sqlite")
    assert got is not None and got.cached and got.folder == folder
    assert [(nb.file, nb.rows, nb.kills, nb.tables) for nb in got.neighbours] == \
        [("neighbour_000.sqlite", 3, ["SELECT 2"], ["t"])]
    assert (got.candidates, got.executions, got.empty_candidates) == (5, 11, 1)
    assert (got.tables, got.filled, got.views) == (["t", "u"], ["t"], {"v": ["u"]})
    for key in ("tables", "filled", "views"):  # as a builder before wrote it: which
        doc.pop(key)  # tables hold rows unknown, so it is built again
    manifest.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    assert cached_set(folder, "sqlite") is None
    manifest.write_text('{"neighbours": [', encoding="utf-8")  # truncated
    assert cached_set(folder, "sqlite") is None
    manifest.write_text('{"neighbours": [{"nope": 1}]}', encoding="utf-8")  # other layout
    assert cached_set(folder, "sqlite") is None


def test_a_store_with_an_unreadable_marker_is_built_again(tmp_path):
    pytest.importorskip("pyoxigraph")
    from queryeval.engines.query.sparql_store import MARKER, prepare_store

    src = tmp_path / "g.nt"
    src.write_text("<http://x/a> <http://x/p> <http://x/b> .\n"
                   "<http://x/a> <http://x/p> <http://x/c> .\n", encoding="utf-8")
    store = tmp_path / "store"
    first = prepare_store([src], store)
    assert (first.quads, first.reused) == (2, False)
    assert prepare_store([src], store).reused
    (store / MARKER).write_text('{"identity": ', encoding="utf-8")  # truncated
    again = prepare_store([src], store)
    assert (again.quads, again.reused) == (2, False)
    assert read_record(store / MARKER)["quads"] == 2
