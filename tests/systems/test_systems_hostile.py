"""Hostile systems under test: servers that drip bytes or redirect, commands whose
grandchildren hold the pipes or flood stderr, outputs the run log cannot store (NaN,
Infinity, lone surrogates, cycles), and Python callables that exit the process or change
its directory. Each case is recorded on its case; the run goes on and its deadline holds."""

from __future__ import annotations

import json
import math
import os
import socket
import socketserver
import sys
import threading
import time
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.errors import ConfigError, SystemCallError
from queryeval.run.runner import RetryPolicy, call_turn
from queryeval.systems.base import checked_output
from queryeval.systems.factory import make_system
from queryeval.systems.http import HttpSystem
from queryeval.systems.python import IsolatedPythonSystem, PythonSystem
from queryeval.systems.recorded import RecordedSystem
from queryeval.systems.subprocess import MAX_STDERR_BYTES, SubprocessSystem, run_process
from queryeval.tasks.base import get_task

TASK = get_task("indicator_selection")
ANSWER = {"indicator_selection": []}
REQUEST = {"task": "indicator_selection", "case_id": "c1", "turn": 0,
           "messages": [{"role": "user", "content": "Mexico?"}]}
ONCE = RetryPolicy(retries=0)


def _malformed(system, request=REQUEST, timeout=10):
    with pytest.raises(SystemCallError) as err:
        system.call(request, timeout)
    assert err.value.kind == "malformed" and not err.value.retryable
    return err.value.message


# --- the output check every adapter applies ---------------------------------------------------
@pytest.mark.parametrize(("value", "message"), [
    ({"scores": [1.0, 2.0, float("nan")]}, "output.scores[2]: NaN is not a finite number"),
    ([{"a b": float("inf")}], 'output[0]["a b"]: Infinity is not a finite number'),
    ({"x": {"y": -float("inf")}}, "output.x.y: -Infinity is not a finite number"),
    ({"t": "ok\ud800"},
     "output.t: text holds a lone surrogate '\\ud800', which is not a character"),
    ({"\udfff": 1},
     "output[\"\\udfff\"]: key text holds a lone surrogate '\\udfff', which is not a character"),
])
def test_checked_output_names_the_json_path(value, message):
    with pytest.raises(SystemCallError) as err:
        checked_output(value)
    assert err.value.kind == "malformed" and err.value.message == message


def test_checked_output_passes_finite_values_shared_parts_and_deep_nesting():
    shared = [1.5, 1e308, -0.0]
    value = {"a": shared, "b": shared, "c": (shared, shared), "n": None, "t": "é", "i": 10**30}
    assert checked_output(value) is value  # a part met twice is not a cycle
    deep: list = []
    inner = deep
    for _ in range(50_000):  # far past the recursion limit: the walk has no stack to overflow
        inner.append([])
        inner = inner[0]
    assert checked_output(deep) is deep
    inner.append(float("nan"))
    with pytest.raises(SystemCallError, match=r"\[0\]: NaN is not a finite number"):
        checked_output(deep)
    loop: list = [1]
    loop.append({"k": loop})
    with pytest.raises(SystemCallError,
                       match=r"^malformed: output\[1\]\.k: the value contains itself$"):
        checked_output(loop)


def test_numpy_non_finite_scalars_are_caught():
    np = pytest.importorskip("numpy")
    with pytest.raises(SystemCallError, match=r"output\.s: NaN is not a finite number"):
        checked_output({"s": np.float32("nan")})
    assert checked_output({"s": np.float32(0.5)})["s"] == np.float32(0.5)


