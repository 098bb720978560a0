"""Calls to the LLM judge count toward ``--max-error-rate`` and exit code 3 as calls to the
system do: an unreachable judge no longer leaves a run that exits 0 with the cases it should
have decided silently not passed (docs/judge.md, "Failed judge calls")."""

from __future__ import annotations

import json
import socket

import pytest

from helpers.freeform_judge_e2e import EXAMPLE
from helpers.judge_fake import FakeJudgeServer, verdict_reply


def _closed_port_url() -> str:
    with socket.socket() as s:  # a port nothing listens on: every call is refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch):
    """Retries of a failed judge call happen at once (the waits are the chat client's)."""
    from queryeval.engines import chat

    monkeypatch.setattr(chat.ChatClient, "backoff", lambda self, retry, hint: 0.0)


def _run(tmp_path, url: str, *extra: str) -> tuple[int, dict]:
    from queryeval.cli.app import main

    out = tmp_path / "runs"
    code = main(["run", str(EXAMPLE / "cases.jsonl"), "--responses",
                 str(EXAMPLE / "responses.jsonl"), "--out", str(out), "-q",
                 "--judge-model", "m", "--judge-base-url", url, "--judge-when", "always",
                 "--no-report", *extra])
    [metrics] = out.rglob("metrics_*.json")
    return code, json.loads(metrics.read_text())


def _answered() -> int:
    """The example's answered cases: under ``--judge-when always`` the judge is asked each."""
    rows = map(json.loads, (EXAMPLE / "responses.jsonl").read_text().splitlines())
    return sum(bool((r.get("response") or "").strip()) for r in rows)


def test_an_unreachable_judge_exits_3_and_the_metrics_count_its_calls(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    asked = _answered()
    assert asked >= 2
    code, metrics = _run(tmp_path, _closed_port_url())
    assert code == 3
    assert metrics["judge_calls"] == {"total": asked, "failed": asked}
    assert metrics["calls"]["failed"] == 0            # the system's calls all succeeded
    assert metrics["overall_metrics"]["judge_errors"] == asked
    assert f"all {asked} calls to the judge failed" in capsys.readouterr().err


def test_some_failed_judge_calls_follow_max_error_rate(tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    asked = _answered()
    fake = FakeJudgeServer()  # calls about the first case asked fail (HTTP 400, every
    first: list[str] = []     # retry too), the others answer pass

    def script(n: int, body: dict):
        user = body["messages"][-1]["content"]
        first.append(user) if not first else None
        return (400, {}, b"bad request") if user == first[0] else verdict_reply("pass")

    fake.script = script
    try:
        code, metrics = _run(tmp_path, fake.url)
        assert code == 0  # the default --max-error-rate 1.0 fails only when all failed
        assert metrics["judge_calls"] == {"total": asked, "failed": 1}
        code, metrics = _run(tmp_path / "strict", fake.url, "--max-error-rate", "0.1")
    finally:
        fake.close()
    assert 1 / asked > 0.1
    assert code == 3


def test_a_run_without_a_judge_writes_no_judge_calls(tmp_path, monkeypatch):
    from queryeval.cli.app import main

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["run", str(EXAMPLE / "cases.jsonl"), "--responses",
                 str(EXAMPLE / "responses.jsonl"), "--out", str(tmp_path / "bare"), "-q",
                 "--no-report"]) == 0
    [metrics] = (tmp_path / "bare").rglob("metrics_*.json")
    assert "judge_calls" not in json.loads(metrics.read_text())


def test_one_failed_call_is_named_as_one():
    from queryeval.run.finish import CallsFailed, check_error_rate

    with pytest.raises(CallsFailed, match="^the one call to the judge failed$"):
        check_error_rate(1, 1, to="the judge")
    with pytest.raises(CallsFailed, match="^all 2 calls to the system failed$"):
        check_error_rate(2, 2)
