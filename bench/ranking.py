"""Ranking engine benchmark: queryeval vs pytrec_eval vs ranx, from dicts and from TREC files.

    python bench/ranking.py                 # 100k queries x 100 docs
    python bench/ranking.py --queries 10000

Synthetic, seeded: each query retrieves 100 of 1,000 documents with random float scores and
has 5 judgements (relevance 0-2). Metrics: ndcg@10, recall@100, mrr@10, map@100. pytrec_eval
has no recip_rank cutoff, so it computes recip_rank in place of mrr@10 (same cost).
Goals: >= 5x pytrec_eval from dicts, >= 20x from files.

From files, queryeval is timed twice in the same run: with its compiled reader (the C
extension ``queryeval._trecread``, built by ``pip install``) and with the pure readers
(``QUERYEVAL_NO_EXT=1``: pyarrow's CSV reader), each against the same pytrec_eval timing.

Timings are wall-clock (``time.perf_counter``), the best of ``--repeat`` runs (default 1),
with process CPU time beside where it helps read a loaded machine: the load average is
printed before and after, and figures taken at a load above the core count mean little.
pyarrow is imported before timing (as pytrec_eval is). ``--steps`` adds a per-step table of
the from-files path, ours (read qrels, read run, build arrays, evaluate) and pytrec_eval's
(parse_qrel + parse_run, evaluate).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

METRICS = ["ndcg@10", "recall@100", "mrr@10", "map@100"]
PYTREC = {"ndcg_cut.10", "recall.100", "recip_rank", "map_cut.100"}
#: ``--trec-measures`` adds these (ours, pytrec_eval's); rbp has no pytrec_eval counterpart.
TREC_EXTRA = (["bpref", "infAP", "Rprec", "set_F", "num_rel_ret", "iprec_at_recall_0.50", "rbp"],
              {"bpref", "infAP", "Rprec", "set_F", "num_rel_ret", "iprec_at_recall"})


def make_data(n_queries: int, depth: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(1000)]
    scores = rng.random((n_queries, depth)).tolist()
    run, qrels = {}, {}
    for i in range(n_queries):
        got = rng.choice(1000, depth, replace=False).tolist()
        run[f"q{i}"] = {docs[j]: s for j, s in zip(got, scores[i], strict=False)}
        judged = rng.choice(1000, 5, replace=False).tolist()
        qrels[f"q{i}"] = {docs[j]: int(g) for j, g in zip(judged, rng.integers(0, 3, 5).tolist(), strict=False)}
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


def timed(fn):
    """Best wall time of ``REPEAT`` calls, and the result of the last one."""
    best = float("inf")
    for _ in range(REPEAT):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def timed_cpu(fn) -> tuple[float, float]:
    """Best wall and best process CPU seconds of ``REPEAT`` calls."""
    wall = cpu = float("inf")
    for _ in range(REPEAT):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu


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


def step_table(qpath: Path, rpath: Path) -> None:
    """Where the from-files time goes, ours and pytrec_eval's."""
    import pytrec_eval

    from queryeval.metrics.ranking import arrays_from_columns, evaluate_arrays
    from queryeval.suite import trec

    held: dict = {}
    compiled = trec.native_reader() is not None
    threads = trec.reader_threads()

    def read_q():
        held["q"] = trec.read_qrels_columns(qpath)

    def read_r():
        held["r"] = trec.read_run_columns(rpath)

    def read_r_pure():
        with no_ext():
            trec.read_run_columns(rpath)

    def build():
        q, r = held["q"], held["r"]
        held["a"] = arrays_from_columns(q, r, trec._doc_mapping(q, r))

    def parse():
        with open(qpath) as fq, open(rpath) as fr:
            held["pq"], held["pr"] = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)

    reader = f"compiled, {threads} threads" if compiled else "pyarrow CSV"
    steps = [
        ("queryeval", f"read qrels ({reader})", read_q),
        ("queryeval", f"read run ({reader})", read_r),
        ("queryeval", "read run (pyarrow CSV, QUERYEVAL_NO_EXT)", read_r_pure),
        ("queryeval", "build arrays (pairs, look-ups)", build),
        ("queryeval", "evaluate 4 metrics", lambda: evaluate_arrays(held["a"], METRICS)),
        ("pytrec_eval", "parse_qrel + parse_run", parse),
        ("pytrec_eval", "evaluate 4 metrics",
         lambda: pytrec_eval.RelevanceEvaluator(held["pq"], PYTREC).evaluate(held["pr"])),
    ]
    print(f"\nper step, from files ({load()}):")
    print(f"{'tool':12} {'step':42} {'wall s':>8} {'cpu s':>8}")
    for tool, name, fn in steps:
        wall, cpu = timed_cpu(fn)
        print(f"{tool:12} {name:42} {wall:8.3f} {cpu:8.3f}")