# --- HTTP -----------------------------------------------------------------------------------
class DripServer:
    """A loopback TCP server that reads one HTTP request and answers with raw ``pieces``:
    ``(bytes, seconds to wait before sending them)``, sent byte by byte when ``drip``."""

    def __init__(self, pieces, *, drip: float = 0.0):
        self.pieces = pieces
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                while self.answer_one():  # keep-alive: answer until the client closes
                    pass

            def answer_one(self) -> bool:
                length = 0
                request_line = self.rfile.readline()
                if not request_line:
                    return False
                while (line := self.rfile.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.rfile.read(length)
                try:
                    for data, wait in outer.pieces:
                        time.sleep(wait)
                        chunks = [data[i:i + 1] for i in range(len(data))] if drip else [data]
                        for chunk in chunks:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            time.sleep(drip)
                except OSError:
                    return False  # the client gave up
                return True

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/x"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _response(body: bytes, status: str = "200 OK", extra: str = "") -> tuple[bytes, bytes]:
    head = (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    return head, body


def test_http_body_dripped_slowly_is_a_timeout_at_the_total_deadline():
    head, body = _response(json.dumps(ANSWER).encode() + b" " * 40)
    # the head at once, then the body one byte every 0.1 s (about 6 s in all)
    with DripServer([(head, 0.0)] + [(body[i:i + 1], 0.1) for i in range(len(body))]) as srv:
        t0 = time.monotonic()
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=1.0, policy=ONCE)
        elapsed = time.monotonic() - t0
    assert out.error is not None and out.error["kind"] == "timeout", out
    assert "within 1s" in out.error["message"]
    assert elapsed < 3.0


def test_http_headers_dripped_slowly_are_a_timeout_at_the_total_deadline():
    head, body = _response(json.dumps(ANSWER).encode(), extra="X-Pad: " + "p" * 60 + "\r\n")
    with DripServer([(head + body, 0.0)], drip=0.05) as srv:  # ~140 bytes over ~7 s
        t0 = time.monotonic()
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=1.0, policy=ONCE)
        elapsed = time.monotonic() - t0
    assert out.error is not None and out.error["kind"] == "timeout"
    assert elapsed < 3.0


def test_http_answer_in_time_is_not_cut_by_the_deadline():
    head, body = _response(json.dumps(ANSWER).encode())
    with DripServer([(head, 0.2), (body, 0.2)]) as srv:  # 0.4 s in all, under the 3 s limit
        system = HttpSystem(srv.url)
        assert system.armed >= 1  # the per-operation deadline is wired into httpx's pool
        out = call_turn(system, TASK, REQUEST, timeout=3.0, policy=ONCE)
        again = call_turn(system, TASK, REQUEST, timeout=3.0, policy=ONCE)  # a reused connection
    assert out.error is None and out.output == [] and again.error is None


