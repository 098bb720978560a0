"""``python:`` system specs: ``async def`` callables (issue 23 item 5) and modules beside the
system's file (item 6), in process, in isolated workers, from the CLI, ``qe.evaluate`` and
``qe.testing``."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from queryeval.run.runner import RetryPolicy, call_turn, run_cases
from queryeval.systems.factory import make_system
from queryeval.tasks.base import get_task

TASK = get_task("indicator_selection")
REQUEST = {"task": "indicator_selection", "case_id": "c1", "turn": 0,
           "messages": [{"role": "user", "content": "select dataset D1 indicator X1"}]}
NO_WAIT = RetryPolicy(retries=0, backoff=0.0)

ANSWER = """
def answer_for(request):
    words = request["messages"][-1]["content"].split()
    ds, ind = words[words.index("dataset") + 1], words[words.index("indicator") + 1]
    return {"indicator_selection": [{"dataset_id": ds, "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": ind, "name": "indicator " + ind}]}]}]}
"""

ASYNC_BOT = """
import asyncio
from patterns import answer_for

IN_FLIGHT = [0, 0]  # now, most at once

async def answer(request):
    IN_FLIGHT[0] += 1
    IN_FLIGHT[1] = max(IN_FLIGHT[1], IN_FLIGHT[0])
    try:
        await asyncio.sleep(0.05)
        return answer_for(request)
    finally:
        IN_FLIGHT[0] -= 1

async def slow(request):
    await asyncio.sleep(30)

def sync_answer(request):
    return answer_for(request)
"""


def _bot(folder: Path) -> Path:
    """``bot.py`` with ``patterns.py`` beside it, in a folder that is not the cwd."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "patterns.py").write_text(ANSWER, encoding="utf-8")
    bot = folder / "bot.py"
    bot.write_text(ASYNC_BOT, encoding="utf-8")
    return bot


