"""Kill-and-resume soak: for each task kind, ``kill -9`` a ``queryeval run`` at random points,
``queryeval run --resume`` until it finishes, and compare with an uninterrupted run.

Suites are the shipped examples scaled up in a temporary folder (cases replicated with new
ids, their recorded outputs too), each run by fast systems so the soak stays quick:

* indicator_selection: examples/sdmx (23 cases, 2 multi-turn) and its recorded responses;
* answers: generated DABench-style cases (``@name[value]`` labels) and recorded responses,
  some right, some wrong, some missing;
* retrieval: examples/retrieval questions (an ``id`` column added) with its recorded
  rankings, ``--k 1,3,5`` so every run also writes two derived batches (k=1, k=3);
* query: examples/sparql cases over building.ttl with the recorded predictions, executed by
  the embedded SPARQL store;
* fields: examples/fields questions with the built-in BM25 retriever over ingredients.csv.

Each kill lands at a uniformly random time within the uninterrupted run's duration, so it
may hit start-up, the appends or the final writes (metrics, CSV, derived batches). A kill
before the batch file exists means there is nothing to resume: the run is started again
(counted as a restart). After ``--kills`` kills of a kind the last resume runs to the end.

Checks per kind: the final ``metrics_<id>.json`` (overall and group figures) equal the
uninterrupted run's exactly, except timing figures (keys ending in ``_ms``), which measure the
machine; every case is exactly once in the results JSONL; for retrieval, each derived batch
equals its reference and no extra derived batch was left behind.

    python bench/soak.py                        # 1,000+ cases per kind, 5 kills per kind
    python bench/soak.py --cases 2000 --kills 8 --kinds retrieval,query
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
KINDS = ("indicator_selection", "answers", "retrieval", "query", "fields")


# --- scaled-up suites --------------------------------------------------------------------------
def _copies(n_cases: int, per_copy: int) -> int:
    return -(-n_cases // per_copy)


def _yaml_docs(paths: list[Path]) -> list[dict]:
    docs: list[dict] = []
    for p in paths:
        docs += [d for d in yaml.safe_load_all(p.read_text(encoding="utf-8")) if d]
    return docs


def _write_docs(path: Path, docs: list[dict]) -> None:
    path.write_text("".join("---\n" + json.dumps(d) + "\n" for d in docs), encoding="utf-8")


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def build_selection(folder: Path, n: int) -> list[str]:
    docs = _yaml_docs(sorted((EXAMPLES / "sdmx" / "suite").glob("*.yaml")))
    lines = [json.loads(x) for x in (EXAMPLES / "sdmx" / "responses.jsonl").read_text().splitlines()]
    out_docs, out_lines = [], []
    for k in range(_copies(n, len(docs))):
        out_docs += [{**d, "id": f"{d['id']}~{k}"} for d in docs]
        out_lines += [{**x, "case_id": f"{x['case_id']}~{k}"} for x in lines]
    _write_docs(folder / "suite.yaml", out_docs)
    _write_jsonl(folder / "responses.jsonl", out_lines)
    return [str(folder / "suite.yaml"), "--responses", str(folder / "responses.jsonl")]


def build_answers(folder: Path, n: int) -> list[str]:
    rng = random.Random(1)  # noqa: S311 - reproducible data
    docs, lines = [], []
    for i in range(n):
        names = [f"v{j}" for j in range(rng.randint(1, 3))]
        values = {name: f"{rng.uniform(-100, 100):.3f}" for name in names}
        docs.append({
            "id": f"a{i:05d}",
            "metadata": {"concepts": [rng.choice(["Summary Statistics", "Correlation Analysis",
                                                  "Outlier Detection"])],
                         "level": rng.choice(["easy", "medium", "hard"]),
                         "format": " ".join(f"@{m}[x]" for m in names), "file_name": f"t{i % 9}.csv"},
            "conversation": [{"role": "user", "content": f"question {i}?",
                              "target": {"answers": values}}],
        })
        roll = rng.random()
        if roll < 0.1:
            response = None
        else:
            parts = [f"@{m}[{v if rng.random() < 0.7 else 'wrong'}]" for m, v in values.items()]
            response = "The answers are " + " ".join(parts)
        lines.append({"id": f"a{i:05d}", "response": response})
    _write_docs(folder / "suite.yaml", docs)
    _write_jsonl(folder / "responses.jsonl", lines)
    return [str(folder / "suite.yaml"), "--responses", str(folder / "responses.jsonl")]


def build_retrieval(folder: Path, n: int) -> list[str]:
    from queryeval.suite.retrieval import qa_pair_id

    src = EXAMPLES / "retrieval"
    with open(src / "questions.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    by_id = {json.loads(x)["qa_pair_id"]: json.loads(x)
             for x in (src / "responses.jsonl").read_text(encoding="utf-8").splitlines()}
    out_rows, out_lines = [], []
    for k in range(_copies(n, len(rows))):
        for r in rows:
            orig = qa_pair_id(r["dataset"], r["question"], r["answer"])
            new = f"{orig}~{k}"
            out_rows.append({**r, "id": new})
            if orig in by_id:
                out_lines.append({**by_id[orig], "qa_pair_id": new})
    with open(folder / "questions.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(out_rows[0]))
        w.writeheader()
        w.writerows(out_rows)
    _write_jsonl(folder / "responses.jsonl", out_lines)
    return [str(folder / "questions.csv"), "--responses", str(folder / "responses.jsonl"),
            "--corpus", str(src / "corpus.jsonl"), "--k", "1,3,5"]


def build_query(folder: Path, n: int) -> list[str]:
    src = EXAMPLES / "sparql"
    shutil.copy(src / "building.ttl", folder / "building.ttl")
    docs = _yaml_docs([src / "suite.yaml"])
    lines = [json.loads(x) for x in (src / "predictions.jsonl").read_text().splitlines()]
    out_docs, out_lines = [], []
    for k in range(_copies(n, len(docs))):
        out_docs += [{**d, "id": f"{d['id']}~{k}"} for d in docs]
        out_lines += [{**x, "case_id": f"{x['case_id']}~{k}"} for x in lines]
    _write_docs(folder / "suite.yaml", out_docs)
    _write_jsonl(folder / "predictions.jsonl", out_lines)
    return [str(folder / "suite.yaml"), "--responses", str(folder / "predictions.jsonl")]


def build_fields(folder: Path, n: int) -> list[str]:
    src = EXAMPLES / "fields"
    with open(src / "evaluation.csv", newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    out = [r for _ in range(_copies(n, len(rows))) for r in rows]
    with open(folder / "evaluation.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(out)
    return [str(folder / "evaluation.csv"), "--data", str(src / "ingredients.csv"), "--model", "bm25",
            "--n", "item=5", "--n", "price_type=3", "--n", "category=3"]


BUILDERS = {"indicator_selection": build_selection, "answers": build_answers,
            "retrieval": build_retrieval, "query": build_query, "fields": build_fields}


# --- running, killing, resuming ------------------------------------------------------------------
def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "queryeval", *args]


def run_to_end(argv: list[str], *, timeout: float = 600) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def _lines(out: Path) -> int:
    """Lines in the run's results so far (derived batches, written last, never exceed it)."""
    best = 0
    for p in out.rglob("results_*.jsonl"):
        try:
            best = max(best, p.read_bytes().count(b"\n"))
        except OSError:  # replaced under us
            pass
    return best


