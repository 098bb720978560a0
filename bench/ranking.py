"""Ranking engine benchmark: one table of shapes, queryeval vs pytrec_eval vs ranx, dicts and files.

    python bench/ranking.py                      # every shape at full size (minutes, GBs)
    python bench/ranking.py --quick              # every shape at 1/10 of the queries
    python bench/ranking.py --scale 0.3 --shapes default,round2 --repeat 3
    python bench/ranking.py --shapes default --steps   # + where the from-files time goes

Shapes (synthetic, seeded; full size): each query retrieves ``depth`` of ``vocab`` documents
with random float scores and has ``judged`` judgements (relevance 0-2 unless said):

    default    100,000 queries x 100 docs, 5 judged
    round2     as default, scores rounded to 2 decimals (ties: BM25, LLM rerankers)
    round1     as default, scores rounded to 1 decimal
    tied       as default, every query fully tied (all scores equal)
    deep       20 queries x 50,000 docs, 100 judged
    wide       1,000,000 queries x 10 docs, 5 judged
    judged1k   10,000 queries x 100 docs, 1,000 judged per query
    graded     100,000 queries x 100 docs, 20 judged, relevance 0-4, scores rounded to 2

Metrics: ndcg@10, recall@100, mrr@10, map@100 (pytrec_eval has no recip_rank cutoff: it
computes recip_rank, same cost). Each shape is timed from dicts (``evaluate`` against
``pytrec_eval.RelevanceEvaluator(...).evaluate`` and ranx's evaluate-only time: ``Qrels``/``Run``
built beforehand, its JIT warmed on a tiny input first) and from TREC files
(``evaluate_files`` against pytrec_eval's ``parse_qrel``/``parse_run`` + evaluate, and ranx's
``from_file`` + evaluate), all in the same process, one shape at a time. ``--scale`` multiplies
the query counts (``--quick`` = 0.1; deep keeps >= 2 queries).

Timings are wall-clock, the best of ``--repeat`` runs (default 1). Peak RSS is how far the
process's high-water mark rose above its RSS before the call (``/proc/self/clear_refs`` resets
the mark before each call; Linux): the call's own peak memory, the inputs already loaded (the
dicts, for the dict rows) not counted. The 1-minute load average is printed per shape:
the box is shared, and figures taken at a load above the core count mean little: ``cpu x`` is
pytrec_eval's process CPU time over ours, steadier under load (ours counts both reader threads,
so on free cores our wall-clock ratio from files is the higher one).

Goals (issue 25): >= 5x pytrec_eval from dicts on every shape; from files >= 20x on the default
shape and >= 10x on every shape; never slower than ranx's evaluate-only time.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

METRICS = ["ndcg@10", "recall@100", "mrr@10", "map@100"]
PYTREC = {"ndcg_cut.10", "recall.100", "recip_rank", "map_cut.100"}
#: ``--trec-measures`` adds these (ours, pytrec_eval's); rbp has no pytrec_eval counterpart.
TREC_EXTRA = (["bpref", "infAP", "Rprec", "set_F", "num_rel_ret", "iprec_at_recall_0.50", "rbp"],
              {"bpref", "infAP", "Rprec", "set_F", "num_rel_ret", "iprec_at_recall"})


@dataclass(frozen=True)
class Shape:
    name: str
    queries: int
    depth: int
    judged: int
    vocab: int
    decimals: int | None = None  # round scores; None: full floats; -1: every score equal
    top_level: int = 2
    min_queries: int = 1


SHAPES = [
    Shape("default", 100_000, 100, 5, 1_000),
    Shape("round2", 100_000, 100, 5, 1_000, decimals=2),
    Shape("round1", 100_000, 100, 5, 1_000, decimals=1),
    Shape("tied", 100_000, 100, 5, 1_000, decimals=-1),
    Shape("deep", 20, 50_000, 100, 200_000, min_queries=2),
    Shape("wide", 1_000_000, 10, 5, 1_000),
    Shape("judged1k", 10_000, 100, 1_000, 5_000),
    Shape("graded", 100_000, 100, 20, 1_000, decimals=2, top_level=4),
]


def make_data(shape: Shape, n_queries: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    docs = np.array([f"d{i}" for i in range(shape.vocab)], dtype=object)
    run, qrels = {}, {}
    for i in range(n_queries):
        got = docs[rng.choice(shape.vocab, shape.depth, replace=False)].tolist()
        s = rng.random(shape.depth)
        if shape.decimals == -1:
            s = np.ones(shape.depth)
        elif shape.decimals is not None:
            s = np.round(s, shape.decimals)
        run[f"q{i}"] = dict(zip(got, s.tolist(), strict=True))
        judged = docs[rng.choice(shape.vocab, shape.judged, replace=False)].tolist()
        levels = rng.integers(0, shape.top_level + 1, shape.judged).tolist()
        qrels[f"q{i}"] = dict(zip(judged, levels, strict=True))
    return qrels, run


def write_files(qrels, run, folder: Path) -> tuple[Path, Path]:
    q, r = folder / "qrels.txt", folder / "run.txt"
    with open(q, "w") as fh:
        for qid, judged in qrels.items():
            fh.write("".join(f"{qid} 0 {d} {g}\n" for d, g in judged.items()))
    with open(r, "w") as fh:
        for qid, ranked in run.items():
            items = sorted(ranked.items(), key=lambda kv: -kv[1])
            fh.write("".join(f"{qid} Q0 {d} {i + 1} {s!r} bench\n"
                             for i, (d, s) in enumerate(items)))
    return q, r


REPEAT = 1
#: Process CPU seconds of the last ``timed`` call (all threads).
LAST_CPU = float("nan")


def _peak_reset() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _peak_mib() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _rss_mib() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def timed(fn):
    """Best wall time of ``REPEAT`` calls, the peak RSS growth (MiB) during them over the RSS
    before each call (the inputs already in memory are not counted), the last result."""
    global LAST_CPU
    best, cpu, peak, out = float("inf"), float("inf"), 0.0, None
    for _ in range(REPEAT):
        out = None
        gc.collect()
        _peak_reset()
        before = _rss_mib()
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
        peak = max(peak, _peak_mib() - before)
    LAST_CPU = cpu
    return best, peak, out


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


@contextmanager
def no_ext():
    """The pure readers (pyarrow, then Python) for the duration: ``QUERYEVAL_NO_EXT=1``."""
    before = os.environ.get("QUERYEVAL_NO_EXT")
    os.environ["QUERYEVAL_NO_EXT"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["QUERYEVAL_NO_EXT"]
        else:
            os.environ["QUERYEVAL_NO_EXT"] = before


def _ndcg(ref) -> float:
    return float(np.mean([v["ndcg_cut_10"] for v in ref.values()]))


def bench_shape(shape: Shape, n_queries: int, use_ranx: bool, steps: bool) -> list[dict]:
    import pytrec_eval

    from queryeval.metrics.ranking import evaluate
    from queryeval.suite.trec import evaluate_files

    qrels, run = make_data(shape, n_queries)
    la = os.getloadavg()[0]
    rows = []
    t_q, m_q, ours = timed(lambda: evaluate(qrels, run, METRICS))
    c_q = LAST_CPU
    t_p, m_p, ref = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(run))
    c_p = LAST_CPU
    assert abs(_ndcg(ref) - ours["ndcg@10"]) < 1e-9, (shape.name, _ndcg(ref), ours["ndcg@10"])
    ref = None
    t_r = m_r = None
    if use_ranx:
        import ranx

        rq, rr = ranx.Qrels(qrels), ranx.Run(run)
        t_r, m_r, _ = timed(lambda: ranx.evaluate(rq, rr, METRICS))
        rq = rr = None
    rows.append(dict(shape=shape.name, input="dicts", q=t_q, p=t_p, r=t_r, mq=m_q, mp=m_p, mr=m_r,
                     load=la, goal=5.0, cq=c_q, cp=c_p))
    with tempfile.TemporaryDirectory() as tmp:
        qpath, rpath = write_files(qrels, run, Path(tmp))
        qrels = run = None
        gc.collect()
        la = os.getloadavg()[0]
        t_q, m_q, ours_f = timed(lambda: evaluate_files(qpath, rpath, METRICS))
        c_q = LAST_CPU
        assert abs(ours_f["ndcg@10"] - ours["ndcg@10"]) < 1e-9

        def _pytrec_files():
            with open(qpath) as fq, open(rpath) as fr:
                q, r = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
            return pytrec_eval.RelevanceEvaluator(q, PYTREC).evaluate(r)

        t_p, m_p, _ = timed(_pytrec_files)
        c_p = LAST_CPU
        t_r = m_r = None
        if use_ranx:

            def _ranx_files():
                return ranx.evaluate(ranx.Qrels.from_file(str(qpath), kind="trec"),
                                     ranx.Run.from_file(str(rpath), kind="trec"), METRICS)

            t_r, m_r, _ = timed(_ranx_files)
        rows.append(dict(shape=shape.name, input="files", q=t_q, p=t_p, r=t_r, mq=m_q, mp=m_p,
                         mr=m_r, load=la, goal=20.0 if shape.name == "default" else 10.0,
                         cq=c_q, cp=c_p))
        if steps:
            step_table(qpath, rpath)
    return rows


def step_table(qpath: Path, rpath: Path) -> None:
    """Where the from-files time goes, ours and pytrec_eval's."""
    import pytrec_eval

    from queryeval.metrics.ranking import arrays_from_columns, evaluate_arrays
    from queryeval.suite import trec

    held: dict = {}
    reader = (f"compiled, {trec.reader_threads()} threads" if trec.native_reader() is not None
              else "pyarrow CSV")

    def read_r_pure():
        with no_ext():
            trec.read_run_columns(rpath)

    def parse():
        with open(qpath) as fq, open(rpath) as fr:
            held["pq"], held["pr"] = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)

    steps = [
        ("queryeval", f"read qrels ({reader})",
         lambda: held.__setitem__("q", trec.read_qrels_columns(qpath))),
        ("queryeval", f"read run ({reader})",
         lambda: held.__setitem__("r", trec.read_run_columns(rpath))),
        ("queryeval", "read run (pyarrow CSV, QUERYEVAL_NO_EXT)", read_r_pure),
        ("queryeval", "build arrays (pairs, look-ups)",
         lambda: held.__setitem__("a", arrays_from_columns(
             held["q"], held["r"], trec._doc_mapping(held["q"], held["r"])))),
        ("queryeval", f"evaluate {len(METRICS)} metrics", lambda: evaluate_arrays(held["a"], METRICS)),
        ("pytrec_eval", "parse_qrel + parse_run", parse),
        ("pytrec_eval", f"evaluate {len(METRICS)} metrics",
         lambda: pytrec_eval.RelevanceEvaluator(held["pq"], PYTREC).evaluate(held["pr"])),
    ]
    print(f"\n  per step, from files ({load()}):")
    print(f"  {'tool':12} {'step':42} {'wall s':>8} {'cpu s':>8}")
    for tool, name, fn in steps:
        wall, _, _ = timed(fn)
        print(f"  {tool:12} {name:42} {wall:8.3f} {LAST_CPU:8.3f}")


