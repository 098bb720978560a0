"""The HTTP system on the runner's event loop (``HttpSystem.acall``, ``run_cases`` with one
asyncio loop) gives the same outcomes as the threaded path: each scenario is served twice by
a scripted loopback server, once to ``call_turn`` (httpx) and once to ``acall_turn``."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time

import pytest

from queryeval.errors import OutputError
from queryeval.run.runner import RetryPolicy, acall_turn, call_turn, run_cases, uses_event_loop
from queryeval.systems.http import HttpSystem
from queryeval.tasks.base import get_task

TASK = get_task("indicator_selection")
ANSWER = {"indicator_selection": [{"dataset_id": "D", "dimensions": [
    {"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}]}
REQUEST = {"task": "indicator_selection", "case_id": "c1", "turn": 0,
           "messages": [{"role": "user", "content": "Mexico? ¿Sí?"}]}
RETRY = RetryPolicy(retries=2, backoff=0.0)


class RawServer:
    """A loopback HTTP/1.1 server on raw sockets, keep-alive, answering each request with the
    next scripted step: ``(status, body bytes, headers)``, ``("close", None, {})`` (drop the
    connection without an answer) or ``("hang", seconds, {})`` (answer after a delay).
    ``requests`` keeps each request body parsed, ``connections`` counts accepted sockets."""

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        self.heads: list[bytes] = []
        self.connections = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/select?v=1"
        self.stop = threading.Event()

    def _next(self):
        with self.lock:
            return self.script.pop(0) if self.script else (200, json.dumps(ANSWER).encode(), {})

    def _handle(self, conn: socket.socket) -> None:
        try:
            self._exchange(conn)
        except (ConnectionResetError, BrokenPipeError):  # the client hung up: its test's point
            pass

    def _exchange(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while not self.stop.is_set():
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                while len(buf) < length:
                    buf += conn.recv(65536)
                body, buf = buf[:length], buf[length:]
                with self.lock:
                    self.heads.append(head)
                    self.requests.append(json.loads(body))
                status, payload, headers = self._next()
                if status == "close":
                    return
                if status == "hang":
                    time.sleep(payload)
                    status, payload, headers = 200, json.dumps(ANSWER).encode(), {}
                lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
                if "Transfer-Encoding" in headers:
                    chunked = b"".join(b"%x\r\n%s\r\n" % (len(payload[i:i + 7]), payload[i:i + 7])
                                       for i in range(0, len(payload), 7)) + b"0\r\n\r\n"
                    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + chunked)
                else:
                    lines.append(f"Content-Length: {len(payload)}")
                    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)

    def _serve(self) -> None:
        self.listener.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def __enter__(self):
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.listener.close()


def _both(script, *, timeout=5.0, policy=RETRY, **kwargs):
    """The outcome on the threaded path and on the loop, each from a fresh server."""
    with RawServer(script) as srv:
        sync = call_turn(HttpSystem(srv.url, **kwargs), TASK, REQUEST, timeout=timeout,
                         policy=policy)
        sync_requests = list(srv.requests)
    with RawServer(script) as srv:
        system = HttpSystem(srv.url, **kwargs)
        assert system.async_ready
        looped = asyncio.run(acall_turn(system, TASK, REQUEST, timeout=timeout, policy=policy))
        loop_requests = list(srv.requests)
    assert sync_requests == loop_requests  # the same requests reached the server
    return sync, looped


def _same(sync, looped, *, message: bool = True):
    assert (looped.error or {}).get("kind") == (sync.error or {}).get("kind")
    if message:
        assert looped.error == sync.error
    assert (looped.output, looped.attempts) == (sync.output, sync.attempts)


OK = (200, json.dumps(ANSWER).encode(), {})


def test_an_answer_is_the_same_on_both_paths():
    sync, looped = _both([OK])
    _same(sync, looped)
    assert looped.error is None and looped.output == ANSWER["indicator_selection"]


@pytest.mark.parametrize("script, kind, attempts", [
    ([(503, b"busy", {}), (500, b"oops", {}), OK], None, 3),
    ([(502, b'{"e": 1}', {})] * 3, "http_status", 3),
    ([(404, b"no such", {})], "http_status", 1),
    ([(200, b"not json", {})], "malformed", 1),
    ([(200, b'{"indicator_selection": [{"dimensions": []}]}', {})], "malformed", 1),
    ([(200, b'{"x": NaN}', {})], "malformed", 1),
    ([(302, b"", {"Location": "http://elsewhere/"})], "http_status", 1),
    ([(301, b"moved", {})], "http_status", 1),
    ([(200, json.dumps(ANSWER).encode(), {"Transfer-Encoding": "chunked"})], None, 1),
    ([(200, gzip.compress(json.dumps(ANSWER).encode()), {"Content-Encoding": "gzip"})], None, 1),
])
def test_status_rules_and_bodies_are_the_same_on_both_paths(script, kind, attempts):
    sync, looped = _both(script)
    _same(sync, looped)
    assert (looped.error or {}).get("kind") == kind and looped.attempts == attempts


def test_retry_after_is_honoured_on_the_loop():
    waits = []
    policy = RetryPolicy(retries=1, backoff=0.0)
    policy.delay = lambda attempt, retry_after: waits.append(retry_after) or 0.0  # type: ignore
    sync, looped = _both([(429, b"slow down", {"Retry-After": "7"}), OK], policy=policy)
    _same(sync, looped)
    assert waits == [7.0, 7.0] and looped.attempts == 2


@pytest.mark.parametrize("limit, kind", [(len(json.dumps(ANSWER)), None),
                                         (len(json.dumps(ANSWER)) - 1, "malformed")])
@pytest.mark.parametrize("chunked", [False, True])
def test_the_body_limit_is_exact_on_both_paths(limit, kind, chunked):
    headers = {"Transfer-Encoding": "chunked"} if chunked else {}
    sync, looped = _both([(200, json.dumps(ANSWER).encode(), headers)], max_response_bytes=limit)
    _same(sync, looped)
    assert (looped.error or {}).get("kind") == kind


def test_a_dropped_connection_is_a_retried_connection_error():
    sync, looped = _both([("close", None, {}), ("close", None, {}), ("close", None, {})])
    _same(sync, looped, message=False)
    assert looped.error["kind"] == "connection" and looped.attempts == 3


def test_a_late_answer_is_a_timeout_at_the_deadline():
    sync, looped = _both([("hang", 1.5, {})], timeout=0.3, policy=RetryPolicy(retries=0))
    _same(sync, looped, message=False)
    assert looped.error["kind"] == "timeout" and "within 0.3s" in looped.error["message"]


def test_an_unreachable_endpoint_is_a_connection_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused
        system = HttpSystem(f"http://127.0.0.1:{port}/")
        out = asyncio.run(acall_turn(system, TASK, REQUEST, timeout=2,
                                     policy=RetryPolicy(retries=1, backoff=0.0)))
    assert out.error["kind"] == "connection" and out.attempts == 2


def test_requests_carry_the_headers_and_connections_are_reused():
    with RawServer([]) as srv:
        system = HttpSystem(srv.url, headers={"Authorization": "Bearer t0ken"})
        records: list[dict] = []
        cases = _cases(12)
        done = run_cases(cases, system, TASK, on_record=records.append, concurrency=3,
                         timeout=5, policy=RETRY, stop=threading.Event())
        heads = list(srv.heads)
        connections = srv.connections
    assert done == 12 and sorted(r["case_id"] for r in records) == [c.id for c in cases]
    assert all(r["status"] == "ok" for r in records)
    assert connections <= 3  # kept alive: at most one per call in flight
    first = heads[0].decode().lower()
    assert first.startswith("post /select?v=1 http/1.1")
    assert "authorization: bearer t0ken" in first and "content-type: application/json" in first


def _cases(n):
    from queryeval.suite.models import Case

    return [Case.model_validate({"id": f"c{i:02d}", "conversation": [{
        "role": "user", "content": "Mexico?", "target": {"indicator_selection": ANSWER[
            "indicator_selection"]}}]}) for i in range(n)]


def test_run_cases_uses_the_loop_only_where_it_can():
    assert uses_event_loop(HttpSystem("http://127.0.0.1:1/"))
    import httpx

    mocked = HttpSystem("http://sut/", transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    assert not mocked.async_ready and not uses_event_loop(mocked)

    async def inside_a_loop():  # a notebook's running loop: the threads serve the calls
        return uses_event_loop(HttpSystem("http://127.0.0.1:1/"))

    assert asyncio.run(inside_a_loop()) is False


def test_a_failing_record_write_stops_the_loop_and_is_raised():
    with RawServer([]) as srv:
        system = HttpSystem(srv.url)
        seen = []

        def on_record(record):
            seen.append(record["case_id"])
            if len(seen) == 4:
                raise OutputError("results.jsonl", "disk full")

        with pytest.raises(OutputError, match="disk full"):
            run_cases(_cases(40), system, TASK, on_record=on_record, concurrency=4, timeout=5,
                      policy=RETRY, stop=threading.Event())
        served = len(srv.requests)
    assert len(seen) == 4 and served < 40  # no further case was started
