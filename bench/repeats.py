"""Repeats add no overhead beyond the calls: N cases x R repeats against M = N*R cases x 1.

    PYTHONPATH=src python bench/repeats.py [--cases 200] [--repeats 5] [--delay 0.005] [-c 4]

Both runs make the same number of calls to a Python system that sleeps ``--delay`` seconds
and answers right with probability 1/2 (seeded by case and repeat), through the real
command (a subprocess each, ``--no-report``). Prints the wall time of each, best of
``--rounds``, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SYSTEM = '''
import random, time
SEL = [{"dataset_id": "D", "dimensions": [{"dimension_name": "C",
        "values": [{"id": "X", "name": "x"}]}]}]
def bot(req):
    time.sleep(DELAY)
    rng = random.Random(f"{req['case_id']}:{req.get('repeat', 0)}")
    return {"indicator_selection": SEL if rng.random() < 0.5 else []}
'''


def suite(path: Path, n: int) -> None:
    target = [{"dataset_id": "D", "dimensions": [{"dimension_name": "C",
                                                  "values": [{"id": "X", "name": "x"}]}]}]
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"q{i}", "conversation": [
                {"role": "user", "content": f"q{i}",
                 "target": {"indicator_selection": target}}]}) + "\n")


def timed(args: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "queryeval", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--delay", type=float, default=0.005)
    ap.add_argument("-c", "--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "benchsys.py").write_text(SYSTEM.replace("DELAY", repr(a.delay)))
        suite(root / "small.jsonl", a.cases)
        suite(root / "large.jsonl", a.cases * a.repeats)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(root), os.environ.get("PYTHONPATH", "")])}
        common = ["--system", "python:benchsys:bot", "-c", str(a.concurrency), "-q",
                  "--no-report", "--out", str(root / "runs")]
        plain, rep = [], []
        for _ in range(a.rounds):
            plain.append(timed(["run", str(root / "large.jsonl"), *common], env))
            rep.append(timed(["run", str(root / "small.jsonl"), "--repeats", str(a.repeats),
                              *common], env))
    calls = a.cases * a.repeats
    print(f"{calls} cases x 1: best {min(plain):.2f} s (all {', '.join(f'{t:.2f}' for t in plain)})")
    print(f"{a.cases} cases x {a.repeats}: best {min(rep):.2f} s "
          f"(all {', '.join(f'{t:.2f}' for t in rep)})")
    print(f"ratio repeats/plain: {min(rep) / min(plain):.3f}; pure call time "
          f"{calls * a.delay / a.concurrency:.2f} s")


if __name__ == "__main__":
    main()