def main() -> None:
    global REPEAT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs for every timing")
    ap.add_argument("--no-ranx", action="store_true", help="skip ranx (its JIT takes ~20 s)")
    ap.add_argument("--steps", action="store_true", help="per-step table of the files path")
    ap.add_argument("--files-only", action="store_true",
                    help="only the from-files comparison (shorter: less exposed to load)")
    ap.add_argument("--trec-measures", action="store_true",
                    help="also bpref, infAP, Rprec, set_F, num_rel_ret, iprec_at_recall, rbp "
                    "(both tools; ranx skipped)")
    args = ap.parse_args()
    REPEAT = max(args.repeat, 1)
    if args.trec_measures:
        METRICS.extend(TREC_EXTRA[0])
        PYTREC.update(TREC_EXTRA[1])
        args.no_ranx = True

    import pyarrow.csv  # noqa: F401  (imported before timing, like pytrec_eval)

    from queryeval.metrics.ranking import evaluate
    from queryeval.suite.trec import evaluate_files, native_reader, reader_threads

    print(f"{args.queries:,} queries x {args.depth} docs; metrics {', '.join(METRICS)}; "
          f"best of {REPEAT}")
    compiled = native_reader() is not None
    print("TREC reader: " + (f"compiled (queryeval._trecread), {reader_threads()} threads"
                             if compiled else "pure (pyarrow CSV): the C extension is not built "
                             "or QUERYEVAL_NO_EXT is set"))
    print(f"start: {load()}")
    qrels, run = make_data(args.queries, args.depth)
    rows: list[tuple[str, str, float]] = []

    import pytrec_eval

    t_ours = t_py = None
    if not args.files_only:
        t_ours, ours = timed(lambda: evaluate(qrels, run, METRICS))
        rows.append(("dicts", "queryeval", t_ours))
        t_py, ref = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(run))
        rows.append(("dicts", "pytrec_eval", t_py))
        ndcg = float(np.mean([v["ndcg_cut_10"] for v in ref.values()]))
        assert abs(ndcg - ours["ndcg@10"]) < 1e-9, (ndcg, ours["ndcg@10"])
    if not args.no_ranx and not args.files_only:
        import ranx

        def _ranx():
            return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), METRICS)

        t1, _ = timed(_ranx)
        t2, _ = timed(_ranx)
        rows.append(("dicts", "ranx (1st call, incl. JIT)", t1))
        rows.append(("dicts", "ranx (2nd call, no JIT)", t2))

    with tempfile.TemporaryDirectory() as tmp:
        qpath, rpath = write_files(qrels, run, Path(tmp))
        qrels = run = ref = None  # free the dicts (GBs) before the from-files timings
        t_f, ours_f = timed(lambda: evaluate_files(qpath, rpath, METRICS))
        rows.append(("files", "queryeval", t_f))
        if t_ours is not None:
            assert abs(ours_f["ndcg@10"] - ours["ndcg@10"]) < 1e-9
        t_fp = None
        if compiled:
            with no_ext():
                t_fp, pure_f = timed(lambda: evaluate_files(qpath, rpath, METRICS))
            rows.append(("files", "queryeval, pure readers (QUERYEVAL_NO_EXT=1)", t_fp))
            assert dict(pure_f) == dict(ours_f), (dict(pure_f), dict(ours_f))

        def _pytrec_files():
            with open(qpath) as fq, open(rpath) as fr:
                q, r = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
            return pytrec_eval.RelevanceEvaluator(q, PYTREC).evaluate(r)

        t_pf, _ = timed(_pytrec_files)
        rows.append(("files", "pytrec_eval (parse_qrel/parse_run)", t_pf))
        if not args.no_ranx and not args.files_only:  # ranx's JIT is warm by now

            def _ranx_files():
                return ranx.evaluate(ranx.Qrels.from_file(str(qpath), kind="trec"),
                                     ranx.Run.from_file(str(rpath), kind="trec"), METRICS)

            t_rf, _ = timed(_ranx_files)
            rows.append(("files", "ranx (JIT already warm)", t_rf))
        if args.steps:
            step_table(qpath, rpath)

    base = {src: t for src, name, t in rows if name == "queryeval"}
    print(f"\n{'input':6} {'tool':46} {'seconds':>9} {'x queryeval':>12}")
    for src, name, t in rows:
        print(f"{src:6} {name:46} {t:9.2f} {t / base[src]:12.1f}")
    print(f"end: {load()}")
    if t_ours is not None:
        print(f"speed-up vs pytrec_eval from dicts: {t_py / t_ours:.1f}x (goal 5x)")
    which = "compiled reader" if compiled else "pure readers"
    print(f"speed-up vs pytrec_eval from files ({which}): {t_pf / t_f:.1f}x (goal 20x): "
          f"queryeval {t_f:.2f} s, pytrec_eval {t_pf:.2f} s")
    if t_fp is not None:
        print(f"speed-up vs pytrec_eval from files (pure readers): {t_pf / t_fp:.1f}x: "
              f"queryeval {t_fp:.2f} s")


if __name__ == "__main__":
    main()
