"""Each system adapter against a real target: a callable, a loopback HTTP server, a real
subprocess, a recorded file; plus the runner's retry policy around them."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from queryeval.errors import ConfigError, InputError, SystemCallError
from queryeval.run.runner import RetryPolicy, call_turn
from queryeval.suite import load_suite
from queryeval.systems.factory import make_system
from queryeval.systems.http import HttpSystem
from queryeval.systems.python import PythonSystem
from queryeval.systems.recorded import RecordedSystem
from queryeval.tasks.base import get_task

TASK = get_task("indicator_selection")
ANSWER = {"indicator_selection": [{"dataset_id": "D", "dimensions": [
    {"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}]}
REQUEST = {"task": "indicator_selection", "case_id": "c1", "turn": 0,
           "messages": [{"role": "user", "content": "Mexico?"}]}
NO_WAIT = RetryPolicy(retries=2, backoff=0.0)


class ScriptedServer:
    """A loopback HTTP server answering each POST with the next scripted (status, body, headers)."""

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append(json.loads(body))
                status, payload, headers = outer.script.pop(0) if outer.script else (200, ANSWER, {})
                if status == "hang":
                    time.sleep(payload)
                    status, payload = 200, ANSWER
                if status == "close":
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.close()
                    return
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/select"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# --- Python callable ------------------------------------------------------------------------
def test_python_callable_ok_and_receives_the_request():
    seen = []
    system = PythonSystem(lambda req: seen.append(req) or ANSWER)
    out = call_turn(system, TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error is None and out.attempts == 1
    assert out.output == ANSWER["indicator_selection"]
    assert seen == [REQUEST]


def test_python_callable_exception_is_recorded_not_retried():
    calls = []

    def boom(req):
        calls.append(1)
        raise KeyError("no model")

    out = call_turn(PythonSystem(boom), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.output is None and out.error["kind"] == "exception"
    assert "KeyError" in out.error["message"] and len(calls) == 1


def test_python_callable_transient_error_is_retried_then_succeeds():
    calls = []

    def flaky(req):
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return ANSWER

    out = call_turn(PythonSystem(flaky), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error is None and out.attempts == 3


def test_python_callable_timeout():
    out = call_turn(PythonSystem(lambda r: time.sleep(2)), TASK, REQUEST, timeout=0.05,
                    policy=RetryPolicy(retries=1, backoff=0.0))
    assert out.error["kind"] == "timeout" and out.attempts == 2


def test_malformed_output_is_recorded():
    out = call_turn(PythonSystem(lambda r: {"indicator_selection": [{"dimensions": []}]}),
                    TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error == {"kind": "malformed", "message": "[0].dataset_id: field required"}
    out = call_turn(PythonSystem(lambda r: {"other": 1}), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error["kind"] == "malformed"


def test_python_spec_loads_module_and_file(tmp_path, monkeypatch):
    mod = tmp_path / "mysys.py"
    mod.write_text("def select(req):\n    return {'indicator_selection': []}\n")
    monkeypatch.chdir(tmp_path)
    assert make_system("python:mysys:select").call(REQUEST, 1) == {"indicator_selection": []}
    assert make_system(f"python:{mod}:select").call(REQUEST, 1) == {"indicator_selection": []}
    with pytest.raises(ConfigError, match="no callable 'nope'"):
        make_system("python:mysys:nope")
    with pytest.raises(ConfigError, match="cannot import"):
        make_system("python:not_a_module_xyz:f")
    with pytest.raises(ConfigError, match="unknown system"):
        make_system("ftp://x")


# --- HTTP ---------------------------------------------------------------------------------------
def test_http_ok_posts_the_request_as_json():
    with ScriptedServer([]) as srv:
        out = call_turn(make_system(srv.url), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error is None and out.output == ANSWER["indicator_selection"]
    assert srv.requests == [REQUEST]


def test_http_5xx_then_success_is_retried():
    with ScriptedServer([(503, {"e": 1}, {}), (500, b"oops", {})]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error is None and out.attempts == 3 and len(srv.requests) == 3


def test_http_429_honours_retry_after():
    slept = []
    with ScriptedServer([(429, b"slow down", {"Retry-After": "7"})]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5, policy=NO_WAIT,
                        sleep=slept.append)
    assert out.error is None and slept == [7.0]


def test_http_4xx_is_not_retried_and_retries_run_out():
    with ScriptedServer([(400, b"bad request", {})]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error["kind"] == "http_status" and "400" in out.error["message"] and out.attempts == 1
    with ScriptedServer([(502, b"", {})] * 3) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error["kind"] == "http_status" and out.attempts == 3


def test_http_malformed_json_timeout_and_closed_connection():
    with ScriptedServer([(200, b"<html>", {})]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error["kind"] == "malformed" and out.attempts == 1
    with ScriptedServer([("hang", 1.0, {})]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=0.1, policy=RetryPolicy(retries=0))
    assert out.error["kind"] == "timeout"
    with ScriptedServer([("close", None, {})]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5, policy=NO_WAIT)
    assert out.error is None and out.attempts == 2  # connection error retried


def test_http_unreachable_is_a_connection_error():
    out = call_turn(HttpSystem("http://127.0.0.1:9/"), TASK, REQUEST, timeout=1,
                    policy=RetryPolicy(retries=0))
    assert out.error["kind"] == "connection"


# --- subprocess ---------------------------------------------------------------------------------
def script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "sys.py"
    p.write_text("import json, sys, time\nreq = json.load(sys.stdin)\n" + body)
    return f"cmd:{sys.executable} {p}"


def test_subprocess_ok_gets_request_on_stdin(tmp_path):
    spec = script(tmp_path, "json.dump({'indicator_selection': [], 'echo': req['case_id']}, sys.stdout)\n")
    system = make_system(spec)
    assert system.call(REQUEST, 10) == {"indicator_selection": [], "echo": "c1"}
    out = call_turn(system, TASK, REQUEST, timeout=10, policy=NO_WAIT)
    assert out.output == []


def test_subprocess_failures(tmp_path):
    crash = make_system(script(tmp_path, "sys.exit('model crashed')\n"))
    out = call_turn(crash, TASK, REQUEST, timeout=10, policy=RetryPolicy(retries=1, backoff=0))
    assert out.error["kind"] == "process" and "model crashed" in out.error["message"]
    assert out.attempts == 2
    garbage = make_system(script(tmp_path, "print('not json')\n"))
    assert call_turn(garbage, TASK, REQUEST, timeout=10, policy=NO_WAIT).error["kind"] == "malformed"
    slow = make_system(script(tmp_path, "time.sleep(5)\n"))
    t0 = time.perf_counter()
    out = call_turn(slow, TASK, REQUEST, timeout=0.3, policy=RetryPolicy(retries=0))
    assert out.error["kind"] == "timeout" and time.perf_counter() - t0 < 3
    missing = make_system("cmd:/nonexistent/binary")
    assert call_turn(missing, TASK, REQUEST, timeout=1, policy=NO_WAIT).error["kind"] == "process"


# --- recorded -----------------------------------------------------------------------------------
MULTI = """\
id: m1
conversation:
- role: user
  content: Unemployment in France
  target: {indicator_selection: []}
