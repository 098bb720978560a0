"""Benchmark: the cost per case of ``--test-suite N`` on a PostgreSQL source
(docs/test-suite.md, "PostgreSQL"), beside the same suite on its sqlite file in the same run.

    python bench/testsuite_pg.py              # N = 20, examples/testsuite
    python bench/testsuite_pg.py --n 10

Starts a throw-away PostgreSQL cluster from Debian's binaries (tests/helpers/pg_server.py), loads
examples/testsuite/emp.sql into it, and measures as bench/testsuite.py does (plain, cold,
warm; verdict and generation executions per case) for the suite pointed at the server and
at the sqlite file built from the same SQL; then the cost of one candidate's load into the
worker's temporary tables, kept from the candidate before (emptied by ``TRUNCATE``) against
created afresh, measured interleaved in one worker.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args(argv)
    bench = _module(ROOT / "bench" / "testsuite.py", "bench_testsuite")
    pg = _module(ROOT / "tests" / "helpers" / "pg_server.py", "bench_pg_server")
    bindir = pg.find_bindir()
    if bindir is None:
        sys.exit(pg.SKIP_NO_BINARIES)
    work = Path(tempfile.mkdtemp(prefix="queryeval-bench-testsuite-pg-"))
    os.environ["QUERYEVAL_CACHE_DIR"] = str(work / "cache")
    server = pg.PgServer.start(bindir)
    try:
        sql = (ROOT / "examples" / "testsuite" / "emp.sql").read_text(encoding="utf-8")
        db = server.database("emp", sql + "\nGRANT SELECT ON ALL TABLES IN SCHEMA public TO reader;")
        folder = work / "testsuite"
        shutil.copytree(ROOT / "examples" / "testsuite", folder)
        script = folder / "build_db.py"
        ns: dict = {"__name__": "bench_build", "__file__": str(script)}
        exec(compile(script.read_text(), str(script), "exec"), ns)  # noqa: S102 - our own example
        ns["build"](folder / "emp.sqlite")
        text = (folder / "suite.yaml").read_text(encoding="utf-8")
        (folder / "suite_pg.yaml").write_text(text.replace("source: emp.sqlite",
                                                           f"source: {db['reader']}"))
        rows = [bench.measure("testsuite sqlite", folder / "suite.yaml",
                              folder / "predictions.jsonl", args.n, work / "runs"),
                bench.measure("testsuite postgres", folder / "suite_pg.yaml",
                              folder / "predictions.jsonl", args.n, work / "runs")]
        loads = load_costs(db["reader"], work / "loads")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"--test-suite {args.n}, per case (verdict executions: gold and prediction per "
          "neighbour; generation: gold and mutants per candidate, once per gold, then cached)")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'suite':20} {'cases':>5} {'exec/case':>9} {'gen/case':>8} {'plain s':>8} "
          f"{'cold s':>8} {'warm s':>8} {'warm/plain':>10} {'verdicts 1/0/?':>15}")
    for r in rows:
        print(f"{r['suite']:20} {r['cases']:>5} {r['verdict_exec']:>9.1f} {r['gen_exec']:>8.1f} "
              f"{r['plain_s']:>8.3f} {r['cold_s']:>8.3f} {r['warm_s']:>8.3f} "
              f"{r['warm_s'] / r['plain_s']:>9.1f}x {r['equal']:>5}/{r['refuted']}/{r['unknown']}")
    pg_row, lite = rows[1], rows[0]
    print(f"postgres / sqlite: warm {pg_row['warm_s'] / lite['warm_s']:.1f}x, "
          f"cold {pg_row['cold_s'] / lite['cold_s']:.1f}x (same run, same machine)")
    print(f"a candidate's load (2 + 20 rows), median of {LOADS} each, interleaved: tables kept "
          f"(TRUNCATE) {loads['kept']:.2f} ms, created (drop + create) {loads['created']:.2f} "
          f"ms: {loads['kept'] / loads['created']:.2f}x")


LOADS = 60


def load_costs(url: str, folder: Path) -> dict[str, float]:
    """Median milliseconds of loading one candidate of the example's schema when the worker
    holds the same tables (kept and emptied) and when it holds none (dropped first: created),
    the two interleaved in one worker."""
    import time

    from queryeval.engines.query.neighbours.pg import PgRunner
    from queryeval.engines.query.neighbours.pg_names import table_refs
    from queryeval.engines.query.neighbours.pg_schema import to_schema

    folder.mkdir(parents=True)
    rows = {"dept": [(1, "sales"), (2, "research")],
            "emp": [(i, f"e{i}", 10 * i, 1 + i % 2, None if i == 1 else 1) for i in range(1, 21)]}
    times: dict[str, list[float]] = {"kept": [], "created": []}
    with PgRunner(url) as runner:
        schema = to_schema(runner.schema(table_refs("SELECT name FROM emp"), 30))
        schema.visible = []
        runner.write(schema, folder / "first.json", rows)
        for i in range(LOADS):
            for kind in ("kept", "created"):
                t0 = time.perf_counter()
                if kind == "created":
                    runner.release()  # drops the tables (timed: a load did so before)
                runner.write(schema, folder / f"{kind}{i}.json", rows)
                times[kind].append(1000 * (time.perf_counter() - t0))
    return {k: sorted(v)[len(v) // 2] for k, v in times.items()}


if __name__ == "__main__":
    main()
