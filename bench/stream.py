"""Large inputs stream: scoring an N-line recorded-responses file with flat memory.

Writes a seed 002 questions CSV of N questions over 20 datasets and a recorded-responses
JSONL of N lines (3 chunks each, every other question answered right at a rank from 1 to 3;
the lines shuffled in blocks so they do not come in suite order), then runs
``queryeval run QUESTIONS --responses RESPONSES --k 1,3 --no-report -q`` in a child process
and prints its wall time and peak RSS (``ru_maxrss``), and its ratio to an ideal measured
in the same session on the same inputs: a child process that only reads each responses
line with ``json.loads`` and writes it back with ``json.dumps`` (the least any runner does
per case; no suite, no scoring). With several sizes, the last line is the ratio of the
largest run's peak RSS to the smallest's: flat memory means close to 1.

For the retrieval task the same inputs are also run at ``--k 3`` alone, and the derived
``k=1`` batch's share is printed: the CPU seconds the ``--k 1,3`` run spends beyond the
``--k 3`` run, over the latter (goal, issue 41: at most 10%; CPU, since on a shared box the
wall time follows the neighbours). ``--no-share`` skips that run. The load average is
printed beside each figure.

    python bench/stream.py                      # 100,000 and 1,000,000 lines
    python bench/stream.py --sizes 10000,100000
    python bench/stream.py --task selection     # term selection from a JSONL suite of cases
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

RUNNER = """
import resource, sys, time
from queryeval.cli.app import main
t0 = time.perf_counter()
c0 = time.process_time()
code = main(sys.argv[1:])
print(f"WALL {time.perf_counter() - t0:.3f}", file=sys.stderr)
print(f"CPU {time.process_time() - c0:.3f}", file=sys.stderr)
print(f"MAXRSS_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - the seed's content hash


def _shuffled_in_blocks(n: int, block: int, rng: random.Random) -> list[int]:
    order = list(range(n))
    for start in range(0, n, block):
        part = order[start:start + block]
        rng.shuffle(part)
        order[start:start + block] = part
    return order


def write_retrieval(folder: Path, n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    questions = folder / f"questions_{n}.csv"
    responses = folder / f"responses_{n}.jsonl"
    with questions.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question", "answer", "document_name", "dataset", "chunk_id", "content_hash"])
        for i in range(n):
            w.writerow([f"q{i}", f"What is figure {i} of the report?", f"answer {i}", f"doc{i % 997}.pdf",
                        f"ds{i % 20}", f"c{i}", _md5(f"chunk {i}")])
    with responses.open("w", encoding="utf-8") as fh:
        for i in _shuffled_in_blocks(n, 1000, rng):
            right = rng.randrange(3) if i % 2 == 0 else None
            chunks = [{"chunk_id": f"c{i}" if r == right else f"x{i}.{r}", "score": round(0.9 - 0.1 * r, 3),
                       "content_hash": _md5(f"chunk {i}") if r == right else _md5(f"other {i} {r}")}
                      for r in range(3)]
            fh.write(json.dumps({"qa_pair_id": f"q{i}", "retrieved_chunks": chunks}) + "\n")
    return [str(questions), "--responses", str(responses), "--k", "1,3"]


def write_selection(folder: Path, n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    suite = folder / f"cases_{n}.jsonl"
    responses = folder / f"selection_{n}.jsonl"
    with suite.open("w", encoding="utf-8") as fh:
        for i in range(n):
            target = [{"dataset_id": f"DS{i % 7}", "dimensions": [
                {"dimension_name": "INDICATOR", "values": [{"id": f"I{i % 50}", "name": "i"},
                                                           {"id": f"I{(i + 1) % 50}", "name": "i"}]},
                {"dimension_name": "REF_AREA", "values": [{"id": f"A{i % 30}", "name": "a"}]}]}]
            fh.write(json.dumps({"id": f"c{i}", "tags": [f"t{i % 5}"], "conversation": [
                {"role": "user", "content": f"Show indicator {i % 50} for area {i % 30}",
                 "target": {"indicator_selection": target}}]}) + "\n")
    with responses.open("w", encoding="utf-8") as fh:
        for i in _shuffled_in_blocks(n, 1000, rng):
            values = [{"id": f"I{i % 50}", "name": "i"}] + ([{"id": "I99", "name": "i"}] if rng.random() < 0.3 else [])
            fh.write(json.dumps({"case_id": f"c{i}", "indicator_selection": [{"dataset_id": f"DS{i % 7}", "dimensions": [
                {"dimension_name": "INDICATOR", "values": values},
                {"dimension_name": "REF_AREA", "values": [{"id": f"A{i % 30}", "name": "a"}]}]}]}) + "\n")
    return [str(suite), "--responses", str(responses)]


WRITERS = {"retrieval": write_retrieval, "selection": write_selection}


IDEAL = """
import json, sys, time
t0 = time.perf_counter()
with open(sys.argv[1], "rb") as src, open(sys.argv[2], "w", encoding="utf-8") as dst:
    for line in src:
        dst.write(json.dumps(json.loads(line), ensure_ascii=False) + "\\n")
print(f"WALL {time.perf_counter() - t0:.3f}", file=sys.stderr)
"""


def ideal_once(responses: Path, out: Path) -> float:
    """Wall seconds of the ideal (see the module docstring) on ``responses``."""
    proc = subprocess.run([sys.executable, "-c", IDEAL, str(responses), str(out)],
                          capture_output=True, text=True, check=True)
    return float(next(ln.split()[1] for ln in proc.stderr.splitlines() if ln.startswith("WALL")))


def run_once(args: list[str], out: Path) -> tuple[float, float, float]:
    """(wall s, peak RSS MiB, CPU s) of ``queryeval run ARGS`` in a child process."""
    cmd = [sys.executable, "-c", RUNNER, "run", *args, "--out", str(out), "--no-report", "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"queryeval run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")

    def figure(name: str) -> float:
        return float(next(ln.split()[1] for ln in proc.stderr.splitlines() if ln.startswith(name)))

    return figure("WALL"), figure("MAXRSS_KB") / 1024, figure("CPU")


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--task", choices=sorted(WRITERS), default="retrieval")
    ap.add_argument("--keep", type=Path, help="write the inputs and runs here (kept)")
    ap.add_argument("--no-share", action="store_true",
                    help="skip the --k 3 run that measures the derived k=1 batch's share")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = a.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        results = []
        for n in sizes:
            t = time.perf_counter()
            args = WRITERS[a.task](folder, n)
            made = time.perf_counter() - t
            size_mb = Path(args[2]).stat().st_size / 1e6
            before = _load()
            wall, rss, cpu = run_once(args, folder / f"runs_{n}")
            ideal = ideal_once(Path(args[2]), folder / f"ideal_{n}.jsonl")
            results.append((n, wall, rss))
            print(f"{a.task} n={n:>9,}: responses {size_mb:7.1f} MB (written in {made:5.1f} s)  "
                  f"run {wall:7.1f} s ({cpu:.1f} s CPU, {cpu / n * 1e6:.0f} us a case)  "
                  f"{n / wall:8,.0f} cases/s  peak RSS {rss:7.0f} MiB  "
                  f"ideal {ideal:5.1f} s ({n / ideal:,.0f} cases/s)  ratio {wall / ideal:5.1f}  "
                  f"[{before} -> {_load()}]", flush=True)
            if "--k" in args and not a.no_share:
                alone = [*args[:args.index("--k")], "--k", args[args.index("--k") + 1].split(",")[-1]]
                before = _load()
                wall3, _, cpu3 = run_once(alone, folder / f"runs_{n}_k_alone")
                print(f"  derived k=1 batch: --k {alone[-1]} alone {wall3:.1f} s ({cpu3:.1f} s CPU); "
                      f"share of the derived batch {cpu / cpu3 - 1:.1%} of CPU "
                      f"({wall / wall3 - 1:.1%} of wall) (goal <= 10%)  [{before} -> {_load()}]",
                      flush=True)
        if len(results) > 1:
            (n0, _, r0), (n1, _, r1) = results[0], results[-1]
            print(f"peak RSS ratio {n1:,} / {n0:,} lines: {r1 / r0:.2f} (inputs {n1 / n0:.0f}x)")


if __name__ == "__main__":
    main()
