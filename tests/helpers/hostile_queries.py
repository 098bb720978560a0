"""What the tests of hostile queries share with other test files: ``Listener`` (moved here from test_hostile_queries.py)."""

from __future__ import annotations

import http.server
import json
import threading

GOLD = {"head": {"vars": ["x"]},
        "results": {"bindings": [{"x": {"type": "literal", "value": "gold"}}]}}


class Listener:
    """A loopback HTTP server that records every request and answers each with ``answer``
    (default GOLD)."""

    def __init__(self, answer: dict | None = None) -> None:
        hits: list[str] = []  # each request's path and body (a GET carries its query in the path)
        self.hits = hits
        body = json.dumps(GOLD if answer is None else answer).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                hits.append(self.path + "\n" + self.rfile.read(length).decode("utf-8", "replace"))
                self.send_response(200)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/sparql"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