def _fmt(t: float | None, width: int = 8) -> str:
    return f"{t:{width}.2f}" if t is not None else f"{'-':>{width}}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:6.1f}x" if a is not None and b else f"{'-':>7}"


def print_table(rows: list[dict]) -> None:
    print(f"\n{'shape':9} {'input':5} {'load':>5} {'queryeval':>9} {'pytrec':>8} {'ranx':>8} "
          f"{'vs pytrec':>9} {'goal':>5} {'cpu x':>6} {'vs ranx':>8} {'peak +MiB q/p/r':>18}  verdict")
    for r in rows:
        vs_p = r["p"] / r["q"]
        met = vs_p >= r["goal"] and (r["r"] is None or r["input"] == "files"
                                     or r["r"] >= r["q"])
        rss = "/".join("-" if r[k] is None else f"{r[k]:.0f}" for k in ("mq", "mp", "mr"))
        print(f"{r['shape']:9} {r['input']:5} {r['load']:5.1f} {r['q']:9.2f} {_fmt(r['p'])} "
              f"{_fmt(r['r'])} {vs_p:8.1f}x {r['goal']:4.0f}x {r['cp'] / r['cq']:5.1f}x "
              f"{_ratio(r['r'], r['q']):>8} "
              f"{rss:>18}  {'met' if met else 'NOT met'}")


