"""Fuzz every reader with many more inputs than CI does (issue 9).

Runs the harness of ``tests/test_fuzz_readers.py`` (same seed files, same generators, same
oracle) with ``--examples`` structured and ``--examples`` mutated inputs per reader, and prints
one row per reader: inputs tried, accepted, rejected with the documented error (InputError;
ConfigError for the run log), skipped (mutated SPARQL JSON that is no longer JSON) and
crashes, which must be 0. The exit status is 1 when any reader crashed; the first crashes
are printed with the input that caused them.

    python bench/fuzz.py --examples 2000 --jobs 2
    python bench/fuzz.py --examples 200 --reader suite-yaml --reader trec-run
    python bench/fuzz.py --readers-cost     # load time of a large JSONL and YAML suite
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))


def fuzz_reader(name: str, examples: int, seed: int | None) -> tuple[str, Counter, list[str], float]:
    """Run both generators of one reader; returns (name, counts, crash reports, seconds)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hyp_seed

    from test_fuzz_readers import BY_NAME, Crash, check, mutated

    reader = BY_NAME[name]
    counts: Counter = Counter()
    crashes: list[str] = []
    began = time.perf_counter()
    conf = settings(max_examples=examples, deadline=None, database=None,
                    derandomize=seed is None, suppress_health_check=list(HealthCheck))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for strategy in (reader.structured, mutated(reader.seed)):

            def body(data: bytes) -> None:
                counts["tried"] += 1
                try:
                    counts[check(reader, data, folder)] += 1
                except Crash as exc:
                    counts["crashes"] += 1
                    if len(crashes) < 3:
                        crashes.append(str(exc))

            test = given(data=strategy)(body)
            if seed is not None:
                test = hyp_seed(seed)(test)
            conf(test)()
    return name, counts, crashes, time.perf_counter() - began


def readers_cost(repeat: int = 3) -> None:
    """CPU seconds (best of ``repeat``) of ``load_suite`` on a 100,000-case JSONL suite and a
    5,000-case YAML list: the cost of the hostile-input checks on the happy path (the depth
    scan, the strict JSON hooks, the regular-file check). Run it on two checkouts to compare."""
    import json

    import yaml

    from queryeval.suite import load_suite

    def case(i: int) -> dict:
        return {"id": f"c{i}", "tags": ["gdp", "x"], "metadata": {"w": 1.5, "n": i},
                "conversation": [{"role": "user", "content": f"question number {i} about gdp?",
                                  "target": {"answers": [{"name": "a", "value": str(i)},
                                                         {"name": "b", "value": "2.5"}]}}]}

    with tempfile.TemporaryDirectory() as tmp:
        jsonl, yml = Path(tmp) / "big.jsonl", Path(tmp) / "big.yaml"
        with jsonl.open("w") as fh:
            for i in range(100_000):
                fh.write(json.dumps(case(i)) + "\n")
        with yml.open("w") as fh:
            yaml.safe_dump([case(i) for i in range(5000)], fh, sort_keys=False)
        for path in (jsonl, yml):
            best = float("inf")
            for _ in range(repeat):
                began = time.process_time()
                n = len(load_suite(path))
                best = min(best, time.process_time() - began)
            print(f"{path.name}: {n} cases, {path.stat().st_size / 1e6:.1f} MB, "
                  f"load_suite {best:.2f} CPU s (best of {repeat})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000,
                        help="inputs per generator per reader (two generators)")
    parser.add_argument("--jobs", type=int, default=2, help="readers fuzzed in parallel")
    parser.add_argument("--reader", action="append", default=[], help="only these readers")
    parser.add_argument("--seed", type=int, default=None,
                        help="random seed (default: derandomized, reproducible)")
    parser.add_argument("--readers-cost", action="store_true",
                        help="time loading a large JSONL and YAML suite instead of fuzzing")
    args = parser.parse_args(argv)
    if args.readers_cost:
        readers_cost()
        return 0

    from test_fuzz_readers import READERS

    names = args.reader or [r.name for r in READERS]
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(fuzz_reader, names, [args.examples] * len(names),
                                [args.seed] * len(names)))
    total: Counter = Counter()
    print("| reader | inputs tried | accepted | rejected (InputError) | skipped | crashes | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, counts, _, secs in results:
        total.update(counts)
        print(f"| {name} | {counts['tried']} | {counts['accepted']} | {counts['rejected']} | "
              f"{counts['skipped']} | {counts['crashes']} | {secs:.1f} |")
    print(f"| **all {len(results)} readers** | {total['tried']} | {total['accepted']} | "
          f"{total['rejected']} | {total['skipped']} | {total['crashes']} | "
          f"{time.perf_counter() - began:.1f} (wall) |")
    for name, _, crashes, _ in results:
        for report in crashes:
            print(f"\n--- crash in {name}:\n{report}")
    return 1 if total["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
