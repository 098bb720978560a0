"""Statistics of a run with ``--repeats N``: each case called N times.

Per case (over its N attempts): the mean and the sample standard deviation (ddof 1) of every
per-case metric, the pass rate ``c / n`` (``c`` attempts passed by the task's own rule,
:meth:`queryeval.tasks.base.Task.case_passed`), and for each ``k`` of ``--pass-k``:

* ``pass@k = 1 - C(n - c, k) / C(n, k)``: the chance that at least one of k attempts drawn
  without replacement from the n passes (the unbiased estimator of Chen et al. 2021);
* ``pass^k = C(c, k) / C(n, k)``: the chance that all k drawn attempts pass (unbiased for
  ``p^k`` in the same way).

Both are computed as exact fractions and rounded once. Overall: the mean over cases of each
per-case figure (every case has the same weight, whatever its spread), with a percentile
bootstrap interval that resamples CASES, never attempts (attempts of one case are not
independent). A case is *flaky* when it passed sometimes but not always (0 < c < n).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

FLAKY_LIST = 50
"""Flaky cases listed in the metrics (and so in the reports); the CSV has them all."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` attempts of which ``c`` passed (``k <= n``)."""
    _check(n, c, k)
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all of k attempts pass) from ``n`` attempts of which ``c`` passed."""
    _check(n, c, k)
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def exact_mean(values: list[float]) -> float | None:
    """The correctly rounded mean (:class:`queryeval.metrics.mean.ExactMean`)."""
    from queryeval.metrics.mean import ExactMean

    acc = ExactMean()
    for v in values:
        acc.add(v)
    return acc.mean()


def sample_std(values: list[float]) -> float | None:
    """Sample standard deviation (ddof 1); 0.0 for one value, None for none."""
    if not values:
        return None
    if len(values) == 1:
        return 0.0
    m = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (len(values) - 1))


def outcome_letter(passed: bool, error: bool) -> str:
    """``P`` passed, ``F`` failed, ``E`` the call failed."""
    return "E" if error else ("P" if passed else "F")


class RepeatStats:
    """Per-case and overall statistics, fed one case's attempts at a time (suite order)."""

    def __init__(self, repeats: int, ks: Iterable[int]) -> None:
        self.repeats = repeats
        self.ks = sorted(set(ks))
        self.rows: list[dict] = []
        self.metric_names: list[str] = []

    def add_case(self, case_id: str, attempts: list[tuple[bool, bool, dict[str, float]]]) -> dict:
        """``attempts``: (passed, errored, per-case metrics) for each repeat, in repeat order."""
        n = len(attempts)
        c = sum(1 for passed, _, _ in attempts if passed)
        row: dict[str, Any] = {
            "case_id": case_id, "attempts": n, "passes": c, "pass_rate": c / n if n else None,
            "outcomes": "".join(outcome_letter(p, e) for p, e, _ in attempts),
            "flaky": 0 < c < n,
        }
        for k in self.ks:
            row[f"pass@{k}"] = pass_at_k(n, c, k) if k <= n else None
            row[f"pass^{k}"] = pass_hat_k(n, c, k) if k <= n else None
        names: dict[str, list[float]] = {}
        for _, _, values in attempts:
            for name, value in values.items():
                names.setdefault(name, []).append(value)
        for name, values in names.items():
            if name not in self.metric_names:
                self.metric_names.append(name)
            row[f"{name}_mean"] = exact_mean(values)
            row[f"{name}_std"] = sample_std(values)
        self.rows.append(row)
        return row

    def columns(self) -> list[str]:
        cols = ["case_id", "attempts", "passes", "pass_rate", "outcomes", "flaky"]
        cols += [f"pass{sep}{k}" for k in self.ks for sep in ("@", "^")]
        cols += [f"{m}_{s}" for m in self.metric_names for s in ("mean", "std")]
        return cols

    def result(self, *, confidence: float = 0.95, seed: int = 0) -> dict:
        """The ``repeats`` section of the metrics."""
        from queryeval.report.stats import bootstrap_ci

        n_cases = len(self.rows)
        resamples = 10_000 if n_cases <= 10_000 else max(200, 10**8 // n_cases)

        def summary(key: str) -> dict:
            values = [r[key] for r in self.rows if r.get(key) is not None]
            ci = bootstrap_ci(values, confidence=confidence, resamples=resamples, seed=seed)
            return {"mean": exact_mean(values), "ci_low": ci.low, "ci_high": ci.high,
                    "n": len(values)}

        overall = {"pass_rate": summary("pass_rate")}
        for k in self.ks:
            overall[f"pass@{k}"] = summary(f"pass@{k}")
            overall[f"pass^{k}"] = summary(f"pass^{k}")
        for name in self.metric_names:
            overall[f"{name}_mean"] = summary(f"{name}_mean")
            overall[f"mean_{name}_std"] = {"mean": exact_mean(
                [r[f"{name}_std"] for r in self.rows if r.get(f"{name}_std") is not None])}
        flaky = [r for r in self.rows if r["flaky"]]
        return {
            "repeats": self.repeats,
            "pass_k": self.ks,
            "cases": n_cases,
            "attempts": sum(r["attempts"] for r in self.rows),
            "confidence": confidence,
            "ci_method": "percentile bootstrap over cases (clustered: attempts are not resampled)",
            "overall": overall,
            "flaky_cases": len(flaky),
            "flaky_share": len(flaky) / n_cases if n_cases else None,
            "flaky": [{"case_id": r["case_id"], "outcomes": r["outcomes"],
                       "pass_rate": r["pass_rate"]} for r in flaky[:FLAKY_LIST]],
        }


def grouped(records: Iterable[dict]) -> Iterator[tuple[str, list[dict]]]:
    """Consecutive records of one case (a run's records in run order: case, then repeat)."""
    current: str | None = None
    group: list[dict] = []
    for rec in records:
        cid = str(rec["case_id"])
        if cid != current and group:
            yield current, sorted(group, key=lambda r: r.get("repeat", 0))  # type: ignore[misc]
            group = []
        current = cid
        group.append(rec)
    if group:
        yield current, sorted(group, key=lambda r: r.get("repeat", 0))  # type: ignore[misc]


def repeat_stats(records: Iterable[dict], repeats: int, ks: Iterable[int],
                 passed: Callable[[dict], bool], metrics: Callable[[dict], dict[str, float]]
                 ) -> RepeatStats:
    """:class:`RepeatStats` over a run's records (in run order)."""
    stats = RepeatStats(repeats, ks)
    for case_id, recs in grouped(records):
        stats.add_case(case_id, [(bool(passed(r)), r.get("status") == "error", metrics(r))
                                 for r in recs])
    return stats


def write_cases_csv(path: Path, stats: RepeatStats) -> None:
    """``repeats_<id>.csv``: one row per case (mean and std of each metric, pass figures)."""
    from queryeval.io.atomic import atomic_open
    from queryeval.io.safetext import csv_row
    from queryeval.run.log import writing

    cols = stats.columns()
    with writing(path), atomic_open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(csv_row(cols, raw=False))
        for row in stats.rows:
            writer.writerow(csv_row([row.get(c) for c in cols], raw=False))


def add_xlsx_sheet(path: Path, rep: dict, flaky_rows: int = 100) -> None:
    """Add a ``Repeats`` sheet to the task's xlsx report: pass rate, pass@k and pass^k (mean
    over cases and the case-bootstrap interval), then the flaky cases with each attempt's
    outcome. Written atomically like the report itself."""
    from openpyxl import load_workbook

    from queryeval.io.atomic import atomic_open
    from queryeval.io.safetext import csv_cell

    wb = load_workbook(path)
    if "Repeats" in wb.sheetnames:
        del wb["Repeats"]
    ws = wb.create_sheet("Repeats")
    ws.append(["figure", "mean over cases", "CI low", "CI high"])
    overall = rep.get("overall") or {}
    keys = ["pass_rate"] + [f"pass{sep}{k}" for k in rep.get("pass_k", []) for sep in ("@", "^")]
    for key in keys:
        fig = overall.get(key) or {}
        ws.append([key, fig.get("mean"), fig.get("ci_low"), fig.get("ci_high")])
    ws.append([])
    ws.append(["attempts per case", rep.get("repeats")])
    ws.append(["cases", rep.get("cases")])
    ws.append(["flaky cases", rep.get("flaky_cases"), "share", rep.get("flaky_share")])
    ws.append([])
    ws.append(["flaky case", "pass rate", "attempts (P pass, F fail, E error)"])
    for row in (rep.get("flaky") or [])[:flaky_rows]:
        ws.append([csv_cell(row.get("case_id")), row.get("pass_rate"), row.get("outcomes")])
    with atomic_open(path, "wb") as fh:
        wb.save(fh)
