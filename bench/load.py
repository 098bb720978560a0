"""Load: cases against a loopback HTTP system at concurrency 64, the runner's own overhead.

The system is a small asyncio HTTP/1.1 server (keep-alive) in its own process, answering
each request correctly after ``--latency`` seconds; ``queryeval run`` runs in another process
(so neither steals the other's GIL). Printed per latency: cases per second (end to end:
start-up, suite loading, calls, run log and metrics), the wall and CPU time of each phase
(prepare, execute = the calls, finish), peak RSS of the run process (``ru_maxrss``), and the
ratio of the wall time to the ideal ``cases x latency / concurrency`` (goal, issue 25: at
most 3 at 20 ms, at most 1.5 at 200 ms), with the load average before and after (the CPU
times show what the run itself cost when the machine is shared).

    python bench/load.py                              # 3,000 cases at 20 ms and at 200 ms
    python bench/load.py --cases 3000 --latency 0.02 --concurrency 64 --runs 3
    python bench/load.py --cases 2000 --latency 0     # the runner's own overhead
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from faults import answer_for, write_suite  # noqa: E402 - the bench folder's own helper

REPO = Path(__file__).resolve().parents[1]
PROGRESS = "--progress" in sys.argv  # the progress bar drawn (to a pipe: as the CLI draws it there)

RUNNER = """
import resource, sys, time
import queryeval.systems.http as http
pool = int(sys.argv[1])
if pool:
    http.POOL_CONNECTIONS = pool
import queryeval.run.evaluate as ev
def timed(name, fn):
    def wrapper(*a, **k):
        t, c = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **k)
        finally:
            print(f"PHASE {name} {time.perf_counter() - t:.4f} {time.process_time() - c:.4f}",
                  file=sys.stderr)
    return wrapper
for name in ("_prepare", "_execute", "finish"):
    setattr(ev, name, timed(name, getattr(ev, name)))
from queryeval.cli.app import main
t0, c0 = time.perf_counter(), time.process_time()
code = main(sys.argv[2:])
print(f"WALL {time.perf_counter() - t0:.4f} {time.process_time() - c0:.4f}", file=sys.stderr)
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
                "--out", str(out), *([] if PROGRESS else ["-q"]), "--no-report",
                "-c", str(concurrency), "--timeout", "30"]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
    finally:
        server.kill()
        server.wait()
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    inner, inner_cpu = map(float, re.search(r"WALL (\S+) (\S+)", proc.stderr).groups())
    rss_kb = int(re.search(r"MAXRSS_KB (\d+)", proc.stderr).group(1))
    phases = {m[0].lstrip("_"): (float(m[1]), float(m[2]))
              for m in re.findall(r"PHASE (\S+) (\S+) (\S+)", proc.stderr)}
    (metrics,) = out.rglob("metrics_*.json")
    overall = json.loads(metrics.read_text())["overall_metrics"]
    ideal = cases * latency / concurrency
    calls = phases["execute"][0]
    return {"cases": cases, "latency_ms": latency * 1000, "concurrency": concurrency,
            "pool": pool or "256", "process_s": wall, "run_s": inner, "run_cpu_s": inner_cpu,
            "cases_per_s": cases / inner, "ideal_s": ideal, "phases": phases,
            "calls_per_s": cases / calls, "calls_ratio": calls / ideal if ideal else float("nan"),
            "ratio": inner / ideal if ideal else float("nan"),
            "peak_rss_mib": rss_kb / 1024, "errors": overall["errors"],
            "macro_recall": overall["macro_recall"]}


def report(r: dict) -> None:
    print(f"cases {r['cases']}, latency {r['latency_ms']:g} ms, concurrency {r['concurrency']}")
    print(f"  run (main() in the run process): {r['run_s']:.2f} s ({r['run_cpu_s']:.2f} s CPU) -> "
          f"{r['cases_per_s']:.0f} cases/s; whole process incl. interpreter start-up "
          f"{r['process_s']:.2f} s")
    print(f"  ideal (cases x latency / concurrency): {r['ideal_s']:.2f} s; "
          f"RATIO {r['ratio']:.2f} (calls phase alone {r['calls_ratio']:.2f}, "
          f"{r['calls_per_s']:.0f} cases/s)")
    outside = r["run_s"] - sum(w for w, _ in r["phases"].values())
    print("  phases, wall (CPU): " + ", ".join(f"{k} {w:.2f} s ({c:.2f})"
                                             for k, (w, c) in r["phases"].items())
          + f"; outside them (imports, summary) {outside:.2f} s")
    print(f"  peak RSS of the run process: {r['peak_rss_mib']:.0f} MiB; errors {r['errors']}, "
          f"macro_recall {r['macro_recall']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--latency", type=float, nargs="+", default=[0.02, 0.2],
                    help="seconds per answer; each value is one measurement (default: 0.02 0.2)")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--runs", type=int, default=1, help="runs per latency; the fastest is shown")
    ap.add_argument("--progress", action="store_true",
                    help="leave out -q: the progress display's cost included")
    ap.add_argument("--pool", type=int, default=0, help="httpx's keep-alive pool, threaded path only (0: the "
                    "adapter's default); the event loop keeps one connection per call in flight")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(_serve(args.latency[0], args.serve))
        return 0
    print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    errors = 0
    ratios = []
    with tempfile.TemporaryDirectory(prefix="queryeval-load-") as tmp:
        for latency in args.latency:
            runs = [measure(args.cases, latency, args.concurrency, args.pool, Path(tmp))
                    for _ in range(max(1, args.runs))]
            r = min(runs, key=lambda x: x["run_s"])
            report(r)
            errors += r["errors"]
            ratios.append(f"{r['latency_ms']:g} ms: {r['ratio']:.2f}")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("ratios to the ideal (goal, issue 41: <= 2 at 20 ms, <= 1.2 at 200 ms): " + "; ".join(ratios))
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
