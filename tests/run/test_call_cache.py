"""The call cache: an unchanged re-run makes zero calls with identical metrics, a changed case
is called again alone, errors and malformed outputs are never cached, the system's identity
is part of the key, atomic entries under concurrent writers, LRU eviction, cache info|clear."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import ConfigError
from queryeval.run.cache import CallCache, call_key

MEX = ("MEX", "Mexico")
USA = ("USA", "United States")


def sel(*terms: tuple[str, str]) -> list[dict]:
    return [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": i, "name": n} for i, n in terms]}]}]


def case(cid: str, text: str, *terms) -> dict:
    return {"id": cid, "conversation": [
        {"role": "user", "content": text, "target": {"indicator_selection": sel(*terms)}}]}


CASES = [case("a", "mexico", MEX), case("b", "usa", USA), case("c", "mexico usa", MEX, USA),
         case("d", "nothing", USA)]


class Counting:
    """A system that counts its calls per case; ``fail``: case ids that raise once."""

    def __init__(self, fail: set[str] | None = None, malformed: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.fail = set(fail or ())
        self.malformed = set(malformed or ())
        self.lock = threading.Lock()

    def __call__(self, req: dict) -> dict:
        with self.lock:
            self.calls.append(req["case_id"])
        if req["case_id"] in self.fail:
            self.fail.discard(req["case_id"])
            raise RuntimeError("overloaded")
        if req["case_id"] in self.malformed:
            self.malformed.discard(req["case_id"])
            return {"indicator_selection": "not a list"}
        text = req["messages"][-1]["content"]
        terms = [t for key, t in (("mexico", MEX), ("usa", USA)) if key in text]
        return {"indicator_selection": sel(*terms) if terms else []}


def run(cases, system, cache_dir, **kw):
    kw.setdefault("system_version", "v1")
    kw.setdefault("system_name", "counting")  # an instance has no name of its own
    return qe.evaluate(cases, system=system, cache=True, cache_dir=cache_dir, **kw)


def test_unchanged_rerun_makes_zero_calls_and_identical_metrics(tmp_path):
    sys1 = Counting()
    first = run(CASES, sys1, tmp_path / "cache", repeats=3)
    assert len(sys1.calls) == 12
    assert first.metrics["cache"]["hits"] == 0 and first.metrics["cache"]["calls"] == 12
    sys2 = Counting()
    second = run(CASES, sys2, tmp_path / "cache", repeats=3)
    assert sys2.calls == []
    assert second.metrics["cache"]["hits"] == 12 and second.metrics["cache"]["calls"] == 0
    assert second.metrics["overall_metrics"] == first.metrics["overall_metrics"]
    assert second.metrics["repeats"] == first.metrics["repeats"]
    # the cache is shared across suites: a suite holding one of the cases reuses its entries
    sys3 = Counting()
    run([CASES[1]], sys3, tmp_path / "cache", repeats=3)
    assert sys3.calls == []
    # a fourth repeat is new: only repeat 3 of each case is called
    sys4 = Counting()
    run(CASES, sys4, tmp_path / "cache", repeats=4)
    assert sorted(sys4.calls) == ["a", "b", "c", "d"]


def test_a_changed_case_alone_is_called_again(tmp_path):
    run(CASES, Counting(), tmp_path / "cache")
    changed = [*CASES[:2], case("c", "usa and mexico", MEX, USA), CASES[3]]
    sys2 = Counting()
    run(changed, sys2, tmp_path / "cache")
    assert sys2.calls == ["c"]


def test_system_identity_is_part_of_the_key(tmp_path):
    run(CASES, Counting(), tmp_path / "cache")
    sys2 = Counting()
    run(CASES, sys2, tmp_path / "cache", system_version="v2")
    assert sorted(sys2.calls) == ["a", "b", "c", "d"]
    assert call_key("python:m:f@v1", {"case_id": "a", "turn": 0}) != \
        call_key("python:m:g@v1", {"case_id": "a", "turn": 0})
    # canonical JSON: key order does not matter; the repeat index does
    assert call_key("s@1", {"a": 1, "b": [1, 2]}) == call_key("s@1", {"b": [1, 2], "a": 1})
    assert call_key("s@1", {"a": 1}) == call_key("s@1", {"a": 1, "repeat": 0})
    assert call_key("s@1", {"a": 1, "repeat": 1}) != call_key("s@1", {"a": 1})


def test_errors_and_malformed_outputs_are_not_cached(tmp_path):
    sys1 = Counting(fail={"a"}, malformed={"b"})
    first = run(CASES, sys1, tmp_path / "cache", retries=0)
    assert first.metrics["calls"]["failed"] == 2
    sys2 = Counting()
    second = run(CASES, sys2, tmp_path / "cache", retries=0)
    assert sorted(sys2.calls) == ["a", "b"]
    assert second.metrics["calls"]["failed"] == 0


def test_cache_is_off_by_default_and_needs_a_version(tmp_path):
    sys1 = Counting()
    qe.evaluate(CASES, system=sys1)
    qe.evaluate(CASES, system=sys1)
    assert len(sys1.calls) == 8
    with pytest.raises(ConfigError, match="--cache needs --system-version"):
        qe.evaluate(CASES, system=sys1, cache=True, cache_dir=tmp_path / "c")


def _writer(folder: str, n: int) -> None:
    cache = CallCache(folder)
    cache.create()  # three processes at once: one marker, no refusal
    for i in range(n):
        cache.put(call_key("s@1", {"i": i % 20}), {"value": "x" * 2000, "i": i % 20})


def test_a_cache_another_run_made_meanwhile_is_kept_not_refused(tmp_path, monkeypatch):
    """The race of three runs creating one cache, made certain: this run looks for the marker
    (not there yet), another run writes it and its first entry, then this run sees a folder
    that is not empty -- it is that run's cache, not a foreign folder."""
    other = CallCache(tmp_path)
    other.create()
    other.put(call_key("s@1", {"i": 0}), {"value": "x"})
    looks = []
    real = CallCache.has_marker

    def late(self):  # the first look comes before the other run's marker
        looks.append(1)
        return False if len(looks) == 1 else real(self)

    monkeypatch.setattr(CallCache, "has_marker", late)
    CallCache(tmp_path).create()  # no ConfigError
    assert len(looks) == 2
    monkeypatch.undo()
    assert [p for p, _, _ in CallCache(tmp_path).entries()]  # the entry is still there


