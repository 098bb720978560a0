"""Benchmark: the cost per case of ``--test-suite N`` (docs/test-suite.md).

    python bench/testsuite.py                 # N = 20 on the shipped examples and a 10-table schema
    python bench/testsuite.py --n 10 --cases 6
    python bench/testsuite.py --suites sparql  # examples/sparql only
    python bench/testsuite.py --suites duckdb  # examples/testsuite as a DuckDB file

For each suite it runs the query task three times on the same recorded predictions, in one
fresh cache folder:

* **plain** -- execution accuracy only (the anchor: one gold and one prediction per case);
* **cold** -- ``test_suite=N`` with no cached neighbours (generation and distillation
  included);
* **warm** -- the same again, the neighbours read from the cache (what every later run of
  the suite pays).

and prints, per case: the verdict executions (gold and prediction on each neighbour, in the
sandboxed workers), the generation executions (gold and mutants on each candidate, in
sandboxed workers: one per build for SQL, the run's pooled multi-store workers for SPARQL),
seconds (cold, warm, plain) and the ratios: warm / plain seconds, and executions per case
against the ~39 gold executions per case of Spider's test suite
(test-suite-sql-eval: 40,167 gold executions over 3,194 databases for 1,034 cases).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIDER_EXECUTIONS_PER_CASE = 40_167 / 1_034
SUITES = ("sql", "testsuite", "duckdb", "sparql", "ten")
"""``--suites`` names: examples/sql, examples/testsuite, examples/testsuite on DuckDB,
examples/sparql, the 10-table schema."""


def ten_table_schema(folder: Path, cases: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """A 10-table chain (t_i references t_{i-1}, nullable and NOT NULL keys, unique
    columns, text, real, date) with 40 rows a table, and join/filter cases over 2-4 tables
    with predictions: half equivalent rewrites, half right on this data by accident."""
    rng = random.Random(seed)
    db = folder / "ten.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys=ON")
    for i in range(10):
        ref = "" if i == 0 else (f", p INTEGER {'NOT NULL ' if i % 2 else ''}"
                                 f"REFERENCES t{i - 1}(id)")
        conn.execute(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, "
                     f"v INTEGER, w REAL NOT NULL, d DATE{ref})")
        for r in range(1, 41):
            row = [r, f"c{i}_{r}", rng.randint(0, 100) if r % 7 else None,
                   round(rng.uniform(0, 50), 2), f"2024-0{1 + r % 9}-1{r % 9}"]
            if i:
                row.append(rng.randint(1, 40) if (i % 2 or r % 5) else None)
            conn.execute(f"INSERT INTO t{i} VALUES ({', '.join('?' * len(row))})", row)
    conn.commit()
    conn.close()
    out_cases, preds = [], []
    for k in range(cases):
        depth = rng.randint(1, 3)
        a = rng.randint(0, 9 - depth)
        tabs = [f"t{a + j}" for j in range(depth + 1)]
        joins = " ".join(f"JOIN {tabs[j]} ON {tabs[j]}.p = {tabs[j - 1]}.id"
                         for j in range(1, len(tabs)))
        c = rng.randint(20, 80)
        gold = f"SELECT {tabs[-1]}.code FROM {tabs[0]} {joins} WHERE {tabs[0]}.v > {c}"
        if k % 2:  # equivalent: the filter negated, NULLs kept out the same way
            pred = gold.replace(f"{tabs[0]}.v > {c}", f"NOT {tabs[0]}.v <= {c}")
        else:  # right by accident: the codes the gold returns here, listed
            got = sqlite3.connect(db).execute(gold).fetchall()
            codes = ", ".join(f"'{r[0]}'" for r in got) or "'none'"
            pred = f"SELECT code FROM {tabs[-1]} WHERE code IN ({codes})"
            if len({r[0] for r in got}) != len(got):
                pred = gold  # duplicates: the list would not be right; keep it equivalent
        cid = f"ten-{k}"
        out_cases.append({"id": cid, "conversation": [{"role": "user", "content": cid,
                          "target": {"query": {"source": str(db), "gold": gold}}}]})
        preds.append({"case_id": cid, "query": pred})
    return out_cases, preds


def measure(label: str, suite, responses, n: int, out: Path) -> dict:
    import queryeval as qe

    def run(**opts) -> tuple[float, list[dict]]:
        start = time.perf_counter()
        r = qe.evaluate(suite, responses=responses, task="query", out=out, concurrency=1, **opts)
        took = time.perf_counter() - start
        path = r.folder / f"results_{r.batch_id}.jsonl"
        return took, [json.loads(line) for line in path.read_text().splitlines()]

    run()  # warm-up: imports, engines' first start, the OS cache
    plain_s, _ = run()
    cold_s, recs = run(test_suite=n)
    warm_s, recs = run(test_suite=n)
    ts = [r.get("test_suite") or {} for r in recs]
    cases = len(recs)
    verdict_exec = sum(t.get("executions", 0) for t in ts) / cases
    checked = [t for t in ts if t.get("executions")]
    gen_exec = _generation_executions()
    verdicts = [r["scores"].get("test_suite_match") for r in recs if r.get("scores")]
    row = {"suite": label, "cases": cases, "checked": len(checked),
           "verdict_exec": verdict_exec, "gen_exec": gen_exec / cases,
           "plain_s": plain_s / cases, "cold_s": cold_s / cases, "warm_s": warm_s / cases,
           "refuted": verdicts.count(0.0), "equal": verdicts.count(1.0),
           "unknown": verdicts.count(None)}
    return row


def _generation_executions() -> int:
    """Gold and mutant executions recorded in every neighbour set built in this cache."""
    root = Path(os.environ["QUERYEVAL_CACHE_DIR"]) / "testsuite"
    total = 0
    for manifest in root.glob("*/manifest.json"):
        total += json.loads(manifest.read_text())["executions"]
    shutil.rmtree(root, ignore_errors=True)  # the next suite counts its own
    return total


def _build_example(folder: Path, name: str) -> Path:
    """Run the example's own build_db.py (copied into ``folder``): its database ``name``."""
    script = folder / "build_db.py"
    ns: dict = {"__name__": "bench_build", "__file__": str(script)}
    exec(compile(script.read_text(), str(script), "exec"), ns)  # noqa: S102 - our own example
    return ns["build"](folder / name)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--cases", type=int, default=8, help="cases of the 10-table schema")
    ap.add_argument("--suites", default=",".join(SUITES),
                    help=f"comma-separated, of {', '.join(SUITES)} (default: all)")
    args = ap.parse_args(argv)
    chosen = [s.strip() for s in args.suites.split(",") if s.strip()]
    if not chosen or set(chosen) - set(SUITES):
        ap.error(f"--suites: choose among {', '.join(SUITES)}")
    work = Path(tempfile.mkdtemp(prefix="queryeval-bench-testsuite-"))
    os.environ["QUERYEVAL_CACHE_DIR"] = str(work / "cache")
    sys.path.insert(0, str(ROOT / "examples" / "sql"))
    try:
        rows = []
        for name in [x for x in ("sql", "testsuite") if x in chosen]:
            folder = work / name
            shutil.copytree(ROOT / "examples" / name, folder)
            _build_example(folder, "shop.sqlite" if name == "sql" else "emp.sqlite")
            rows.append(measure(f"examples/{name}", folder / "suite.yaml",
                                folder / "predictions.jsonl", args.n, work / "runs"))
        if "duckdb" in chosen:  # examples/testsuite, its emp.sql loaded into DuckDB
            import duckdb

            folder = work / "duckdb"
            shutil.copytree(ROOT / "examples" / "testsuite", folder)
            lite = sqlite3.connect(_build_example(folder, "emp.sqlite"))
            con = duckdb.connect(str(folder / "emp.duckdb"))
            text = "\n".join(x for x in (folder / "emp.sql").read_text(
                encoding="utf-8").splitlines() if not x.startswith("--"))
            for body in text.split(";"):
                if body.strip().upper().startswith("CREATE"):
                    con.execute(body)
                    table = body.split()[2]
                    for row in lite.execute(f"SELECT * FROM {table} ORDER BY rowid"):
                        # one row at a time: DuckDB checks a self reference per statement
                        con.execute(f"INSERT INTO {table} VALUES "
                                    f"({', '.join('?' * len(row))})", list(row))
            con.close()
            lite.close()
            suite = folder / "suite.yaml"
            suite.write_text(suite.read_text(encoding="utf-8").replace(
                "source: emp.sqlite", "source: emp.duckdb"), encoding="utf-8")
            rows.append(measure("testsuite, DuckDB", suite, folder / "predictions.jsonl",
                                args.n, work / "runs"))
        if "sparql" in chosen:
            folder = work / "sparql"
            shutil.copytree(ROOT / "examples" / "sparql", folder)
            rows.append(measure("examples/sparql", folder / "suite.yaml",
                                folder / "predictions.jsonl", args.n, work / "runs"))
        if "ten" in chosen:
            ten = work / "ten"
            ten.mkdir()
            cases, preds = ten_table_schema(ten, args.cases)
            rows.append(measure("10-table schema", cases, preds, args.n, work / "runs"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"--test-suite {args.n}, per case (verdict executions: gold and prediction per "
          "neighbour, sandboxed; generation: gold and mutants per candidate, sandboxed, once "
          "per gold, then cached)")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    head = (f"{'suite':18} {'cases':>5} {'checked':>7} {'exec/case':>9} {'gen/case':>8} "
            f"{'vs Spider':>9} {'plain s':>8} {'cold s':>8} {'warm s':>8} {'warm/plain':>10} "
            f"{'verdicts 1/0/?':>15}")
    print(head)
    for r in rows:
        print(f"{r['suite']:18} {r['cases']:>5} {r['checked']:>7} {r['verdict_exec']:>9.1f} "
              f"{r['gen_exec']:>8.1f} {r['verdict_exec'] / SPIDER_EXECUTIONS_PER_CASE:>8.2f}x "
              f"{r['plain_s']:>8.3f} {r['cold_s']:>8.3f} {r['warm_s']:>8.3f} "
              f"{r['warm_s'] / r['plain_s']:>9.1f}x "
              f"{r['equal']:>5}/{r['refuted']}/{r['unknown']}")
    print(f"Spider's test suite: {SPIDER_EXECUTIONS_PER_CASE:.1f} gold executions per case "
          "(40,167 / 1,034); 'vs Spider' = our verdict executions per case / that.")


if __name__ == "__main__":
    main()
