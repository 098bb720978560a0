"""Benchmark: the cost of writing a finished run's xlsx report and results CSV.

    python bench/report_writers.py                 # 5,000 cases, 5 repetitions
    python bench/report_writers.py --cases 20000 --repeat 3

Generates a term-selection suite (three dimensions, two values each, plain names) and its
recorded responses, runs it once with ``--no-report``, then times ``write_selection_xlsx``
and ``RunLog.write_csv`` on the run's records (CPU time of this process, so other load on the
machine counts less). To compare two versions of the writers, run it with each on
``PYTHONPATH`` (e.g. a ``git worktree`` of the older commit): the suite is generated with a
fixed seed, so both time the same records.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import queryeval
from queryeval.cli.app import main
from queryeval.report.selection_xlsx import write_selection_xlsx
from queryeval.run.log import RunLog
from queryeval.tasks.base import get_task
from queryeval.tasks.selection.task import SelectionTask


def make_suite(folder: Path, n: int) -> tuple[Path, Path]:
    rng = random.Random(0)
    cases, responses = [], []
    for i in range(n):
        dims = [{"dimension_name": d, "values": [{"id": f"{d}{rng.randint(0, 20)}",
                                                  "name": f"name {d} {j}"} for j in range(2)]}
                for d in ("INDICATOR", "COUNTRY", "FREQ")]
        target = [{"dataset_id": f"DS{i % 7}", "dimensions": dims}]
        cid = f"case-{i:06d}"
        cases.append({"id": cid, "name": f"question number {i}", "tags": ["t1", f"g{i % 5}"],
                      "conversation": [{"role": "user", "content": f"indicator {i}, country {i % 50}?",
                                        "target": {"indicator_selection": target}}]})
        output = json.loads(json.dumps(target))
        output[0]["dimensions"][0]["values"][0]["id"] = "X"
        responses.append({"case_id": cid, "indicator_selection": output})
    suite, resp = folder / "suite.jsonl", folder / "responses.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
    resp.write_text("".join(json.dumps(r) + "\n" for r in responses))
    return suite, resp


def main_bench() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        suite, resp = make_suite(folder, args.cases)
        assert main(["run", str(suite), "--responses", str(resp), "--out", str(folder / "run"),
                     "-q", "--no-report"]) == 0
        log = RunLog.open(next((folder / "run").rglob("batch_*.json")))
        records = log.read_records()
        metrics = json.loads(log.paths.metrics.read_text())
        task = get_task("indicator_selection")
        rows = [row for r in records for row in task.csv_rows(r)]
        xs, cs = [], []
        for _ in range(args.repeat):
            t = time.process_time()
            write_selection_xlsx(folder / "report.xlsx", records, metrics,
                                 verdict=SelectionTask.case_verdict)
            xs.append(time.process_time() - t)
            t = time.process_time()
            log.write_csv(task.csv_columns, rows)
            cs.append(time.process_time() - t)
    print(f"queryeval from {Path(queryeval.__file__).parent}")
    print(f"{len(records):,} cases, {len(rows):,} CSV rows x {len(task.csv_columns)} columns")
    for name, ts in (("xlsx report", xs), ("results CSV", cs)):
        print(f"{name}: CPU min {min(ts):.3f} s, median {statistics.median(ts):.3f} s "
              f"({', '.join(f'{t:.3f}' for t in ts)})")


if __name__ == "__main__":
    main_bench()
