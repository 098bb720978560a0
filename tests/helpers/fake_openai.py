"""A loopback fake OpenAI-compatible chat-completions server for tests (no external network):
the judge tests (tests/engines/test_judge_fake.py) and the reformat tests (tests/systems/test_reformat.py).

It records every request (path, headers, JSON body); ``script(n, body)`` decides reply n
(0-based) as ``(status, headers, payload)``: a completion, a malformed reply, a 429, an error.
``delay`` makes every reply slow; ``max_in_flight`` is the most requests served at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = tuple[int, dict[str, str], bytes]


def completion(content: str) -> Reply:
    body = {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


class FakeChatServer:
    """Records every request body; ``script(n, body)`` decides reply n (0-based)."""

    def __init__(self, script: Callable[[int, dict], Reply]) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.script = script
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
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