def _suite(path: Path, n: int) -> Path:
    docs = []
    for i in range(n):
        ds, ind = f"DS{i % 3}", f"X{i:03d}"
        docs.append(json.dumps({"id": f"case-{i:03d}", "conversation": [{
            "role": "user", "content": f"select dataset {ds} indicator {ind}",
            "target": {"indicator_selection": [{"dataset_id": ds, "dimensions": [
                {"dimension_name": "INDICATOR",
                 "values": [{"id": ind, "name": f"indicator {ind}"}]}]}]}}]}))
    path.write_text("---\n".join(d + "\n" for d in docs), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _forget_patterns():
    """Each test imports ``patterns`` from its own folder."""
    yield
    sys.modules.pop("patterns", None)


def _expected(request: dict) -> list:
    words = request["messages"][-1]["content"].split()
    return [{"dataset_id": words[2], "dimensions": [{"dimension_name": "INDICATOR", "values": [
        {"id": words[4], "name": f"indicator {words[4]}"}]}]}]


# --- item 6: the file's own folder is importable ------------------------------------------------
@pytest.mark.parametrize("isolate", [False, True])
def test_a_file_spec_imports_a_module_beside_it(tmp_path, monkeypatch, isolate):
    bot = _bot(tmp_path / "elsewhere")
    monkeypatch.chdir(tmp_path)  # not the bot's folder
    monkeypatch.setattr(sys, "path", list(sys.path))
    system = make_system(f"python:{bot}:sync_answer", isolate=isolate)
    try:
        out = call_turn(system, TASK, REQUEST, timeout=30, policy=NO_WAIT)
    finally:
        system.close()
    assert out.error is None
    assert out.output == _expected(REQUEST)


def test_a_relative_file_spec_imports_a_module_beside_it(tmp_path, monkeypatch):
    _bot(tmp_path / "bots")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    system = make_system("python:bots/bot.py:sync_answer")
    out = call_turn(system, TASK, REQUEST, timeout=30, policy=NO_WAIT)
    assert out.error is None and out.output == _expected(REQUEST)


# --- item 5: async def by spec ------------------------------------------------------------------
@pytest.mark.parametrize("isolate", [False, True])
def test_an_async_function_by_spec_is_awaited(tmp_path, monkeypatch, isolate):
    bot = _bot(tmp_path / "b")
    monkeypatch.setattr(sys, "path", list(sys.path))
    system = make_system(f"python:{bot}:answer", isolate=isolate)
    try:
        out = call_turn(system, TASK, REQUEST, timeout=30, policy=NO_WAIT)
    finally:
        system.close()
    assert out.error is None, out.error
    assert out.output == _expected(REQUEST)


@pytest.mark.parametrize("isolate", [False, True])
def test_an_async_function_by_spec_times_out(tmp_path, monkeypatch, isolate):
    bot = _bot(tmp_path / "b")
    monkeypatch.setattr(sys, "path", list(sys.path))
    system = make_system(f"python:{bot}:slow", isolate=isolate)
    try:
        out = call_turn(system, TASK, REQUEST, timeout=0.2, policy=NO_WAIT)
    finally:
        system.close()
    assert out.error is not None and out.error["kind"] == "timeout"


def test_async_calls_by_spec_share_one_loop_within_the_concurrency_limit(tmp_path, monkeypatch):
    bot = _bot(tmp_path / "b")
    monkeypatch.setattr(sys, "path", list(sys.path))
    suite = _suite(tmp_path / "s.yaml", 24)
    from queryeval.suite import load_suite

    cases = list(load_suite(str(suite)).iter_cases())
    system = make_system(f"python:{bot}:answer", concurrency=4)
    records: list[dict] = []
    try:
        done = run_cases(cases, system, TASK, on_record=records.append, concurrency=4,
                         timeout=30, policy=NO_WAIT, stop=threading.Event())
    finally:
        system.close()
    assert done == 24 and all(r["status"] == "ok" for r in records)
    module = next(m for name, m in sys.modules.items()
                  if getattr(m, "__file__", None) == str(bot.resolve()))
    assert module.IN_FLIGHT[1] <= 4  # the limit holds
    assert module.IN_FLIGHT[1] >= 2  # and calls do overlap on the one loop


def test_async_spec_from_the_cli(tmp_path, monkeypatch):
    from queryeval.cli.app import main

    bot = _bot(tmp_path / "b")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    suite = _suite(tmp_path / "s.yaml", 6)
    code = main(["run", str(suite), "--system", f"python:{bot}:answer", "--out",
                 str(tmp_path / "runs"), "-q", "--no-report", "-c", "3"])
    assert code == 0
    (metrics,) = (tmp_path / "runs").rglob("metrics_*.json")
    doc = json.loads(metrics.read_text())
    assert doc["calls"] == {"total": 6, "failed": 0}
    (results,) = (tmp_path / "runs").rglob("results_*.jsonl")
    assert [json.loads(line)["status"] for line in results.read_text().splitlines()] == ["ok"] * 6


def test_async_spec_in_evaluate_and_testing(tmp_path, monkeypatch):
    import queryeval as qe
    from queryeval.testing import assert_suite, check_case

    bot = _bot(tmp_path / "b")
    monkeypatch.setattr(sys, "path", list(sys.path))
    suite = _suite(tmp_path / "s.yaml", 5)
    run = qe.evaluate(str(suite), system=f"python:{bot}:answer", out=tmp_path / "runs",
                      reports=False)
    assert run.calls == {"total": 5, "failed": 0}
    metrics = assert_suite(suite, system=f"python:{bot}:answer",
                           thresholds={"macro_recall": 1.0}, out=tmp_path / "runs2")
    assert metrics["calls"] == {"total": 5, "failed": 0}
    case = json.loads(suite.read_text().split("---")[0])
    record = check_case(case, f"python:{bot}:answer")
    assert record["status"] == "ok"