def test_https_handshake_dripped_slowly_is_a_timeout_at_the_total_deadline():
    """A TLS handshake is many reads inside one call: a server that drips a record that
    never completes is still cut at the deadline (CPython's ssl bounds the handshake as a
    whole; this guards that the deadline stream passes that bound through)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)  # the ClientHello
            try:
                conn.sendall(b"\x16\x03\x03\x40\x00")  # a handshake record of 16 KiB...
                while not stop.is_set():  # ...that arrives one byte every 0.05 s
                    conn.sendall(b"\x00")
                    time.sleep(0.05)
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    url = f"https://127.0.0.1:{listener.getsockname()[1]}/x"
    try:
        t0 = time.monotonic()
        out = call_turn(HttpSystem(url), TASK, REQUEST, timeout=1.0, policy=ONCE)
        elapsed = time.monotonic() - t0
    finally:
        stop.set()
        listener.close()
    assert out.error is not None and out.error["kind"] == "timeout", out
    assert elapsed < 3.0


@pytest.mark.parametrize("status", ["301 Moved Permanently", "302 Found", "303 See Other",
                                    "307 Temporary Redirect", "308 Permanent Redirect"])
def test_http_redirect_is_an_http_status_error_naming_the_location(status):
    head, body = _response(b"", status, extra="Location: http://127.0.0.1:9/elsewhere\r\n")
    with DripServer([(head + body, 0.0)]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5,
                        policy=RetryPolicy(retries=2, backoff=0))
    code = status.split()[0]
    assert out.error == {"kind": "http_status", "message":
                         f"HTTP {code} redirect to 'http://127.0.0.1:9/elsewhere': redirects "
                         "are not followed; give the final URL as the system"}
    assert out.attempts == 1  # not retried


def test_http_redirect_without_location():
    head, body = _response(b"moved", "302 Found")
    with DripServer([(head + body, 0.0)]) as srv:
        out = call_turn(HttpSystem(srv.url), TASK, REQUEST, timeout=5, policy=ONCE)
    assert out.error["kind"] == "http_status"
    assert out.error["message"] == "HTTP 302 (3xx, not followed): moved"


def test_http_nan_and_infinity_in_the_body_are_malformed():
    for text, where in [
        (b'{"indicator_selection": [], "score": NaN}', "output.score: NaN"),
        (b'{"indicator_selection": [], "s": [1, -Infinity]}', "output.s[1]: -Infinity"),
        (b'{"indicator_selection": [], "big": 1e999}', "output.big: Infinity"),  # overflow
        (b'[{"x": -' + b"9" * 400 + b'.0}]', "output[0].x: -Infinity"),
    ]:
        head, body = _response(text)
        with DripServer([(head + body, 0.0)]) as srv:
            assert _malformed(HttpSystem(srv.url)) == f"{where} is not a finite number"


# --- cmd: process groups, pipes, stderr ---------------------------------------------------
def _alive_in_group(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (a reaped-later zombie is dead)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry))
    return alive


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
    except OSError:
        return True


posix_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@posix_only
def test_cmd_grandchild_holding_stdout_neither_delays_the_answer_nor_survives():
    system = SubprocessSystem(
        """sh -c 'sleep 30 & echo "{\\"indicator_selection\\": [], \\"pid\\": $!}"'""")
    t0 = time.monotonic()
    answer = system.call(REQUEST, 10)
    assert time.monotonic() - t0 < 5  # not the 30 s the grandchild holds stdout open
    assert answer["indicator_selection"] == []
    pid = answer["pid"]
    deadline = time.monotonic() + 3
    while not _dead(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(pid), f"grandchild {pid} survived the call"


@posix_only
def test_cmd_timeout_kills_the_whole_group_within_the_limit(tmp_path):
    pids = tmp_path / "pids"
    system = SubprocessSystem(f"sh -c 'echo $$ > {pids}; sleep 30 & echo $! >> {pids}; "
                              f"sleep 30 & echo $! >> {pids}; wait'")
    t0 = time.monotonic()
    with pytest.raises(SystemCallError) as err:
        system.call(REQUEST, 1.0)
    assert time.monotonic() - t0 < 3.0
    assert err.value.kind == "timeout" and err.value.retryable
    shell, *sleeps = (int(x) for x in pids.read_text().split())
    assert len(sleeps) == 2
    deadline = time.monotonic() + 3
    while not all(_dead(p) for p in sleeps) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in sleeps if not _dead(p)] == []  # no orphan left sleeping
    assert _alive_in_group(shell) == []  # the shell led its own group; nothing of it is left


@posix_only
def test_cmd_huge_stderr_is_capped_and_the_answer_still_read():
    writer = (f"{sys.executable} -c \"import sys\n"
              "for i in range(400): sys.stderr.write(str(i % 10) * 65536)\n"
              "sys.stderr.write('LAST LINE')\n"
              "print('{\\\"indicator_selection\\\": []}')\"")
    result = run_process(["sh", "-c", writer], b"{}", 30)
    assert result.returncode == 0 and json.loads(result.stdout) == ANSWER
    assert result.stderr_total == 400 * 65536 + len("LAST LINE")
    assert len(result.stderr) == MAX_STDERR_BYTES  # the last 64 KiB, not 25 MiB
    assert result.stderr.endswith(b"9" * 100 + b"LAST LINE")
    system = SubprocessSystem(f"sh -c \"{writer.replace(chr(34), chr(92) + chr(34))}; exit 3\"",
                              max_stderr_bytes=1000)
    with pytest.raises(SystemCallError) as err:
        system.call(REQUEST, 30)
    assert err.value.kind == "process" and err.value.message.endswith("LAST LINE'")


def test_cmd_stdout_overflow_stops_reading_at_once():
    system = SubprocessSystem(f"{sys.executable} -c \"import sys, time\n"
                              "sys.stdout.write('x' * 5000); sys.stdout.flush(); time.sleep(30)\"",
                              max_output_bytes=1000)
    t0 = time.monotonic()
    assert _malformed(system, timeout=20) == "output larger than 1000 bytes"
    assert time.monotonic() - t0 < 5


def test_cmd_nan_is_malformed():
    system = SubprocessSystem(f"{sys.executable} -c \"print('{{\\\"x\\\": [Infinity]}}')\"")
    assert _malformed(system) == "output.x[0]: Infinity is not a finite number"
    surrogate = SubprocessSystem(f"{sys.executable} -c \"print(r'{{\\\"t\\\": \\\"a\\udc00\\\"}}')\"")
    assert _malformed(surrogate) == (
        "output.t: text holds a lone surrogate '\\udc00', which is not a character")
    pair = SubprocessSystem(f"{sys.executable} -c \"print(r'{{\\\"t\\\": \\\"\\ud83d\\ude00\\\"}}')\"")
    assert pair.call(REQUEST, 10) == {"t": "\U0001f600"}  # a valid pair is one character


def test_cmd_large_request_and_output_pass_through():
    big = dict(REQUEST, messages=[{"role": "user", "content": "é" * 3_000_000}])
    system = SubprocessSystem(f"{sys.executable} -c \"import json, sys\n"
                              "r = json.load(sys.stdin)\n"
                              "n = len(r['messages'][0]['content'])\n"
                              "json.dump({'n': n, 'pad': 'y' * 2000000}, sys.stdout)\"")
    answer = system.call(big, 30)
    assert answer["n"] == 3_000_000 and len(answer["pad"]) == 2_000_000


# --- Python callables -----------------------------------------------------------------------
def test_python_callable_nan_is_malformed():
    system = PythonSystem(lambda req: {"indicator_selection": [], "scores": [0.5, float("nan")]})
    assert _malformed(system) == "output.scores[1]: NaN is not a finite number"
    out = call_turn(system, TASK, REQUEST, timeout=5, policy=RetryPolicy(retries=2, backoff=0))
    assert out.error == {"kind": "malformed",
                         "message": "output.scores[1]: NaN is not a finite number"}
    assert out.attempts == 1


HOSTILE_MODULE = """\
import ctypes, os, time