def main() -> None:
    global REPEAT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every query count")
    ap.add_argument("--quick", action="store_true", help="--scale 0.1 (a few minutes)")
    ap.add_argument("--shapes", default=",".join(s.name for s in SHAPES),
                    help="comma-separated subset of: " + ", ".join(s.name for s in SHAPES))
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs for every timing")
    ap.add_argument("--no-ranx", action="store_true", help="skip ranx (its JIT takes ~20 s)")
    ap.add_argument("--steps", action="store_true", help="per-step table of the files path")
    ap.add_argument("--trec-measures", action="store_true",
                    help="also bpref, infAP, Rprec, set_F, num_rel_ret, iprec_at_recall, rbp "
                    "(both tools; ranx skipped)")
    args = ap.parse_args()
    if args.trec_measures:
        METRICS.extend(TREC_EXTRA[0])
        PYTREC.update(TREC_EXTRA[1])
        args.no_ranx = True
    REPEAT = max(args.repeat, 1)
    scale = 0.1 if args.quick else args.scale
    wanted = [s.strip() for s in args.shapes.split(",") if s.strip()]
    by_name = {s.name: s for s in SHAPES}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        ap.error(f"unknown shape(s): {', '.join(unknown)}")

    import pyarrow.csv  # noqa: F401  (imported before timing, like pytrec_eval)
    import pytrec_eval  # noqa: F401

    from queryeval.metrics.ranking import evaluate
    from queryeval.suite.trec_readers import native_reader, reader_threads

    # Warm every tool once on a small tied input (imports, Arrow kernels, ranx's JIT).
    small_q, small_r = make_data(SHAPES[3], 200)
    evaluate(small_q, small_r, METRICS)
    use_ranx = not args.no_ranx
    if use_ranx:
        import ranx

        for _ in range(2):
            ranx.evaluate(ranx.Qrels(small_q), ranx.Run(small_r), METRICS)
    print(f"scale {scale:g}; metrics {', '.join(METRICS)}; best of {REPEAT}; TREC reader: "
          + (f"compiled, {reader_threads()} threads" if native_reader() is not None
             else "pure (pyarrow CSV)"))
    print(f"start: {load()}")
    rows: list[dict] = []
    for name in wanted:
        shape = by_name[name]
        n = max(shape.min_queries, int(round(shape.queries * scale)))
        print(f"{name}: {n:,} queries x {shape.depth:,} docs, {shape.judged:,} judged ...",
              flush=True)
        rows.extend(bench_shape(shape, n, use_ranx, args.steps))
    print_table(rows)
    print(f"end: {load()}")
    print("goals: >= 5x pytrec_eval from dicts on every shape; from files >= 20x on default, "
          ">= 10x elsewhere; dicts never slower than ranx's evaluate-only time (vs ranx >= 1x)")


if __name__ == "__main__":
    main()
