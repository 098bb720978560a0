"""Scale-out benchmark: local threads vs Ray actors, local embedding vs Ray Data.

    python bench/scale.py [--cases 300] [--latency 0.05] [--workers 1,2,4] [--texts 1000]
                          [--embed-actors 1x1,1x2,2x1] [--no-embed] [--no-cases] [--ray-address ADDR]

Part 1 (the anchor is the local runner): a loopback HTTP system (a ThreadingHTTPServer in this
process answering the SDMX example system's selection after sleeping ``--latency`` seconds) is
called for ``--cases`` cases (the SDMX example suite repeated) with local threads and with Ray
actors at each concurrency of ``--workers``. It prints cases/s over the whole call (Ray: actor
start included), the steady rate between the first and the last record, and the overhead per
case beyond the system's latency (``concurrency / steady rate - latency``). The metrics of every
run are checked equal to the first local run's.

Part 2 (the anchor is in-process ``Embedder.embed``): ``--texts`` short texts embedded with the
bundled all-MiniLM-L6-v2 on CPU, in-process vs ``embed_corpus_ray`` with 1 actor of 1 CPU, 1 of
2 CPUs and 2 of 1 CPU (actor start and model load included, cache off); vectors are checked equal (``np.allclose``). The
marginal rate ``(N - 16) / (t(N) - t(16))``, with ``t(16)`` a run on 16 texts (actor start and
model load), is the throughput once the actors are up (what a corpus of millions sees).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SDMX = REPO / "examples" / "sdmx"


def _load_select():
    spec = importlib.util.spec_from_file_location("_bench_sdmx_system", SDMX / "system.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.select


def start_server(latency: float) -> ThreadingHTTPServer:
    select = _load_select()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else headers and body wait on a 40 ms delayed ACK

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            time.sleep(latency)
            data = json.dumps(select(json.loads(body))).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def make_cases(n: int):
    from queryeval.suite.loader import load_suite
    from queryeval.tasks.base import get_task

    task = get_task("indicator_selection")
    base = [c for c in load_suite(SDMX / "suite").cases if task.scored_turns(c)]
    return task, [base[i % len(base)].model_copy(update={"id": f"{base[i % len(base)].id}#{i}"})
                  for i in range(n)]


def in_order(records: list[dict]) -> list[dict]:
    """Records in suite order, as the run log's finish step sorts them (float sums depend on
    the order, so completion order would differ in the last bit)."""
    return sorted(records, key=lambda r: int(r["case_id"].rpartition("#")[2]))


def timed_run(runner, cases, concurrency: int, **kw) -> tuple[float, float, list[dict]]:
    """(wall seconds, steady cases/s between the first and the last record, records)."""
    stamps: list[float] = []
    records: list[dict] = []

    def on_record(rec: dict) -> None:
        stamps.append(time.perf_counter())
        records.append(rec)

    t0 = time.perf_counter()
    done = runner(cases, on_record=on_record, concurrency=concurrency, timeout=30.0, **kw)
    wall = time.perf_counter() - t0
    if done != len(cases):
        raise SystemExit(f"only {done} of {len(cases)} cases done")
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan")
    return wall, steady, records


def bench_cases(args: argparse.Namespace) -> None:
    from queryeval.run.config import RunConfig
    from queryeval.run.ray_executor import ensure_ray, run_cases_ray
    from queryeval.run.runner import run_cases
    from queryeval.systems.http import HttpSystem

    server = start_server(args.latency)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    task, cases = make_cases(args.cases)
    workers = [int(w) for w in args.workers.split(",")]
    print(f"== cases: {len(cases)} cases, HTTP system with {args.latency * 1000:.0f} ms latency ==")
    rows = []
    reference = None
    for c in workers:
        system = HttpSystem(url)
        wall, steady, recs = timed_run(
            lambda cs, system=system, **kw: run_cases(cs, system, task, **kw), cases, c)
        system.close()
        metrics = task.aggregate(in_order(recs))["overall_metrics"]
        reference = reference or metrics
        assert metrics == reference, "local runs disagree"
        rows.append(("local threads", c, wall, steady))
    t0 = time.perf_counter()
    ensure_ray(args.ray_address)
    init_s = time.perf_counter() - t0
    config = RunConfig(suite=str(SDMX / "suite"), system=url, executor="ray",
                       ray_address=args.ray_address)
    for c in workers:
        wall, steady, recs = timed_run(
            lambda cs, **kw: run_cases_ray(cs, None, task, config=config, **kw), cases, c)
        assert task.aggregate(in_order(recs))["overall_metrics"] == reference, "Ray metrics differ from local"
        rows.append(("ray actors", c, wall, steady))
    server.shutdown()
    print(f"ray.init: {init_s:.1f} s (once per driver; not in the figures below)")
    print(f"{'executor':<14} {'conc':>4} {'wall s':>7} {'cases/s':>8} {'steady/s':>9} "
          f"{'overhead ms/case':>17} {'vs local':>9}")
    local_rate = {c: len(cases) / wall for name, c, wall, _ in rows if name == "local threads"}
    for name, c, wall, steady in rows:
        overhead = (c / steady - args.latency) * 1000
        ratio = (len(cases) / wall) / local_rate[c]
        print(f"{name:<14} {c:>4} {wall:>7.2f} {len(cases) / wall:>8.1f} {steady:>9.1f} "
              f"{overhead:>17.1f} {ratio:>8.2f}x")
    print(f"ideal (latency bound): {1 / args.latency:.0f} cases/s per unit of concurrency")


def bench_embed(args: argparse.Namespace) -> None:
    import numpy as np

    from queryeval.engines.retrievers import Embedder, load_sentence_transformer, model_fingerprint
    from queryeval.engines.retrievers.models import default_model_path
    from queryeval.engines.retrievers.ray_embed import embed_corpus_ray

    words = ["gdp", "inflation", "carrots", "population", "unemployment", "saffron", "debt",
             "exports", "rent", "wages", "tourism", "steel"]
    texts = [f"{words[i % 12]} of region {i} in {2000 + i % 25} ({words[(i * 7) % 12]})"
             for i in range(args.texts)]
    print(f"\n== embedding: {len(texts)} texts, all-MiniLM-L6-v2 on CPU, cache off ==")
    t0 = time.perf_counter()
    model = load_sentence_transformer(None, device="cpu")
    load_s = time.perf_counter() - t0
    model.encode(texts[:8])  # warm-up
    embedder = Embedder(model, fingerprint=model_fingerprint(default_model_path()), cache=None)
    t0 = time.perf_counter()
    local = embedder.embed(texts)
    local_s = time.perf_counter() - t0
    print(f"{'how':<34} {'s':>7} {'texts/s':>8} {'vs local':>9}")
    print(f"{'local Embedder.embed (anchor)':<34} {local_s:>7.2f} {len(texts) / local_s:>8.1f} "
          f"{1.0:>8.2f}x   (model load {load_s:.1f} s not included)")
    tiny = texts[:16]
    t0 = time.perf_counter()
    embed_corpus_ray(tiny, num_actors=1, cache=False, address=args.ray_address)
    print(f"(first Ray Data run, {len(tiny)} texts: {time.perf_counter() - t0:.1f} s: worker "
          "processes, imports; not counted below)")
    for item in args.embed_actors.split(","):
        n, _, cpus = item.partition("x")
        kw = {"num_actors": int(n), "num_cpus": float(cpus or 1), "cache": False,
              "address": args.ray_address}
        t0 = time.perf_counter()
        embed_corpus_ray(tiny, **kw)
        start_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = embed_corpus_ray(texts, **kw)
        s = time.perf_counter() - t0
        ok = np.allclose(got, local, atol=1e-5)
        label = f"Ray Data, {n} actor(s) x {kw['num_cpus']:g} CPU"
        print(f"{label:<34} {s:>7.2f} {len(texts) / s:>8.1f} "
              f"{local_s / s:>8.2f}x   allclose={ok}")
        if s > start_s:
            marginal = (len(texts) - len(tiny)) / (s - start_s)
            print(f"{'  marginal, start excluded':<34} {'':>7} {marginal:>8.1f} "
                  f"{marginal / (len(texts) / local_s):>8.2f}x   (start + model load: "
                  f"{start_s:.1f} s, from a {len(tiny)}-text run)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--embed-actors", default="1x1,1x2,2x1",
                        help="ACTORSxCPUS_PER_ACTOR entries (Ray sets torch threads to the CPUs)")
    parser.add_argument("--no-embed", action="store_true")
    parser.add_argument("--no-cases", action="store_true")
    parser.add_argument("--ray-address", default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    if not args.no_cases:
        bench_cases(args)
    if not args.no_embed:
        bench_embed(args)


if __name__ == "__main__":
    main()
