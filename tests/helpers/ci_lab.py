"""A small lab for the CI and observability tests (tests/test_ci_*.py,
tests/test_integrations_*.py, tests/matrix/test_matrix_ciobs.py): the closed-form answers suite of
the cross-feature matrix (case i asks "question i?", expects ``n = i``) and its bots.

Hand-computed per-case verdicts (``all_correct`` per attempt is 1 or 0):
* ``plain``: c0..c3 pass, c4, c5 fail;
* ``failing``: c4's call fails (error), c5 fails, the rest pass;
* ``repeated`` (4 repeats): case i passes repeats 0 .. i % 4, so c3 passes all (pass),
  the others are flaky with pass rates c0 1/4, c1 2/4, c2 3/4, c4 1/4, c5 2/4;
* ``wrong``: every case fails.
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from typer.testing import CliRunner

from queryeval.cli.app import main

N = 6
BOTS = '''
import re

def _i(request):
    return int(re.search(r"question (\\d+)\\?", str(request)).group(1))

def _say(i, right):
    return {"response": f"@n[{i if right else 'x'}]"}

def plain(request):
    return _say(_i(request), _i(request) < 4)

def repeated(request):
    return _say(_i(request), request.get("repeat", 0) <= _i(request) % 4)

def failing(request):
    if _i(request) == 4:
        raise RuntimeError("backend down: 100% <gone>\\nsecond line")
    return _say(_i(request), _i(request) < 4)

def repeated_failing(request):
    if request.get("repeat", 0) == 1 and _i(request) % 2:
        raise RuntimeError("second attempt down")
    return repeated(request)

def right(request):
    return _say(_i(request), True)

def wrong(request):
    return _say(_i(request), False)
'''
NAMES = {0: "plain name", 1: 'odd <name> & "quotes" | pipe', 2: "ctrl\x01char"}

PLAIN = {"c0": "pass", "c1": "pass", "c2": "pass", "c3": "pass", "c4": "fail", "c5": "fail"}
FAILING = {**PLAIN, "c4": "error"}
REPEATED = {"c0": "flaky", "c1": "flaky", "c2": "flaky", "c3": "pass", "c4": "flaky",
            "c5": "flaky"}
REPEATED_RATE = {"c0": 0.25, "c1": 0.5, "c2": 0.75, "c3": 1.0, "c4": 0.25, "c5": 0.5}
PLAIN_VALUE = {c: 1.0 if v == "pass" else 0.0 for c, v in PLAIN.items()}


def make_lab(root: Path, n: int = N) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bots.py").write_text(BOTS, encoding="utf-8")
    with open(root / "cases.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            case = {"id": f"c{i}", "conversation": [{
                "role": "user", "content": f"question {i}?",
                "target": {"answers": [{"name": "n", "value": str(i)}]}}]}
            if i in NAMES:
                case["name"] = NAMES[i]
            fh.write(json.dumps(case) + "\n")
    return root


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str
    output: str


def cli(args: list, env: dict | None = None) -> Result:
    """``queryeval ARGS`` as the console script runs it (its exit codes and error lines)."""
    with CliRunner().isolation(env=env) as (out, err, both):
        code = main([str(a) for a in args])
        sys.stdout.flush()
        sys.stderr.flush()
        texts = [s.getvalue().decode("utf-8", "replace") for s in (out, err, both)]
    return Result(code, *texts)


def run_cli(lab: Path, bot: str, out: Path, *extra, env: dict | None = None):
    """``queryeval run`` on the lab's suite with one of its bots; returns (result, batch)."""
    res = cli(["run", lab / "cases.jsonl", "-s", f"python:{lab / 'bots.py'}:{bot}", "-o", out,
               "--retries", "0", "--backoff", "0", "--name", bot, "-q", *extra], env=env)
    found = sorted(Path(out).rglob("batch_*.json"))
    return res, (found[-1] if found else None)


# --- a loopback OTLP/HTTP receiver -------------------------------------------------------------
def _pb2():
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    return trace_service_pb2


class Receiver:
    """An OTLP/HTTP traces endpoint on 127.0.0.1 that keeps every decoded span."""

    def __init__(self, status: int = 200) -> None:
        self.spans: list = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                outer.paths.append(self.path)
                if status == 200:
                    req = _pb2().ExportTraceServiceRequest.FromString(body)
                    for rs in req.resource_spans:
                        for ss in rs.scope_spans:
                            outer.spans.extend(ss.spans)
                reply = _pb2().ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def span_attrs(kv) -> dict:
    out = {}
    for a in kv:
        v = a.value
        out[a.key] = getattr(v, v.WhichOneof("value"))
    return out


def by_name(spans, name):
    return [s for s in spans if s.name == name]


def evaluation_events(spans) -> dict[str, dict[str, dict]]:
    """{case_id: {metric: event attributes}} from the case spans."""
    out: dict[str, dict[str, dict]] = {}
    for s in by_name(spans, "queryeval.case"):
        cid = span_attrs(s.attributes)["queryeval.case.id"]
        for e in s.events:
            assert e.name == "gen_ai.evaluation.result"
            a = span_attrs(e.attributes)
            out.setdefault(cid, {})[a["gen_ai.evaluation.name"]] = a
    return out