def test_a_folder_with_files_and_no_marker_is_still_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not a queryeval call cache"):
        CallCache(tmp_path).create()
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert not CallCache(tmp_path).has_marker()


@pytest.mark.slow
def test_concurrent_writers_leave_whole_entries(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), 200)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = CallCache(tmp_path)
    entries = list(cache.entries())
    assert len(entries) == 20
    for path, _, _ in entries:
        assert json.loads(path.read_text())["raw"]["value"] == "x" * 2000
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_eviction_drops_least_recently_used_first(tmp_path):
    cache = CallCache(tmp_path)
    cache.create()
    keys = [call_key("s@1", {"i": i}) for i in range(4)]
    for i, key in enumerate(keys):
        assert cache.put(key, {"i": i, "pad": "p" * 1000})
        os.utime(cache._path(key), (1000 + i, 1000 + i))
    cache.get(keys[0])  # a hit refreshes the oldest entry
    size = cache._path(keys[0]).stat().st_size
    assert cache.evict(2 * size) == 2
    left = {json.loads(p.read_text())["raw"]["i"] for p, _, _ in cache.entries()}
    assert left == {0, 3}
    assert cache.info()["entries"] == 2
    small = CallCache(tmp_path, max_mb=size / (1024 * 1024))
    assert small.evict() == 1 and small.info()["entries"] == 1