- role: assistant
  content: ok
- role: user
  content: And Brazil?
  target: {indicator_selection: []}
---
id: s1
conversation:
- {role: user, content: hi, target: {indicator_selection: []}}
"""


def recorded(tmp_path, lines):
    p = tmp_path / "responses.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" if not isinstance(x, str) else x for x in lines))
    suite_path = tmp_path / "suite.yaml"
    suite_path.write_text(MULTI)
    suite = load_suite(suite_path)
    system = RecordedSystem.load(p, TASK)
    warnings = system.bind({c.id: TASK.scored_turns(c) for c in suite.cases})
    return p, system, warnings


def test_recorded_lookup_by_case_and_turn(tmp_path):
    _, system, warnings = recorded(tmp_path, [
        {"case_id": "m1", "turn": 0, "indicator_selection": []},
        {"case_id": "s1", "indicator_selection": ANSWER["indicator_selection"]},
        {"case_id": "zz", "indicator_selection": []},
    ])
    assert len(warnings) == 1 and "1 response(s) for case ids not in the suite" in warnings[0]
    assert system.call({"case_id": "s1", "turn": 0}, None) == ANSWER["indicator_selection"]
    with pytest.raises(SystemCallError) as err:
        system.call({"case_id": "m1", "turn": 2}, None)
    assert err.value.kind == "missing"


def test_recorded_errors_name_the_line(tmp_path):
    with pytest.raises(InputError) as err:
        recorded(tmp_path, [{"case_id": "m1", "indicator_selection": []}])
    assert str(err.value).endswith("responses.jsonl:1: turn: turn is required: case 'm1' has 2 scored turns [0, 2]")
    with pytest.raises(InputError, match=r"responses.jsonl:2: turn: turn 1 of case 'm1' is not a user turn"):
        recorded(tmp_path, [{"case_id": "s1", "indicator_selection": []},
                            {"case_id": "m1", "turn": 1, "indicator_selection": []}])
    with pytest.raises(InputError, match=r"responses.jsonl:2: invalid JSON"):
        recorded(tmp_path, [{"case_id": "s1", "indicator_selection": []}, "{oops\n"])
    with pytest.raises(InputError, match=r"responses.jsonl:1: indicator_selection\[0\].dimensions\[0\].values\[0\].name: field required"):
        recorded(tmp_path, [{"case_id": "s1", "indicator_selection": [
            {"dataset_id": "D", "dimensions": [{"dimension_name": "X", "values": [{"id": "a"}]}]}]}])
    with pytest.raises(InputError, match=r"responses.jsonl:2: case_id: duplicate response for case 's1' \(first at line 1\)"):
        recorded(tmp_path, [{"case_id": "s1", "indicator_selection": []}] * 2)
    with pytest.raises(InputError, match=r"responses.jsonl:1: indicator_selection: field required"):
        recorded(tmp_path, [{"case_id": "s1"}])