def f(req):
    case = req["case_id"]
    if case == "exit":
        os._exit(3)
    if case == "segv":
        ctypes.string_at(0)
    if case == "chdir":
        os.chdir(os.path.dirname(os.getcwd()))
    if case == "hang":
        time.sleep(60)
    if case == "nan":
        return {"indicator_selection": [], "x": float("nan")}
    if case == "unpicklable":
        return {"indicator_selection": [], "x": lambda: 1}
    return {"indicator_selection": [], "pid": os.getpid(), "cwd": os.getcwd()}
"""


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    (tmp_path / "hostile_sys.py").write_text(HOSTILE_MODULE)
    monkeypatch.chdir(tmp_path)
    system = IsolatedPythonSystem("hostile_sys:f")
    yield system
    system.close()


def _req(case_id: str) -> dict:
    return dict(REQUEST, case_id=case_id)


@pytest.mark.slow
def test_isolated_worker_death_is_a_process_error_and_a_fresh_worker_follows(hostile, tmp_path):
    first = hostile.call(_req("a"), 10)
    assert first["cwd"] == str(tmp_path) and first["pid"] != os.getpid()
    with pytest.raises(SystemCallError) as err:
        hostile.call(_req("exit"), 10)
    assert err.value.kind == "process" and err.value.retryable
    assert "exit code 3" in err.value.message
    with pytest.raises(SystemCallError) as err:
        hostile.call(_req("segv"), 10)
    assert err.value.kind == "process" and "SIGSEGV" in err.value.message
    after = hostile.call(_req("a"), 10)
    assert after["pid"] not in (first["pid"], os.getpid())
    assert _dead(first["pid"])


@pytest.mark.slow
def test_isolated_chdir_stays_in_the_worker(hostile, tmp_path):
    moved = hostile.call(_req("chdir"), 10)
    assert moved["cwd"] == str(tmp_path.parent)
    assert os.getcwd() == str(tmp_path)  # the parent did not move
    again = hostile.call(_req("a"), 10)
    assert again["pid"] == moved["pid"] and again["cwd"] == str(tmp_path)  # reset per call


@pytest.mark.slow
def test_isolated_timeout_kills_the_worker(hostile):
    pid = hostile.call(_req("a"), 10)["pid"]
    t0 = time.monotonic()
    with pytest.raises(SystemCallError) as err:
        hostile.call(_req("hang"), 1.0)
    assert err.value.kind == "timeout" and time.monotonic() - t0 < 3.0
    assert _dead(pid)
    assert hostile.call(_req("a"), 10)["pid"] != pid


@pytest.mark.slow
def test_isolated_bad_outputs_are_malformed(hostile):
    assert _malformed(hostile, _req("nan")) == "output.x: NaN is not a finite number"
    message = _malformed(hostile, _req("unpicklable"))
    assert message.startswith("output cannot be sent back from the worker:")
    assert hostile.call(_req("a"), 10)["indicator_selection"] == []  # the worker lives on


def test_isolated_bad_spec_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok_sys.py").write_text("x = 1\n")
    with pytest.raises(ConfigError, match="has no callable 'f'"):
        make_system("python:ok_sys:f", isolate=True)
    (tmp_path / "dies_sys.py").write_text("import os\nos._exit(7)\n")
    with pytest.raises(ConfigError, match=r"worker ended while importing \(exit code 7\)"):
        make_system("python:dies_sys:f", isolate=True)


FIVE = "".join(f"""\
---
id: c{i}
conversation:
- {{role: user, content: q{i}, target: {{indicator_selection: []}}}}
""" for i in range(5))


def _results(out: Path) -> list[dict]:
    (path,) = out.rglob("results_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_run_with_isolate_survives_os_exit(tmp_path, monkeypatch):
    (tmp_path / "suite.yaml").write_text(FIVE)
    (tmp_path / "exiting.py").write_text(
        "import os\n\ndef f(req):\n    if req['case_id'] == 'c2':\n        os._exit(3)\n"
        "    os.chdir('/')\n    return {'indicator_selection': []}\n")
    monkeypatch.chdir(tmp_path)
    code = main(["run", "suite.yaml", "--system", "python:exiting.py:f", "--isolate",
                 "--retries", "0", "--out", "runs", "--no-report", "--quiet"])
    assert code in (0, 1)
    assert os.getcwd() == str(tmp_path)
    records = sorted(_results(tmp_path / "runs"), key=lambda r: r["case_id"])
    errors = {r["case_id"]: r["turns"][0]["error"] for r in records if r["turns"][0].get("error")}
    assert [r["case_id"] for r in records] == ["c0", "c1", "c2", "c3", "c4"]
    assert list(errors) == ["c2"] and errors["c2"]["kind"] == "process"
    assert "exit code 3" in errors["c2"]["message"]


# --- recorded -----------------------------------------------------------------------------------
def test_recorded_in_memory_form_checks_its_outputs(tmp_path):
    # the form a recorded CSV loads into, and the one shipped to Ray workers
    chunks = [{"chunk_id": "a", "score": 0.5}, {"chunk_id": "b", "score": float("-inf")}]
    system = RecordedSystem(tmp_path / "r.csv", {("c1", 0): chunks, ("c2", 0): chunks[:1]},
                            {("c1", 0): 2, ("c2", 0): 3})
    assert system.call({"case_id": "c2", "turn": 0}, None) == chunks[:1]
    with pytest.raises(SystemCallError) as err:
        system.call({"case_id": "c1", "turn": 0}, None)
    assert (err.value.kind, err.value.message) == (
        "malformed", "output[1].score: -Infinity is not a finite number")


def test_retrieval_run_with_nan_score_records_and_resumes(tmp_path, monkeypatch):
    examples = Path(__file__).resolve().parents[2] / "examples" / "retrieval"
    lines = (examples / "responses.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["retrieved_chunks"][0]["score"] = math.nan
    lines[0] = json.dumps(first)  # writes NaN, as Python's json does by default
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    args = ["run", str(examples / "questions.csv"), "--corpus", str(examples / "corpus.jsonl"),
            "-r", "r.jsonl", "--out", "runs", "--no-report", "--quiet"]
    assert main(args) in (0, 1)
    (batch,) = [b for b in (tmp_path / "runs").rglob("batch_*.json")
                if "derived_batches" in json.loads(b.read_text())]
    results = batch.with_name(batch.name.replace("batch_", "results_")).with_suffix(".jsonl")
    records = [json.loads(line) for line in results.read_text().splitlines()]
    bad = [r for r in records if r["qa_pair_id"] == first["qa_pair_id"]]
    assert len(records) == len(lines) and len(bad) == 1
    assert bad[0]["error"] == {"kind": "malformed",
                               "message": "output[0].score: NaN is not a finite number"}
    # a resume that redoes the failed case meets the same answer and records it again
    resume = ["run", "--resume", str(batch), "--retry-errors", "--quiet", "--no-report"]
    assert main(resume) in (0, 1)
    records = [json.loads(line) for line in results.read_text().splitlines()]
    again = [r["error"] for r in records if r["qa_pair_id"] == first["qa_pair_id"]]
    assert again[-1]["kind"] == "malformed"


def test_socket_helper_sanity():
    # the drip server answers an ordinary request whole (guards the helper itself)
    head, body = _response(json.dumps(ANSWER).encode())
    with DripServer([(head + body, 0.0)]) as srv:
        host, port = srv.server.server_address
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
            data = b""
            while len(data) < len(head + body):
                data += sock.recv(4096)
    assert data == head + body


def test_builtin_retriever_nan_score_is_malformed_on_its_case():
    """The built-in retrieval system's outputs pass the same check as every adapter's: a
    non-finite score (e.g. a zero vector's cosine) is `malformed`, never a log-writer crash."""
    from queryeval.errors import SystemCallError
    from queryeval.suite.retrieval import Chunk
    from queryeval.systems.retrieval import BuiltinRetrievalSystem

    chunks = [Chunk(chunk_id=str(i), content=text, content_hash=f"{i:032x}")
              for i, text in enumerate(["red apples", "green pears"])]
    system = BuiltinRetrievalSystem(chunks, "bm25")
    ok = system.call({"question": "apples", "k": 2}, None)
    assert ok["retrieved_chunks"][0]["chunk_id"] == "0"

    class NanHit:
        doc_id, score = "1", float("nan")

    system._retriever.search = lambda questions, k: [[NanHit()]]
    with pytest.raises(SystemCallError) as err:
        system.call({"question": "pears", "k": 1}, None)
    assert err.value.kind == "malformed"
    assert err.value.message == "output.retrieved_chunks[0].score: NaN is not a finite number"


def test_indexed_recorded_lines_walked_only_when_they_may_hold_unstorable_values(tmp_path, monkeypatch):
    # the JSONL form reads each line again at the call: a line holding NaN, Infinity, an
    # overflowing float or a lone surrogate is walked and named as before; any other line's
    # output is returned as the task read it (what the walk would have returned)
    from queryeval.systems.base import checked_output, may_hold_surrogate
    from queryeval.systems.recorded import IndexedRecordedSystem
    from queryeval.tasks.base import get_task

    def line(case: str, score: str, content: str = '"text"') -> str:
        return ('{"qa_pair_id": "%s", "retrieved_chunks": [{"chunk_id": "a", "score": 0.5, '
                '"content_hash": "0123456789abcdef0123456789abcdef"}, {"chunk_id": "b", "score": %s, "content": %s}]}' % (case, score, content))

    bad = {"nan": ("NaN", "output[1].score: NaN is not a finite number"),
           "minf": ("-Infinity", "output[1].score: -Infinity is not a finite number"),
           "over": ("1e999", "output[1].score: Infinity is not a finite number"),
           "long": ("-" + "9" * 400 + ".0", "output[1].score: -Infinity is not a finite number")}
    lines = [line(case, score) for case, (score, _) in bad.items()]
    lines.append(line("ok", "7", '"caf\u00e9 e123 NaNa"'))  # no NaN literal: text only
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    task = get_task("retrieval", {})
    system = IndexedRecordedSystem.build(path, task)
    import queryeval.systems.recorded as recorded

    walked = []
    monkeypatch.setattr(recorded, "checked_output", lambda v: walked.append(v) or checked_output(v))
    for case, (_, message) in bad.items():
        with pytest.raises(SystemCallError) as err:
            system.call({"case_id": case, "turn": None}, None)
        assert (err.value.kind, err.value.message) == ("malformed", message)
    # (a lone surrogate never gets this far: the checking pass refuses its line, naming it)
    assert len(walked) == len(bad)
    out = system.call({"case_id": "ok", "turn": None}, None)
    assert len(walked) == len(bad)  # not walked
    assert out == checked_output(out)
    assert [c["score"] for c in out] == [0.5, 7.0]
    assert out[1]["content"] == "caf\u00e9 e123 NaNa"
    assert may_hold_surrogate(b'"\\uD9ff"') and may_hold_surrogate("\ud800".encode("utf-8", "surrogatepass"))
    assert not may_hold_surrogate("\ud7ff \uffff caf\u00e9 \\u00e9".encode())
