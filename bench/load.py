"""Load: 10,000 cases against a loopback HTTP system with 20 ms latency at concurrency 64.

The system is a small asyncio HTTP/1.1 server (keep-alive) in its own process, answering
each request correctly after ``--latency`` seconds; ``queryeval run`` runs in another process
(so neither steals the other's GIL). Printed: cases per second (end to end: start-up, suite
loading, calls, run log and metrics), peak RSS of the run process (``ru_maxrss``), and the
ratio of the wall time to the ideal ``cases x latency / concurrency``.

    python bench/load.py                              # 10,000 cases, 20 ms, concurrency 64
    python bench/load.py --pool 20                    # httpx's default keep-alive pool (before)
    python bench/load.py --cases 2000 --latency 0     # the runner's own overhead
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from faults import answer_for, write_suite  # noqa: E402 - the bench folder's own helper

REPO = Path(__file__).resolve().parents[1]

RUNNER = """
import resource, sys, time
import queryeval.systems.http as http
pool = int(sys.argv[1])
if pool:
    http.POOL_CONNECTIONS = pool
import queryeval.run.evaluate as ev
def timed(name, fn):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            print(f"PHASE {name} {time.perf_counter() - t:.4f}", file=sys.stderr)
    return wrapper
for name in ("_prepare", "_execute", "finish"):
    setattr(ev, name, timed(name, getattr(ev, name)))
from queryeval.cli.app import main
t0 = time.perf_counter()
code = main(sys.argv[2:])
print(f"WALL {time.perf_counter() - t0:.4f}", file=sys.stderr)
print(f"MAXRSS_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


async def _serve(latency: float, port_file: Path) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
                request = json.loads(await reader.readexactly(length))
                if latency:
                    await asyncio.sleep(latency)
                body = json.dumps(answer_for(request)).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    port_file.write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


def measure(cases: int, latency: float, concurrency: int, pool: int, tmp: Path) -> dict:
    suite, _ = write_suite(tmp / f"suite{cases}", cases)
    port_file = tmp / "port"
    port_file.unlink(missing_ok=True)
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file),
                               "--latency", str(latency)])
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}/"
        out = tmp / f"out-{time.monotonic_ns()}"
        argv = [sys.executable, "-c", RUNNER, str(pool), "run", str(suite), "--system", url,
                "--out", str(out), "-q", "--no-report", "-c", str(concurrency), "--timeout", "30"]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
    finally:
        server.kill()
        server.wait()
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    inner = float(re.search(r"WALL (\S+)", proc.stderr).group(1))
    rss_kb = int(re.search(r"MAXRSS_KB (\d+)", proc.stderr).group(1))
    phases = {m[0].lstrip("_"): float(m[1]) for m in re.findall(r"PHASE (\S+) (\S+)", proc.stderr)}
    (metrics,) = out.rglob("metrics_*.json")
    overall = json.loads(metrics.read_text())["overall_metrics"]
    ideal = cases * latency / concurrency
    return {"cases": cases, "latency_ms": latency * 1000, "concurrency": concurrency, "pool": pool or "256",
            "process_s": wall, "run_s": inner, "cases_per_s": cases / inner,
            "ideal_s": ideal, "phases": phases,
            "calls_per_s": cases / phases["execute"], "calls_ratio": phases["execute"] / ideal if ideal else float("nan"), "ratio": inner / ideal if ideal else float("nan"),
            "peak_rss_mib": rss_kb / 1024, "errors": overall["errors"],
            "macro_recall": overall["macro_recall"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--pool", type=int, default=0, help="keep-alive connections (0: the adapter's default)")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(_serve(args.latency, args.serve))
        return 0
    with tempfile.TemporaryDirectory(prefix="queryeval-load-") as tmp:
        r = measure(args.cases, args.latency, args.concurrency, args.pool, Path(tmp))
    print(f"cases {r['cases']}, latency {r['latency_ms']:g} ms, concurrency {r['concurrency']}, "
          f"keep-alive pool {r['pool']}")
    print(f"run (main() in the run process): {r['run_s']:.2f} s -> {r['cases_per_s']:.0f} cases/s; "
          f"whole process incl. interpreter start-up {r['process_s']:.2f} s")
    print(f"ideal (cases x latency / concurrency): {r['ideal_s']:.2f} s; ratio {r['ratio']:.2f}")
    print("phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in r["phases"].items())
          + f"; calls phase alone {r['calls_per_s']:.0f} cases/s, ratio {r['calls_ratio']:.2f}")
    print(f"peak RSS of the run process: {r['peak_rss_mib']:.0f} MiB; errors {r['errors']}, "
          f"macro_recall {r['macro_recall']}")
    return 0 if r["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
