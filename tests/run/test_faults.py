"""Fault injection through ``queryeval run``: a loopback HTTP system and a ``cmd:`` process
that fail on purpose (5xx, 429 + Retry-After, hangs, malformed and oversized JSON, dropped
connections, crashes). The run must finish, every case must be recorded exactly once (scored
or carrying its error), the retries must follow the policy, and ``errors_by_kind`` must count
the final errors. The harness lives in ``bench/faults.py`` (its full-size run)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import httpx
import pytest

from queryeval.errors import SystemCallError
from queryeval.systems.http import HttpSystem
from queryeval.systems.subprocess import SubprocessSystem

_SPEC = importlib.util.spec_from_file_location(
    "queryeval_bench_faults", Path(__file__).resolve().parents[2] / "bench" / "faults.py")
faults = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = faults
_SPEC.loader.exec_module(faults)


def test_replaying_the_retry_policy():
    H, C = faults.HTTP_OUTCOMES, faults.CMD_OUTCOMES
    assert faults.expected(["ok"], H, 2) == (1, None)
    assert faults.expected(["503", "429", "ok"], H, 2) == (3, None)
    assert faults.expected(["500", "502", "503"], H, 2) == (3, "http_status")
    assert faults.expected(["hang", "close", "raise"], H, 2) == (3, "connection")
    assert faults.expected(["500", "malformed"], H, 2) == (2, "malformed")  # not retried
    assert faults.expected(["oversized_chunked"], H, 2) == (1, "malformed")
    assert faults.expected(["503"], H, 0) == (1, "http_status")
    assert faults.expected(["crash", "hang", "exit"], C, 2) == (3, "process")
    assert faults.expected(["raise", "oversized"], C, 5) == (2, "malformed")


def test_http_system_faults(tmp_path):
    report = faults.http_faults(tmp_path, 300, seed=11, retries=2, timeout=2.0, concurrency=16)
    assert report["exit_code"] == 0
    assert report["problems"] == []
    assert (report["cases"], report["records"], report["lost"], report["duplicates"]) == (300, 300, 0, 0)
    # every kind of fault was served, and some 429s were waited out before the retry
    assert set(report["faults_by_kind"]) == set(faults.HTTP_OUTCOMES) - {"ok"}
    assert report["retry_after_waits"] > 0
    assert report["faults_injected"] > 100
    assert report["errors_by_kind"]["malformed"] > 0
    # the checker can fail: a lost and a duplicated line are both caught
    (jsonl,) = tmp_path.glob("out-http/*/results_*.jsonl")
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join(lines[1:] + [lines[2]]) + "\n")
    (batch,) = tmp_path.glob("out-http/*/batch_*.json")
    log = {json.loads(x)["case_id"]: [] for x in lines}
    again = faults.check(tmp_path / "out-http", [f"case-{i:05d}" for i in range(300)], log,
                         faults.HTTP_OUTCOMES, 2)
    assert (again["lost"], again["duplicates"]) == (1, 1) and again["problems"]


def test_cmd_system_faults(tmp_path):
    report = faults.cmd_faults(tmp_path, 80, seed=5, retries=1, timeout=3.0, concurrency=16)
    assert report["exit_code"] == 0
    assert report["problems"] == []
    assert (report["records"], report["lost"], report["duplicates"]) == (80, 0, 0)
    assert set(report["faults_by_kind"]) == set(faults.CMD_OUTCOMES) - {"ok"}


def _mock(body: bytes, *, chunked: bool = False) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if chunked:  # no Content-Length: the limit is enforced while reading
            return httpx.Response(200, stream=httpx.ByteStream(body), headers={"Transfer-Encoding": "chunked"})
        return httpx.Response(200, content=body)
    return httpx.MockTransport(handler)


@pytest.mark.parametrize("chunked", [False, True])
def test_http_response_limit_is_exact(chunked):
    body = b'{"a": "' + b"x" * 91 + b'"}'  # 100 bytes
    assert len(body) == 100
    ok = HttpSystem("http://sut/", transport=_mock(body, chunked=chunked), max_response_bytes=100)
    assert ok.call({}, 1) == {"a": "x" * 91}
    over = HttpSystem("http://sut/", transport=_mock(body, chunked=chunked), max_response_bytes=99)
    with pytest.raises(SystemCallError, match="larger than 99 bytes") as info:
        over.call({}, 1)
    assert info.value.kind == "malformed" and not info.value.retryable


def test_subprocess_output_limit(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.stdout.write('[' + '1,' * 49 + '1]')\n")  # 101 bytes
    cmd = f"{sys.executable} {script}"
    assert SubprocessSystem(cmd, max_output_bytes=101).call({}, 10) == [1] * 50
    with pytest.raises(SystemCallError, match="larger than 100 bytes"):
        SubprocessSystem(cmd, max_output_bytes=100).call({}, 10)
