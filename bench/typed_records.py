"""Typed records at speed: reading N result records as dicts (what the runner does) against
validating them with the run log's pydantic models (queryeval.run.logmodel).

Runs two shipped examples once (retrieval with its built-in BM25 at k=1,3, and term selection
from recorded responses), repeats their records to N lines (case ids made unique) and times,
in this process, on the same lines:

    dicts            RecordStream's parse: io.numbers.read_json per line (the anchor)
    +validate        the dicts, then logmodel.validate_records (TypeAdapter.validate_python
                     over the batch's records, one call)
    validate_json    the model's model_validate_json per line (no dict first)
    bulk json        TypeAdapter(list[Model]).validate_json over the lines joined as one array
    encode dicts     run.log.dumps per record (what the runner writes)
    dump typed       TypeAdapter(list[Model]).dump_json of the typed records

Each figure is the best of ``--repeat`` passes, in microseconds a record and as a ratio to
``dicts`` (or to ``encode dicts``) measured in the same run.

    python bench/typed_records.py                  # 50,000 records a kind
    python bench/typed_records.py --n 200000 --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def example_records(out: Path) -> dict[str, list[dict]]:
    from queryeval.cli.app import main

    runs = {
        "retrieval": [str(EXAMPLES / "retrieval" / "questions.csv"), "--corpus",
                      str(EXAMPLES / "retrieval" / "corpus.jsonl"), "--k", "1,3"],
        "indicator_selection": [str(EXAMPLES / "sdmx" / "suite"), "--responses",
                                str(EXAMPLES / "sdmx" / "responses.jsonl")],
    }
    records = {}
    for task, args in runs.items():
        folder = out / task
        with contextlib.redirect_stdout(io.StringIO()):  # the run's "run log:" lines
            code = main(["run", *args, "--out", str(folder), "-q", "--no-report"])
        if code != 0:
            raise SystemExit(f"the {task} example failed")
        batch = next(p for p in folder.rglob("batch_*.json")
                     if "derived_from" not in json.loads(p.read_text()))
        results = batch.with_name(batch.name.replace("batch_", "results_") + "l")
        records[task] = [json.loads(x) for x in results.read_text().splitlines() if x.strip()]
    return records


def lines_of(records: list[dict], n: int) -> list[bytes]:
    from queryeval.run.log import dumps

    out = []
    for i in range(n):
        rec = records[i % len(records)]
        out.append(dumps({**rec, "case_id": f"q{i}"}).encode())
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(task: str, lines: list[bytes], repeat: int) -> list[tuple[str, float]]:
    from pydantic import TypeAdapter

    from queryeval.io.numbers import read_json
    from queryeval.run.log import dumps
    from queryeval.run.logmodel import record_model, validate_records

    model = record_model(task)
    bulk = TypeAdapter(list[model])  # type: ignore[valid-type]
    joined = b"[" + b",".join(lines) + b"]"
    dicts = [read_json(x, finite=False) for x in lines]
    typed = validate_records(task, dicts)
    assert [r.scores for r in typed] == [d["scores"] for d in dicts]
    n = len(lines)
    rows = [
        ("dicts", best(lambda: [read_json(x, finite=False) for x in lines], repeat)),
        ("+validate", best(lambda: validate_records(task, [read_json(x, finite=False)
                                                           for x in lines]), repeat)),
        ("validate_json", best(lambda: [model.model_validate_json(x) for x in lines], repeat)),
        ("bulk json", best(lambda: bulk.validate_json(joined), repeat)),
        ("encode dicts", best(lambda: [dumps(d) for d in dicts], repeat)),
        ("dump typed", best(lambda: bulk.dump_json(typed), repeat)),
    ]
    return [(name, t / n * 1e6) for name, t in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000, help="records a kind (default 50,000)")
    parser.add_argument("--repeat", type=int, default=3, help="passes; the best is kept")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        records = example_records(Path(tmp))
    for task, recs in records.items():
        lines = lines_of(recs, args.n)
        size = sum(len(x) + 1 for x in lines)
        print(f"{task}: {args.n:,} records, {size / args.n:,.0f} bytes a line")
        rows = measure(task, lines, args.repeat)
        per = dict(rows)
        for name, us in rows:
            anchor = per["encode dicts"] if name in ("encode dicts", "dump typed") else per["dicts"]
            print(f"  {name:14s} {us:8.1f} µs/record  {us / anchor:5.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
