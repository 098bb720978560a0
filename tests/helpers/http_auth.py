"""What the tests of http auth share with other test files: ``AUTH_ENV``, ``SECRET``, ``_suite``, ``_written``, ``server`` (moved here from test_http_auth.py)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SECRET = "s3cr3t-Pw"


AUTH_ENV = "QUERYEVAL_HTTP_AUTHORIZATION"  # the documented name (docs/systems.md)


@pytest.fixture
def server():
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append(self.headers.get("authorization"))
            data = json.dumps({"response": "paris" if "France" in body["question"]
                               else "no idea"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{srv.server_address[1]}", seen
    srv.shutdown()
    srv.server_close()


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join(json.dumps({"id": f"c{i}", "conversation": [{
        "role": "user", "content": q, "target": {"reference": {"answer": "paris"}}}]}) + "\n"
        for i, q in enumerate(["Capital of France?", "Capital of Peru?", "France's capital?"])))
    return suite


def _written(folder: Path) -> str:
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*")
                   if p.is_file())
