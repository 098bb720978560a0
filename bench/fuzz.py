"""Fuzz every reader with many more inputs than CI does (issue 9).

Runs the harness of ``tests/suite/test_fuzz_readers.py`` (same seed files, same generators, same
oracle) with ``--examples`` structured and ``--examples`` mutated inputs per reader, and prints
one row per reader: inputs tried, accepted, rejected with the documented error (InputError;
ConfigError for the run log), skipped (mutated SPARQL JSON that is no longer JSON) and
crashes, which must be 0. The exit status is 1 when any reader crashed; the first crashes
are printed with the input that caused them.

    python bench/fuzz.py --examples 2000 --jobs 2
    python bench/fuzz.py --examples 200 --reader suite-yaml --reader trec-run
    python bench/fuzz.py --readers-cost     # load time of a large JSONL and YAML suite
    python bench/fuzz.py --trec-native --examples 20000 --seed 1   # compiled TREC reader

``--trec-native`` compares the compiled TREC reader (``python setup.py build_ext --inplace``;
build it with ``-fsanitize=address,undefined`` and LD_PRELOAD libasan for memory errors) and
the pyarrow reader with the exact one on random and mutated qrels/run files.
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

    from helpers.fuzz_readers import BY_NAME, Crash, check, mutated

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


# --------------------------------------------------------------------------- compiled TREC reader

#: Scores at strtod's edges (decimal, hexadecimal, inf/nan spellings, denormals, long mantissas).
TREC_SCORES = [
    "0", "-0", "+0", "1", "1.5", "-2.25", ".5", "5.", "-.5", "+.5e1", "1e", "1e+", "1e-",
    "4.9e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-400", "1e400",
    "-1e400", "1.7976931348623157e308", "1.7976931348623159e308", "2.2250738585072011e-308",
    "0x", "0X1P3", "0x1p-1074", "0x1p-1075", "0x1.8p1", "-0x.8", "0x1p99999", "0x.p1", "0xg",
    "inf", "-Infinity", "INFINITYx", "infin", "in", "nan", "-NaN(abc_1)", "nanx", "0_5",
    "1.5abc", "9007199254740993", "123456789012345678901234567890", "0.1", "0.3",
    "1234567890123456789e-27", "18446744073709551615e27", "8.98846567431158e307",
    "1." + "0" * 40 + "1", "0." + "0" * 30 + "1e30", "1e-99999999999", "1e99999999999", "+", "-",
    ".", "e5", "\u0131nf", "1\x00", "٣",
]
TREC_LEVELS = ["0", "1", "-1", "+2", "2.7", "1_0", "abc", "", "9223372036854775807",
               "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
               "0" * 5000 + "7", "9" * 5000, "00000000000000000000001", "+-1", "１"]
TREC_IDS = ["", "a", "q1", "abcdefg", "abcdefgh", "abcdefghi", "é", "\U0001f600", "\u4e2d" * 3,
            "x" * 16, "y" * 255, "#h", "d\x00d", "\ufeffq", "\u0085", "\xa0", "\udc80"]
SEPS = [" ", "\t", "  ", "\r", "\v", "\f", " \t "]


def _trec_line(rng, kind: str, plain: bool = False) -> str:
    ids = [i for i in TREC_IDS if rng.random() < 0.2] + [f"q{rng.randrange(6)}", f"d{rng.randrange(40)}",
                      "z" * rng.choice([7, 8, 9, 64, 1000, 65536])]

    def ident() -> str:
        return rng.choice(ids[-3:-1]) if rng.random() < 0.8 else rng.choice(ids)

    if kind == "qrels":
        level = rng.choice(TREC_LEVELS) if rng.random() < 0.1 else str(rng.randrange(-1, 4))
        fields = [ident(), rng.choice(["0", "Q0"]), ident(), level]
    else:
        score = (rng.choice(TREC_SCORES) if rng.random() < 0.2
                 else rng.choice([repr(rng.uniform(-50, 50)), f"{rng.random():.{rng.randrange(20)}g}",
                                  str(rng.randrange(10**rng.randrange(1, 25)))]))
        fields = [ident(), "Q0", ident(), str(rng.randrange(100)), score,
                  "tag"] + ["x"] * rng.choice([0, 0, 0, 1, 3])
    if rng.random() < 0.01:
        fields = fields[: rng.randrange(len(fields) + 1)]
    seps = [" "] if plain else SEPS
    line = "".join(f + rng.choice(seps) for f in fields[:-1]) + (fields[-1] if fields else "")
    roll = 1.0 if plain else rng.random()
    if roll < 0.03:
        line = "#" + line
    elif roll < 0.06:
        line = rng.choice(SEPS) + "# c"
    elif roll < 0.09:
        line = rng.choice(["", " ", "\r", "\t \f"])
    elif roll < 0.12:
        line = rng.choice(SEPS) + line + rng.choice(SEPS)
    return line


def _mutate(rng, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 8])):
        op = rng.randrange(6)
        at = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(at, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[at:at] = bytes([rng.choice([0, 10, 13, 32, 35, 0x80, 0xBF, 0xC0, 0xC2, 0xE0, 0xED,
                                          0xF0, 0xF4, 0xF5, 0xFF, rng.randrange(256)])])
        elif op == 2:
            b[at:at] = rng.choice([b"\xed\xa0\x80", b"\xc0\xaf", b"\xf0\x9f\x98",
                                   b"\xf4\x90\x80\x80", b"\xe2\x82", b"\n", b"\r\n"])
        elif op == 3 and b:
            a2 = rng.randrange(len(b))
            b[at:at] = b[a2:a2 + rng.randrange(1, 200)]  # splice
        elif op == 4 and b:
            del b[at:at + rng.randrange(1, 20)]
        else:
            b[at:at] = b"\n"
    return bytes(b)


def trec_native_case(rng, kind: str) -> bytes:
    """One random qrels or run file: generated lines, sometimes mutated."""
    n = rng.choice([0, 1, 2, 5, 20, 200])
    plain = rng.random() < 0.4  # single spaces, no comments: what pyarrow reads too
    text = "\n".join(_trec_line(rng, kind, plain) for _ in range(n))
    if n and rng.random() < 0.7:
        text += "\n"
    data = text.encode("utf-8", "surrogatepass")
    return _mutate(rng, data) if rng.random() < 0.25 else data


def _trec_canon(cols) -> tuple:
    import numpy as np

    from queryeval.metrics.ranking._columns import names_list

    value = np.asarray(cols.value)
    bits = value.view(np.uint64) if value.dtype == np.float64 else value.astype(np.int64)
    return (names_list(cols.names_q), names_list(cols.names_doc), np.asarray(cols.q).tolist(),
            np.asarray(cols.doc).tolist(), bits.tolist())


def trec_native_check(data: bytes, kind: str, strict: bool, folder: Path) -> str:
    """Compare the compiled reader (threads 1, 2, 3, 8) and the pyarrow one (what runs without
    the extension) with the exact one on ``data``:
    'accepted' (same columns), 'rejected' (exact reader raised InputError, compiled refused);
    raises AssertionError on any difference and lets every other exception through."""
    from queryeval.errors import InputError
    from queryeval.suite import trec

    path = folder / f"f.{kind}"
    path.write_bytes(data)
    try:
        want = _trec_canon(trec._parse_python(path, kind, strict))
    except InputError:
        want = None
    for threads in (1, 2, 3, 8):
        got = trec._parse_native(path, kind, strict, threads=threads)
        got = None if got is None else _trec_canon(got)
        if got != want and not (want is None and got is None):
            raise AssertionError(f"threads={threads}: compiled {got!r:.300} != exact {want!r:.300}")
    arrow = trec._parse_arrow(path, kind)  # the reader without the extension
    if arrow is not None and _trec_canon(arrow) != want:
        raise AssertionError(f"pyarrow {_trec_canon(arrow)!r:.300} != exact {want!r:.300}")
    if want is None:
        try:
            trec._read_columns(path, kind, strict)
        except InputError:
            return "rejected"
        raise AssertionError("the exact reader raised, the public reader did not")
    return "accepted"


def fuzz_trec_native(examples: int, seed: int, seconds: float | None) -> int:
    """Differential fuzzing of the compiled TREC reader against the exact one."""
    import random
    import traceback

    from queryeval.suite import trec

    if trec.native_reader() is None:
        print("the compiled reader is not built (python setup.py build_ext --inplace)")
        return 1
    rng = random.Random(seed)
    counts: Counter = Counter()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(examples):
            if seconds is not None and time.perf_counter() - began > seconds:
                break
            kind = rng.choice(["qrels", "run"])
            strict = rng.random() < 0.2
            data = trec_native_case(rng, kind)
            counts["tried"] += 1
            try:
                counts[trec_native_check(data, kind, strict, Path(tmp))] += 1
            except Exception:  # noqa: BLE001 - every other exception is a finding
                counts["crashes"] += 1
                if counts["crashes"] <= 3:
                    print(f"--- case {i} ({kind}, strict={strict}): {data[:400]!r}")
                    traceback.print_exc(limit=3)
    print(f"trec-native: {counts['tried']} inputs, {counts['accepted']} accepted (same columns), "
          f"{counts['rejected']} rejected (InputError), {counts['crashes']} crashes/differences, "
          f"{time.perf_counter() - began:.1f} s")
    return 1 if counts["crashes"] else 0


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
    parser.add_argument("--trec-native", action="store_true",
                        help="differential fuzzing of the compiled TREC reader against the exact "
                             "one (--examples inputs, --seconds at most)")
    parser.add_argument("--seconds", type=float, default=None, help="time limit (--trec-native)")
    args = parser.parse_args(argv)
    if args.trec_native:
        return fuzz_trec_native(args.examples, args.seed or 0, args.seconds)
    if args.readers_cost:
        readers_cost()
        return 0

    from helpers.fuzz_readers import READERS

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
