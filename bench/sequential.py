"""Calls saved by ``--stop-when-decided`` against a fixed-n run of the same power.

    PYTHONPATH=src python bench/sequential.py [--baseline 0.5] [--runs 200] [--alpha 0.05]

For each true effect D (5, 10 and 20 points): a baseline that passes a case with chance P and
a system that passes with chance P + D, independently per case, paired on the same cases
(discordance ψ = P(1 − P − D) + (1 − P)(P + D)). The fixed n is ``queryeval plan --baseline P
--effect D --discordance ψ`` (McNemar's sample size at 80% power, report/planning.py). The
sequential run (run/confseq.py, the confidence sequence a run uses, its default grid) is
simulated ``--runs`` times up to 6 × n; its cap N is the smallest suite size at which 80% of
the runs have decided "better" (the same power), a run still undecided at N uses N cases.
Printed per effect: n, N, the median cases a sequential run calls, and the median share of
calls saved against n (1 − cases / n; negative: more calls than the fixed run), with the
share of runs that decided "worse" (wrong; at most alpha); then the same runs on a suite of
just n cases: the share that decide "better" within n (power@n) and the median share of
the n calls they save (saved@n).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from queryeval.report.planning import paired_cases  # noqa: E402
from queryeval.run.confseq import GRID, simulate_stops  # noqa: E402


def one_effect(p: float, d: float, *, runs: int, alpha: float, seed: int, points: int) -> dict:
    psi = p * (1 - p - d) + (1 - p) * (p + d)
    n_fixed = math.ceil(paired_cases(d, psi, alpha=alpha, power=0.8))
    horizon = 6 * n_fixed
    rng = np.random.default_rng(seed)
    a = rng.random((runs, horizon)) < p
    b = rng.random((runs, horizon)) < p + d
    decision, used = simulate_stops(b.astype(float) - a, alpha, points=points)
    better_at = np.where(decision == 0, used, np.iinfo(np.int64).max)
    cap = int(np.sort(better_at)[math.ceil(0.8 * runs) - 1])  # 80% decided better by N
    cap = min(cap, horizon)
    calls = np.minimum(used, cap)
    return {"effect": d, "discordance": psi, "fixed_n": n_fixed, "cap": cap,
            "median_cases": float(np.median(calls)),
            "median_saved": float(np.median(1 - calls / n_fixed)),
            "wrong": float((decision == 1).mean()), "decided_better": float((decision == 0).mean()),
            # the same sequences on a suite of just n cases: its power and what it saves
            "power_at_n": float((better_at <= n_fixed).mean()),
            "saved_at_n": float(np.median(1 - np.minimum(used, n_fixed) / n_fixed))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=float, default=0.5)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--points", type=int, default=GRID, help="grid points of the sequence")
    args = ap.parse_args(argv)
    print(f"baseline pass rate {args.baseline:g}, alpha {args.alpha:g}, power 0.8, "
          f"{args.runs} simulated runs per effect, grid {args.points}")
    print(f"{'effect':>7} {'fixed n':>8} {'seq. cap':>8} {'median cases':>13} "
          f"{'median saved':>13} {'wrong':>6} {'power@n':>8} {'saved@n':>8}  seconds")
    for d in (0.05, 0.10, 0.20):
        t0 = time.perf_counter()
        r = one_effect(args.baseline, d, runs=args.runs, alpha=args.alpha, seed=args.seed,
                       points=args.points)
        print(f"{d:>+7.2f} {r['fixed_n']:>8} {r['cap']:>8} {r['median_cases']:>13.0f} "
              f"{r['median_saved']:>13.1%} {r['wrong']:>6.3f} {r['power_at_n']:>8.0%} "
              f"{r['saved_at_n']:>8.1%}  {time.perf_counter() - t0:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