def test_cache_info_and_clear_commands(tmp_path, capsys):
    run(CASES, Counting(), tmp_path / "cache")
    assert main(["cache", "info", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert ": 4 entries," in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "cleared 4 entries" in capsys.readouterr().out
    assert CallCache(tmp_path / "cache").info()["entries"] == 0


def test_cli_rerun_makes_zero_calls(tmp_path):
    counter = tmp_path / "count.txt"
    mod = tmp_path / "sysmod.py"
    mod.write_text(
        "from pathlib import Path\n"
        f"COUNT = Path({str(counter)!r})\n"
        "def bot(req):\n"
        "    with COUNT.open('a') as fh:\n"
        "        fh.write(req['case_id'] + '\\n')\n"
        "    return {'indicator_selection': []}\n")
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    args = ["run", str(suite), "--system", f"python:{mod}:bot", "--cache", "--cache-dir",
            str(tmp_path / "cache"), "--system-version", "1", "-q", "--no-report"]
    assert main([*args, "--out", str(tmp_path / "o1")]) == 0
    assert len(counter.read_text().splitlines()) == 4
    assert main([*args, "--out", str(tmp_path / "o2")]) == 0
    assert len(counter.read_text().splitlines()) == 4
    m1, m2 = (json.loads(next((tmp_path / o).rglob("metrics_*.json")).read_text())
              for o in ("o1", "o2"))
    assert m1["overall_metrics"] == m2["overall_metrics"]
    assert m2["cache"]["hits"] == 4 and m2["cache"]["calls"] == 0


def test_cache_dir_default_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "env"))
    assert CallCache().folder == tmp_path / "env" / "calls"
    monkeypatch.delenv("QUERYEVAL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert CallCache().folder == tmp_path / "xdg" / "queryeval" / "calls"
    assert not Path(tmp_path / "env").exists()


def test_a_poisoned_cache_entry_is_a_miss_deleted_and_called_again(tmp_path):
    first = run(CASES, Counting(), tmp_path / "cache")
    entries = sorted((tmp_path / "cache").glob("??/*.json"))
    assert len(entries) == 4
    # NaN (read by json.loads), an output the task refuses, and a lone surrogate
    entries[0].write_text('{"raw": {"indicator_selection": [{"dataset_id": "D", "x": NaN}]}}')
    entries[1].write_text('{"raw": {"indicator_selection": "not a list"}}')
    entries[2].write_text('{"raw": {"indicator_selection": "\\ud800"}}')
    sys2 = Counting()
    second = run(CASES, sys2, tmp_path / "cache")  # no crash: the three are called again
    assert len(sys2.calls) == 3
    assert second.metrics["cache"]["hits"] == 1 and second.metrics["cache"]["calls"] == 3
    assert second.metrics["overall_metrics"] == first.metrics["overall_metrics"]
    # the bad entries were replaced by the fresh (good) outputs: a third run calls nothing
    sys3 = Counting()
    run(CASES, sys3, tmp_path / "cache")
    assert sys3.calls == []


def test_clear_and_info_refuse_a_folder_that_is_not_a_cache(tmp_path, capsys):
    other = tmp_path / "notcache"
    (other / "ab").mkdir(parents=True)
    (other / "ab" / "config.json").write_text("{}")
    (other / "ab" / ("0" * 62 + ".json")).write_text("{}")
    for action in ("clear", "info"):
        assert main(["cache", action, "--cache-dir", str(other)]) == 2
        err = capsys.readouterr().err
        assert err.strip().count("\n") == 0 and "not a queryeval call cache" in err
    assert sorted(p.name for p in (other / "ab").iterdir()) == ["0" * 62 + ".json",
                                                               "config.json"]
    with pytest.raises(ConfigError, match="not a queryeval call cache"):
        CallCache(other).clear()
    assert CallCache(other).evict(0) == 0  # the end-of-run eviction: nothing deleted
    assert (other / "ab" / "config.json").exists()
    # a run refuses to make a non-empty folder without the marker its cache
    with pytest.raises(ConfigError, match="not a queryeval call cache"):
        run(CASES, Counting(), other)


def test_clear_deletes_only_entries_and_never_follows_links(tmp_path, capsys):
    cache_dir = tmp_path / "cache"
    run(CASES, Counting(), cache_dir)
    assert (cache_dir / "CACHEDIR.TAG").is_file()
    outside = tmp_path / "outside"
    (outside / "cd").mkdir(parents=True)
    victim = outside / "cd" / ("1" * 62 + ".json")
    victim.write_text('{"raw": 1}')
    (cache_dir / "cd").symlink_to(outside / "cd")  # a linked subfolder
    sub = next(p for p in cache_dir.iterdir() if p.is_dir() and not p.is_symlink())
    (sub / ("2" * 62 + ".json")).symlink_to(victim)  # a linked entry
    (sub / "notes.json").write_text("keep")
    (sub / ("3" * 61 + ".json")).write_text("keep")  # 61 hex: not an entry name
    assert main(["cache", "clear", "--cache-dir", str(cache_dir)]) == 0
    assert "cleared 4 entries" in capsys.readouterr().out
    assert victim.read_text() == '{"raw": 1}'
    assert (sub / "notes.json").exists() and (sub / ("3" * 61 + ".json")).exists()
    assert (sub / ("2" * 62 + ".json")).is_symlink()


def test_info_with_a_size_limit_only_reports(tmp_path, capsys):
    run(CASES, Counting(), tmp_path / "cache")
    assert main(["cache", "info", "--cache-dir", str(tmp_path / "cache"),
                 "--cache-max-mb", "0.000001"]) == 0
    out = capsys.readouterr().out
    assert ": 4 entries," in out and "over the 1e-06 MB limit" in out
    assert CallCache(tmp_path / "cache").info()["entries"] == 4


def bot(req: dict, good: bool = True) -> dict:
    return {"indicator_selection": sel(MEX) if good else []}


def test_objects_without_an_unambiguous_name_need_system_name(tmp_path):
    import functools

    cache_dir = tmp_path / "cache"
    kw = {"cache": True, "cache_dir": cache_dir, "system_version": "v1"}
    for system, kind in [(functools.partial(bot, good=True), "a functools.partial"),
                         (lambda req: bot(req), "a lambda"),
                         (Counting(), "an instance of Counting"),
                         (Counting().__call__, "a bound method")]:
        with pytest.raises(ConfigError, match=f"cache=True with {kind}: .*system_name="):
            qe.evaluate(CASES[:1], system=system, **kw)

    def local(req):
        return bot(req)

    with pytest.raises(ConfigError, match="a local function"):
        qe.evaluate(CASES[:1], system=local, **kw)
    # the red-team case: two partials, each named, do not share entries
    good = qe.evaluate(CASES[:1], system=functools.partial(bot, good=True),
                       system_name="bot good", **kw)
    bad = qe.evaluate(CASES[:1], system=functools.partial(bot, good=False),
                      system_name="bot bad", **kw)
    assert good.metrics["overall_metrics"]["macro_recall"] == 1.0
    assert bad.metrics["cache"]["hits"] == 0
    assert bad.metrics["overall_metrics"]["macro_recall"] == 0.0
    # a module-level function is named by itself; without cache nothing is asked
    plain = qe.evaluate(CASES[:1], system=bot, **kw)
    assert plain.metrics["cache"]["calls"] == 1
    assert qe.evaluate(CASES[:1], system=lambda req: bot(req)).metrics["calls"]["total"] == 1


def test_the_key_keeps_name_and_version_apart():
    from types import SimpleNamespace

    from queryeval.run.config import system_identity

    req = {"case_id": "a", "turn": 0}

    def ident(name: str, version: str) -> tuple[str, str]:
        return system_identity(SimpleNamespace(system=None, system_name=name,
                                               system_version=version))

    assert call_key(ident("a@b", "c"), req) != call_key(ident("a", "b@c"), req)
    assert call_key(("a@b", "c"), req) != call_key(("a", "b@c"), req)
    assert call_key(("python:m:f", "v1"), req) != call_key(("python:m:f@v1", ""), req)
    assert call_key(("s", "1"), req) == call_key(["s", "1"], {**req, "repeat": 0})
