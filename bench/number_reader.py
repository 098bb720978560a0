"""The one reader of external numbers against ``json.loads``, on real result lines.

Writes a retrieval run of the example (67 cases, k 3) and the sdmx example to a temporary
folder, then parses every line of their ``results_<id>.jsonl`` files with ``json.loads``
(the anchor) and with :func:`queryeval.io.numbers.read_json` as a run file is read
(``finite=False``: only integers beyond the float range refused) and as a suite is
(``finite=True``: NaN, Infinity and ``1e999`` too, a hook on every float), interleaved,
best of ``--rounds``. Prints the times and the ratios.

    python bench/number_reader.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from queryeval.cli.app import main
from queryeval.io.numbers import read_json

REPO = Path(__file__).resolve().parents[1]


def _lines(folder: Path) -> list[bytes]:
    ex = REPO / "examples"
    main(["run", str(ex / "retrieval" / "questions.csv"), "--corpus",
          str(ex / "retrieval" / "corpus.jsonl"), "--responses",
          str(ex / "retrieval" / "responses.jsonl"), "--k", "3", "--out", str(folder / "r"),
          "-q", "--no-report"])
    main(["run", str(ex / "sdmx" / "suite"), "--responses", str(ex / "sdmx" / "responses.jsonl"),
          "--out", str(folder / "s"), "-q", "--no-report"])
    return [line for p in sorted(folder.rglob("results_*.jsonl"))
            for line in p.read_bytes().splitlines() if line.strip()]


def main_(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=50, help="passes over the lines per timing")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        lines = _lines(Path(tmp))
    assert all(read_json(x) == json.loads(x) for x in lines)

    def timed(parse) -> float:
        start = time.perf_counter()
        for _ in range(args.repeat):
            for x in lines:
                parse(x)
        return time.perf_counter() - start

    def as_run_file(x: bytes) -> object:  # how run/records.py reads a line
        return read_json(x, finite=False)

    readers = {"json.loads": json.loads, "run file": as_run_file, "strict": read_json}
    best = dict.fromkeys(readers, float("inf"))
    for _ in range(args.rounds):
        for name, parse in readers.items():
            best[name] = min(best[name], timed(parse))
    size = sum(map(len, lines)) / len(lines)
    print(f"{len(lines)} result lines (mean {size:,.0f} bytes) x {args.repeat}, best of {args.rounds}")
    for name, t in best.items():
        print(f"  {name:10s} {t:.3f} s  ({t / args.repeat / len(lines) * 1e6:.1f} µs a line)")
    for name in ("run file", "strict"):
        print(f"  ratio {name} / json.loads: {best[name] / best['json.loads']:.3f}")


if __name__ == "__main__":
    main_()