def run_killed(argv: list[str], out: Path, n: int, mode: str, rng: random.Random,
               ref_seconds: float) -> bool:
    """Start ``argv`` and SIGKILL it: at a random time (``time``), when the results reach a
    random line count (``progress``), or a moment after the last line (``finish``, while
    metrics and derived batches are written). Returns False when it finished first."""
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.perf_counter() + (rng.uniform(0, ref_seconds) if mode == "time" else 600)
    target = rng.randint(min(_lines(out) + 1, n), n) if mode == "progress" else n
    while proc.poll() is None and time.perf_counter() < deadline:
        if mode != "time" and _lines(out) >= target:
            if mode == "finish":
                time.sleep(rng.uniform(0, 0.3))
            break
        time.sleep(0.002)
    if proc.poll() is None:
        proc.kill()  # SIGKILL
        proc.wait()
        return True
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): "
                           f"{proc.stderr.read().decode()[-2000:]}")
    return False


def batches(out: Path) -> tuple[Path, list[Path]]:
    """The run's own batch file and its derived batches' files."""
    own, derived = [], []
    for p in out.rglob("batch_*.json"):
        (derived if "derived_from" in json.loads(p.read_text(encoding="utf-8")) else own).append(p)
    if len(own) != 1:
        raise RuntimeError(f"{out}: expected one run batch, found {len(own)}")
    return own[0], sorted(derived)


def _strip_timing(obj):
    if isinstance(obj, dict):
        return {k: _strip_timing(v) for k, v in obj.items() if not k.endswith("_ms")}
    if isinstance(obj, list):
        return [_strip_timing(v) for v in obj]
    return obj


def _batch_view(batch: Path) -> dict:
    bid = batch.stem.removeprefix("batch_")
    doc = json.loads((batch.parent / f"metrics_{bid}.json").read_text(encoding="utf-8"))
    lines = (batch.parent / f"results_{bid}.jsonl").read_text(encoding="utf-8").splitlines()
    ids = Counter(json.loads(x)["case_id"] for x in lines)
    info = json.loads(batch.read_text(encoding="utf-8"))
    return {"metrics": _strip_timing({k: doc[k] for k in ("overall_metrics", "group_metrics")}),
            "ids": ids, "status": info["status"],
            "k": info.get("evaluation_config", {}).get("task_options", {}).get("k")}


