"""A loopback fake OpenAI-compatible judge for the judge tests (no external network).

By default it answers deterministically: ``pass`` when the reference (the text between the
``<reference>`` tags of the user turn) appears in the response (case-insensitive), else
``fail``; ``script(n, body)`` overrides each reply (malformed replies, 429s, slow replies).
Imported by the other ``test_judge_*`` files and the matrix; it holds one sanity test.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

Reply = tuple[int, dict[str, str], bytes]


def completion(content: str) -> Reply:
    body = {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def verdict_reply(verdict: str, reason: str = "fake") -> Reply:
    return completion(json.dumps({"verdict": verdict, "reason": reason}))


def _block(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return m.group(1) if m else ""


def contains_rule(body: dict) -> Reply:
    user = body["messages"][-1]["content"]
    ref, resp = _block(user, "reference"), _block(user, "response")
    ok = bool(ref) and ref.lower() in resp.lower()
    return verdict_reply("pass" if ok else "fail", f"reference {'found' if ok else 'absent'}")


class FakeJudgeServer:
    """Records every request body; ``script(n, body)`` decides reply n (0-based)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.script: Callable[[int, dict], Reply] = lambda n, body: contains_rule(body)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                with fake.lock:
                    n = len(fake.requests)
                    fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                          "body": body})
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if fake.delay:
                        time.sleep(fake.delay)
                    status, headers, payload = fake.script(n, body)
                finally:
                    with fake.lock:
                        fake.in_flight -= 1
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def options(self, tmp_path, **kw) -> dict:
        """Judge options pointing here, caches under ``tmp_path``."""
        return {"model": "judge-test", "base_url": self.url,
                "cache_dir": str(tmp_path / "judge-cache"),
                "checks_dir": str(tmp_path / "judge-checks"), **kw}


def test_fake_server_answers_by_containment():
    fake = FakeJudgeServer()
    try:
        msgs = [{"role": "user", "content": "<reference>\n42\n</reference>\n"
                 "<response>\nit is 42.\n</response>"}]
        r = httpx.post(fake.url + "/chat/completions", json={"messages": msgs})
        content = json.loads(r.json()["choices"][0]["message"]["content"])
        assert content["verdict"] == "pass"
    finally:
        fake.close()
