"""The gold-result cache and ``near_deadline`` (issue 39): the cache stores each execution's
time with when it was measured; a later audit served from it says its times are cached (in
the finding, the gold's entry and the console); ``--no-cache`` (and
``qe.audit(cache=False)``) executes every gold now and refreshes the cache with these times."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import queryeval as qe
from helpers.audit_ties_deadline import _db, _suite
from queryeval.cli.app import main
from queryeval.tasks.query.task import QueryTask

GOLDS = {"slow": "SELECT name FROM s WHERE score > 75", "quick": "SELECT name FROM s"}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _machine(monkeypatch, slow_ms: float) -> list[str]:
    """Time the golds as a machine where ``slow`` takes ``slow_ms`` (the test's clock, not
    the box's); the queries executed are listed."""
    real, ran = QueryTask._execute, []

    def timed(self, source, query):
        ran.append(query)
        table, info = real(self, source, query)
        if info.get("status") == "ok":
            info = {**info, "elapsed_ms": slow_ms if "score" in query else 1.0}
        return table, info

    monkeypatch.setattr(QueryTask, "_execute", timed)
    return ran


def _audit(tmp_path, suite, db, name, *extra) -> dict:
    out = tmp_path / f"{name}.json"
    assert main(["audit", str(suite), "--database", str(db), "--query-timeout", "0.05",
                 "--json", str(out), *extra]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def _golds(doc: dict) -> dict:
    return {g["case_id"]: g for g in doc["golds"]}


def test_cached_times_say_so_and_no_cache_measures_now(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db, suite = _db(tmp_path), _suite(tmp_path, GOLDS)
    before = _now()
    _machine(monkeypatch, 40.0)  # 40 ms of a 50 ms deadline: 80%
    first = _audit(tmp_path, suite, db, "a")
    assert _golds(first)["slow"]["timing"] == "measured"
    assert _golds(first)["slow"]["near_deadline"] == {"elapsed_ms": 40.0, "deadline_ms": 50.0,
                                                      "share": 0.8}
    capsys.readouterr()

    # the machine is now fast, the data unchanged: served from the cache, the finding is the
    # first audit's and says so
    ran = _machine(monkeypatch, 1.0)
    second = _audit(tmp_path, suite, db, "b")
    assert ran == []  # neither gold executed
    slow = _golds(second)["slow"]
    assert slow["timing"] == "cached" and before <= slow["measured_at"] <= _now()
    [finding] = [f for f in second["findings"] if f["kind"] == "near_deadline"]
    assert finding["evidence"]["timing"] == "cached"
    assert finding["evidence"]["measured_at"] == slow["measured_at"]
    assert finding["evidence"]["elapsed_ms"] == 40.0
    assert slow["warnings"] == [f"close to the deadline: 40 ms of 50 ms (80%) (timing cached "
                                f"from the audit of {slow['measured_at']}; --no-cache "
                                "measures it now)"]
    assert {g["timing"] for g in second["golds"]} == {"cached"}
    console = " ".join(capsys.readouterr().out.split())  # the console wraps at its width
    assert ("the times of 2 gold(s) are cached from earlier audits (the earliest measured at "
            f"{slow['measured_at']}), near_deadline included; --no-cache measures them now"
            in console)

    # --no-cache: both golds executed now (twice each), decided on these times
    ran = _machine(monkeypatch, 1.0)
    refreshed_from = _now()
    third = _audit(tmp_path, suite, db, "c", "--no-cache")
    assert sorted(ran) == sorted([q for q in GOLDS.values() for _ in range(2)])
    assert {g["timing"] for g in third["golds"]} == {"measured"}
    assert not [f for f in third["findings"] if f["kind"] == "near_deadline"]

    # ... and refreshed the cache: the next audit reads the new times, nothing executed
    ran = _machine(monkeypatch, 40.0)
    fourth = _audit(tmp_path, suite, db, "d")
    assert ran == []
    slow = _golds(fourth)["slow"]
    assert slow["timing"] == "cached" and slow["measured_at"] >= refreshed_from
    assert slow["elapsed_ms"] == [1.0, 1.0] and "near_deadline" not in slow


def test_the_python_api_bypasses_the_cache_too(tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db, suite = _db(tmp_path), _suite(tmp_path, GOLDS)
    _machine(monkeypatch, 40.0)
    qe.audit(suite, source=db, timeout_s=0.05)
    ran = _machine(monkeypatch, 1.0)
    cached = qe.audit(suite, source=db, timeout_s=0.05)
    assert ran == [] and len(cached.by_kind("near_deadline")) == 1
    now = qe.audit(suite, source=db, timeout_s=0.05, cache=False)
    assert len(ran) == 4 and now.by_kind("near_deadline") == []
    assert {g["timing"] for g in now.golds} == {"measured"}