def compare(ref_out: Path, out: Path, expected_ids: set[str]) -> dict:
    ref_batch, ref_derived = batches(ref_out)
    batch, derived = batches(out)
    ref, got = _batch_view(ref_batch), _batch_view(batch)
    duplicates = sum(c - 1 for c in got["ids"].values())
    lost = len(expected_ids - set(got["ids"]))
    equal = got["metrics"] == ref["metrics"] and got["status"] == "complete"
    derived_ok = len(derived) == len(ref_derived)
    ref_by_k = {str(v["k"]): v for v in map(_batch_view, ref_derived)}
    for d in map(_batch_view, derived):
        r = ref_by_k.get(str(d["k"]))
        derived_ok &= (r is not None and d["metrics"] == r["metrics"] and d["status"] == "complete"
                       and set(d["ids"]) == expected_ids and max(d["ids"].values()) == 1)
    return {"equal": equal, "duplicates": duplicates, "lost": lost,
            "derived": f"{len(derived)} {'ok' if derived_ok else 'WRONG'}" if ref_derived else "-",
            "derived_ok": derived_ok}


def suite_ids(args: list[str]) -> set[str]:
    from queryeval.suite.loader import load_suite

    return {c.id for c in load_suite(args[0]).cases}


def soak_kind(kind: str, tmp: Path, n: int, kills: int, rng: random.Random,
              concurrency: int = 2, modes_plan: list[str] | None = None) -> dict:
    """Soak one kind; ``modes_plan`` fixes the kill points in order (default: random)."""
    folder = tmp / kind
    folder.mkdir(parents=True)
    args = BUILDERS[kind](folder, n)
    common = ["-q", "--no-report", "-c", str(concurrency)]
    ref_out = folder / "ref"
    ref_seconds = run_to_end(_cli("run", *args, "--out", str(ref_out), *common))
    ids = suite_ids(args)
    modes: Counter[str] = Counter()
    done_kills = resumes = restarts = 0
    results = []
    while done_kills < kills:  # a round: one run killed and resumed until it completes
        out = folder / f"soak{len(results)}"
        while True:
            started = any(out.rglob("batch_*.json"))
            argv = (_cli("run", "--resume", str(out), "-q") if started
                    else _cli("run", *args, "--out", str(out), *common))
            if started:
                resumes += 1
            elif out.exists():
                restarts += 1
            if done_kills >= kills:
                run_to_end(argv)
                break
            mode = (modes_plan[done_kills] if modes_plan
                    else rng.choices(["time", "progress", "finish"], weights=[2, 6, 2])[0])
            if not run_killed(argv, out, len(ids), mode, rng, ref_seconds):
                break  # it finished before the kill: this round is complete
            done_kills += 1
            modes[mode] += 1
        results.append(compare(ref_out, out, ids))
    derived = {r["derived"] for r in results}
    return {"kind": kind, "cases": len(ids), "rounds": len(results), "kills": done_kills,
            "resumes": resumes, "restarts": restarts, "ref_seconds": ref_seconds,
            "modes": dict(modes), "equal": all(r["equal"] for r in results),
            "duplicates": sum(r["duplicates"] for r in results),
            "lost": sum(r["lost"] for r in results),
            "derived_ok": all(r["derived_ok"] for r in results),
            "derived": derived.pop() if len(derived) == 1 else "WRONG"}


def print_table(rows: list[dict]) -> None:
    print(f"{'kind':<20}{'cases':>7}{'rounds':>8}{'kills':>7}{'resumes':>9}{'restarts':>10}{'equal metrics':>15}"
          f"{'duplicates':>12}{'lost':>6}  derived batches")
    for r in rows:
        print(f"{r['kind']:<20}{r['cases']:>7}{r['rounds']:>8}{r['kills']:>7}{r['resumes']:>9}{r['restarts']:>10}"
              f"{'yes' if r['equal'] else 'NO':>15}{r['duplicates']:>12}{r['lost']:>6}  {r['derived']}")
    print(f"total kills: {sum(r['kills'] for r in rows)}; kill points: "
          + ", ".join(f"{r['kind']} {r['modes']}" for r in rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000, help="at least this many cases per kind")
    ap.add_argument("--kills", type=int, default=5, help="kills per kind")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seed", type=int, default=9)
    args = ap.parse_args()
    rng = random.Random(args.seed)  # noqa: S311 - reproducible kill times
    rows = []
    with tempfile.TemporaryDirectory(prefix="queryeval-soak-") as tmp:
        for kind in args.kinds.split(","):
            rows.append(soak_kind(kind, Path(tmp), args.cases, args.kills, rng))
            print(f"{kind}: done ({rows[-1]['ref_seconds']:.1f} s uninterrupted)", file=sys.stderr)
    print_table(rows)
    bad = [r for r in rows if not r["equal"] or r["duplicates"] or r["lost"] or not r["derived_ok"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
