"""Fault injection: run ``queryeval run`` against systems that misbehave on purpose.

Two systems answer a generated term-selection suite (the right answer is derivable from the
question, so a correct answer is checkable):

* a loopback HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, port 0, HTTP/1.1 keep-alive)
  that, seeded-randomly per request, answers correctly, returns 500/502/503, returns 429
  with ``Retry-After`` (seconds), hangs past the timeout, returns malformed JSON, returns JSON
  larger than the adapter's limit (with a ``Content-Length`` or chunked), closes the
  connection mid-body, or raises (connection dropped without an answer);
* a ``cmd:`` process that answers, raises (traceback, exit 1), exits 3, hangs past the
  timeout, prints malformed or oversized JSON, or kills itself mid-output.

The fault of each request is drawn from ``random.Random(f"{seed}|{case_id}|{attempt}")``, so
it does not depend on thread timing, and every request is logged server-side (HTTP) or in a
per-case state file (process). :func:`check` then replays the retry policy over each case's
logged faults and compares with the run log: attempts, final error kind, the answer of the
cases that succeeded, ``errors_by_kind``, Retry-After waits, and that every case is there
exactly once.

``tests/run/test_faults.py`` runs a lean version in CI (it imports this file). The full one::

    python bench/faults.py                 # 2,000 HTTP cases + 300 process cases
    python bench/faults.py --http-cases 500 --cmd-cases 100 --seed 7
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import socket
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# fault -> (error kind, retryable) of the outcome the runner must record; None: answered
HTTP_OUTCOMES: dict[str, tuple[str, bool] | None] = {
    "ok": None,
    "500": ("http_status", True),
    "502": ("http_status", True),
    "503": ("http_status", True),
    "429": ("http_status", True),
    "hang": ("timeout", True),
    "malformed": ("malformed", False),
    "oversized": ("malformed", False),
    "oversized_chunked": ("malformed", False),
    "close": ("connection", True),
    "raise": ("connection", True),
}
HTTP_WEIGHTS = {"ok": 55, "500": 5, "502": 4, "503": 4, "429": 6, "hang": 4, "malformed": 5,
                "oversized": 3, "oversized_chunked": 3, "close": 5, "raise": 6}

CMD_OUTCOMES: dict[str, tuple[str, bool] | None] = {
    "ok": None,
    "raise": ("process", True),
    "exit": ("process", True),
    "hang": ("timeout", True),
    "malformed": ("malformed", False),
    "oversized": ("malformed", False),
    "crash": ("process", True),
}
CMD_WEIGHTS = {"ok": 55, "raise": 8, "exit": 8, "hang": 5, "malformed": 8, "oversized": 8, "crash": 8}

RESPONSE_LIMIT = 4096
"""The adapters' response limit during a fault run (small, so oversized answers are cheap)."""


def pick_fault(seed: int, case_id: str, attempt: int, weights: dict[str, int]) -> str:
    rng = random.Random(f"{seed}|{case_id}|{attempt}")  # noqa: S311 - reproducible faults
    return rng.choices(list(weights), weights=list(weights.values()))[0]


# --- the suite and its right answers ----------------------------------------------------------
def write_suite(folder: Path, n: int) -> tuple[Path, list[str]]:
    """``n`` one-turn term-selection cases; the question names the dataset and indicator."""
    folder.mkdir(parents=True, exist_ok=True)
    docs, ids = [], []
    for i in range(n):
        cid = f"case-{i:05d}"
        ds, ind = f"DS{i % 7}", f"X{i:05d}"
        ids.append(cid)
        docs.append(json.dumps({
            "id": cid, "name": f"fault case {i}", "tags": [f"t{i % 3}"],
            "conversation": [{
                "role": "user", "content": f"select dataset {ds} indicator {ind}",
                "target": {"indicator_selection": [{"dataset_id": ds, "dimensions": [
                    {"dimension_name": "INDICATOR", "values": [{"id": ind, "name": f"indicator {ind}"}]},
                ]}]},
            }],
        }))
    path = folder / "suite.yaml"
    path.write_text("---\n".join(d + "\n" for d in docs), encoding="utf-8")
    return path, ids


def answer_for(request: dict) -> dict:
    """The correct answer, derived from the last user message of the request."""
    words = request["messages"][-1]["content"].split()
    ds, ind = words[words.index("dataset") + 1], words[words.index("indicator") + 1]
    return {"indicator_selection": [{"dataset_id": ds, "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": ind, "name": f"indicator {ind}"}]}]}]}


# --- the HTTP system -------------------------------------------------------------------------
class FaultServer:
    """A loopback HTTP system answering with seeded faults; ``log[case_id]`` lists one entry
    per request received: ``{"fault", "t" (arrival, monotonic), "retry_after"}``."""

    def __init__(self, seed: int, *, weights: dict[str, int] | None = None, hang_s: float = 1.5,
                 limit: int = RESPONSE_LIMIT) -> None:
        self.seed = seed
        self.weights = weights or HTTP_WEIGHTS
        self.hang_s = hang_s
        self.limit = limit
        self.log: dict[str, list[dict]] = defaultdict(list)
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = json.loads(body)
                cid = request["case_id"]
                with outer.lock:
                    attempt = len(outer.log[cid]) + 1
                    fault = pick_fault(outer.seed, cid, attempt, outer.weights)
                    entry = {"fault": fault, "t": time.monotonic(), "retry_after": None}
                    outer.log[cid].append(entry)
                outer.serve(self, fault, request, entry)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256  # socketserver's 5 drops connects under load

            def handle_error(self, request, client_address) -> None:  # the "raise" fault
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def serve(self, h: BaseHTTPRequestHandler, fault: str, request: dict, entry: dict) -> None:
        def send(status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(payload)

        with contextlib.suppress(OSError):  # the client may have gone (timeouts, oversize)
            if fault == "ok":
                send(200, json.dumps(answer_for(request)).encode())
            elif fault in ("500", "502", "503"):
                send(int(fault), b'{"error": "injected"}')
            elif fault == "429":
                wait = random.Random(f"{self.seed}|{request['case_id']}|wait").choice([0.05, 0.1, 0.2])  # noqa: S311
                entry["retry_after"] = wait
                send(429, b'{"error": "slow down"}', {"Retry-After": f"{wait:g}"})
            elif fault == "hang":
                time.sleep(self.hang_s)
                h.close_connection = True
            elif fault == "malformed":
                send(200, b'{"indicator_selection": [{"dataset_id": ')
            elif fault == "oversized":
                send(200, self._oversized(request))
            elif fault == "oversized_chunked":
                payload = self._oversized(request)
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.send_header("Transfer-Encoding", "chunked")
                h.end_headers()
                for i in range(0, len(payload), 1024):
                    part = payload[i:i + 1024]
                    h.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                h.wfile.write(b"0\r\n\r\n")
            elif fault == "close":
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", "4000")
                h.end_headers()
                h.wfile.write(b'{"indicator_selection": [')
                h.wfile.flush()
                h.connection.shutdown(socket.SHUT_RDWR)
                h.close_connection = True
            elif fault == "raise":
                raise RuntimeError("injected server crash")

    def _oversized(self, request: dict) -> bytes:
        """A valid answer padded past the adapter's limit."""
        return json.dumps({**answer_for(request), "pad": "x" * (self.limit + 1000)}).encode()

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the process system ----------------------------------------------------------------------
CMD_SCRIPT = r'''
import json, os, random, sys, time
SEED, WEIGHTS, STATE, LIMIT = {seed!r}, {weights!r}, {state!r}, {limit!r}
req = json.load(sys.stdin)
cid = req["case_id"]
log = os.path.join(STATE, cid + ".log")
attempt = 1
if os.path.exists(log):
    with open(log) as fh:
        attempt += len(fh.read().split())
rng = random.Random(f"{{SEED}}|{{cid}}|{{attempt}}")
fault = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
with open(log, "a") as fh:
    fh.write(fault + "\n")
words = req["messages"][-1]["content"].split()
ds, ind = words[words.index("dataset") + 1], words[words.index("indicator") + 1]
answer = {{"indicator_selection": [{{"dataset_id": ds, "dimensions": [
    {{"dimension_name": "INDICATOR", "values": [{{"id": ind, "name": "indicator " + ind}}]}}]}}]}}
if fault == "ok":
    json.dump(answer, sys.stdout)
elif fault == "raise":
    raise RuntimeError("injected failure")
elif fault == "exit":
    sys.stderr.write("model overloaded\n")
    sys.exit(3)
elif fault == "hang":
    time.sleep(600)
elif fault == "malformed":
    sys.stdout.write('{{"indicator_selection": [')
elif fault == "oversized":
    answer["pad"] = "x" * (LIMIT + 1000)
    json.dump(answer, sys.stdout)
elif fault == "crash":
    sys.stdout.write('{{"indicator_selection": [')
    sys.stdout.flush()
    os.kill(os.getpid(), 9)
'''


def write_cmd_system(folder: Path, seed: int, *, weights: dict[str, int] | None = None,
                     limit: int = RESPONSE_LIMIT) -> tuple[str, Path]:
    """The process system's ``cmd:`` spec and its state folder (one ``<case>.log`` per case,
    one fault name per call)."""
    state = folder / "cmd-state"
    state.mkdir(parents=True, exist_ok=True)
    script = folder / "fault_system.py"
    script.write_text(CMD_SCRIPT.format(seed=seed, weights=weights or CMD_WEIGHTS,
                                        state=str(state), limit=limit), encoding="utf-8")
    return f"cmd:{sys.executable} -I -S {script}", state


def read_cmd_log(state: Path) -> dict[str, list[dict]]:
    return {p.stem: [{"fault": f, "retry_after": None} for f in p.read_text().split()]
            for p in state.glob("*.log")}


# --- running and checking ----------------------------------------------------------------------
@contextlib.contextmanager
def response_limit(limit: int):
    """Set both adapters' default response limit for an in-process run."""
    from queryeval.systems import http
    from queryeval.systems import subprocess as sub

    saved = http.MAX_RESPONSE_BYTES, sub.MAX_OUTPUT_BYTES
    http.MAX_RESPONSE_BYTES = sub.MAX_OUTPUT_BYTES = limit
    try:
        yield
    finally:
        http.MAX_RESPONSE_BYTES, sub.MAX_OUTPUT_BYTES = saved


def run(suite: Path, spec: str, out: Path, *, retries: int, timeout: float, concurrency: int,
        limit: int = RESPONSE_LIMIT) -> tuple[int, float]:
    """``queryeval run`` in-process; returns (exit code, seconds)."""
    from queryeval.cli.app import main

    args = ["run", str(suite), "--system", spec, "--out", str(out), "-q", "--no-report",
            "-c", str(concurrency), "--timeout", str(timeout), "--retries", str(retries),
            "--backoff", "0"]
    t0 = time.perf_counter()
    with response_limit(limit), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    return code, time.perf_counter() - t0


def expected(faults: list[str], outcomes: dict, retries: int) -> tuple[int, str | None]:
    """Replay the retry policy over the faults a case met: (attempts, final error kind)."""
    for i, fault in enumerate(faults):
        outcome = outcomes[fault]
        if outcome is None:
            return i + 1, None
        kind, retryable = outcome
        if not retryable or i == retries:
            return i + 1, kind
    return len(faults), "(log ends early)"


def check(out: Path, ids: list[str], log: dict[str, list[dict]], outcomes: dict,
          retries: int) -> dict:
    """Compare the run log with the faults served; returns counts and a list of problems."""
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    lines = (batch.parent / f"results_{bid}.jsonl").read_text(encoding="utf-8").splitlines()
    metrics = json.loads((batch.parent / f"metrics_{bid}.json").read_text(encoding="utf-8"))
    records = [json.loads(x) for x in lines]
    seen = Counter(r["case_id"] for r in records)
    problems: list[str] = []
    duplicates = sum(c - 1 for c in seen.values() if c > 1)
    lost = sum(1 for cid in ids if cid not in seen)
    unknown = sorted(set(seen) - set(ids))
    if unknown:
        problems.append(f"records for unknown case ids: {unknown[:5]}")
    want_kinds: Counter[str] = Counter()
    for r in records:
        cid = r["case_id"]
        faults = [e["fault"] for e in log.get(cid, [])]
        attempts, kind = expected(faults, outcomes, retries)
        (turn,) = r["turns"]
        got_kind = turn["error"]["kind"] if turn["error"] else None
        if attempts != len(faults):
            problems.append(f"{cid}: served {len(faults)} requests {faults}, policy allows {attempts}")
        if (turn["attempts"], got_kind) != (attempts, kind):
            problems.append(f"{cid}: faults {faults}: recorded attempts={turn['attempts']} "
                            f"error={got_kind}, expected attempts={attempts} error={kind}")
        if kind is None:
            want = answer_for({"messages": [{"content": r["turns"][0]["question"]}]})
            if turn["output"] != want["indicator_selection"] or r["scores"]["macro_recall"] != 1.0:
                problems.append(f"{cid}: answered but output or score is wrong")
        else:
            want_kinds[kind] += 1
            if r["status"] != "error" or r["error_kinds"] != [kind]:
                problems.append(f"{cid}: error not carried on the record")
        entries = log.get(cid, [])
        for a, b in zip(entries, entries[1:], strict=False):  # Retry-After honoured (arrival to arrival)
            if a["retry_after"] is not None and b["t"] - a["t"] < a["retry_after"]:
                problems.append(f"{cid}: retried {b['t'] - a['t']:.3f}s after a 429 asking "
                                f"for {a['retry_after']}s")
    overall = metrics["overall_metrics"]
    if overall["errors_by_kind"] != dict(sorted(want_kinds.items())):
        problems.append(f"errors_by_kind {overall['errors_by_kind']} != expected {dict(want_kinds)}")
    if overall["errors"] != sum(want_kinds.values()):
        problems.append(f"errors {overall['errors']} != {sum(want_kinds.values())}")
    served = Counter(e["fault"] for entries in log.values() for e in entries)
    return {
        "cases": len(ids), "records": len(records), "requests": sum(served.values()),
        "faults_injected": sum(v for k, v in served.items() if k != "ok"),
        "faults_by_kind": dict(sorted((k, v) for k, v in served.items() if k != "ok")),
        "retry_after_waits": sum(1 for es in log.values() for e in es[:-1] if e["retry_after"]),
        "errors_by_kind": overall["errors_by_kind"], "lost": lost, "duplicates": duplicates,
        "problems": problems,
    }


def http_faults(tmp: Path, n: int, seed: int, *, retries: int = 2, timeout: float = 1.0,
                concurrency: int = 16) -> dict:
    suite, ids = write_suite(tmp / "suite-http", n)
    with FaultServer(seed, hang_s=timeout + 0.5) as srv:
        code, secs = run(suite, srv.url, tmp / "out-http", retries=retries, timeout=timeout,
                         concurrency=concurrency)
        log = {k: list(v) for k, v in srv.log.items()}
    report = check(tmp / "out-http", ids, log, HTTP_OUTCOMES, retries)
    return {"system": "http", "exit_code": code, "seconds": secs, **report}


def cmd_faults(tmp: Path, n: int, seed: int, *, retries: int = 2, timeout: float = 5.0,
               concurrency: int = 16) -> dict:
    suite, ids = write_suite(tmp / "suite-cmd", n)
    spec, state = write_cmd_system(tmp, seed)
    code, secs = run(suite, spec, tmp / "out-cmd", retries=retries, timeout=timeout,
                     concurrency=concurrency)
    report = check(tmp / "out-cmd", ids, read_cmd_log(state), CMD_OUTCOMES, retries)
    return {"system": "cmd", "exit_code": code, "seconds": secs, **report}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--http-cases", type=int, default=2000)
    ap.add_argument("--cmd-cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=20240501)
    ap.add_argument("--retries", type=int, default=2)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="queryeval-faults-") as tmp:
        if args.http_cases:
            rows.append(http_faults(Path(tmp), args.http_cases, args.seed, retries=args.retries))
        if args.cmd_cases:
            rows.append(cmd_faults(Path(tmp), args.cmd_cases, args.seed, retries=args.retries))
    print(f"{'system':<7}{'cases':>7}{'requests':>10}{'faults':>8}{'429 waits':>10}"
          f"{'errors':>8}{'lost':>6}{'dups':>6}{'problems':>10}{'seconds':>9}  exit")
    for r in rows:
        print(f"{r['system']:<7}{r['cases']:>7}{r['requests']:>10}{r['faults_injected']:>8}"
              f"{r['retry_after_waits']:>10}{sum(r['errors_by_kind'].values()):>8}{r['lost']:>6}"
              f"{r['duplicates']:>6}{len(r['problems']):>10}{r['seconds']:>9.1f}  {r['exit_code']}")
    for r in rows:
        print(f"{r['system']}: faults served {r['faults_by_kind']}")
        print(f"{r['system']}: final errors  {r['errors_by_kind']}")
        for p in r["problems"][:20]:
            print(f"  problem: {p}")
    bad = any(r["problems"] or r["lost"] or r["duplicates"] or r["exit_code"] for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
