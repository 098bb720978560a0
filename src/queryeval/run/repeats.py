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
from typing import Any, TypeVar

T = TypeVar("T")

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


class RepeatStats:
    """Per-case and overall statistics, fed one case's attempts at a time (suite order)."""

    def __init__(self, repeats: int, ks: Iterable[int]) -> None:
        self.repeats = repeats
        self.ks = sorted(set(ks))
        self.rows: list[dict] = []
        self.metric_names: list[str] = []

    def add_case(self, case: Any) -> dict:
        """One case of the run model (:class:`queryeval.run.results.CaseResult`, attempts in
        repeat order): its ``n``, passes, outcomes, flakiness and means are the model's; the
        spread (std) of each figure over the attempts is added here."""
        n, c = len(case.attempts), case.passes
        row: dict[str, Any] = {
            "case_id": case.case_id, "attempts": n, "passes": c,
            "pass_rate": c / n if n else None, "outcomes": case.outcomes,
            "flaky": case.verdict == "flaky",
        }
        if getattr(case, "cluster", None):  # not a CSV column: the intervals' clusters
            row["cluster"] = case.cluster
        for k in self.ks:  # pass@k and pass^k of each case, with n and c read once
            row[f"pass@{k}"] = pass_at_k(n, c, k) if k <= n else None
            row[f"pass^{k}"] = pass_hat_k(n, c, k) if k <= n else None
        for name, mean in case.means.items():
            if name not in self.metric_names:
                self.metric_names.append(name)
            row[f"{name}_mean"] = mean
            row[f"{name}_std"] = sample_std([a.values[name] for a in case.attempts
                                             if name in a.values])
        self.rows.append(row)
        return row

    def columns(self) -> list[str]:
        cols = ["case_id", "attempts", "passes", "pass_rate", "outcomes", "flaky"]
        cols += [f"pass{sep}{k}" for k in self.ks for sep in ("@", "^")]
        cols += [f"{m}_{s}" for m in self.metric_names for s in ("mean", "std")]
        return cols

    def result(self, *, confidence: float = 0.95, seed: int = 0) -> dict:
        """The ``repeats`` section of the metrics."""
        keys = ["pass_rate"] + [f"pass{sep}{k}" for k in self.ks for sep in ("@", "^")]
        keys += [f"{name}_mean" for name in self.metric_names]
        canon = in_bootstrap_order(self.rows, lambda r: r["case_id"])
        columns = {key: [r[key] for r in canon if r.get(key) is not None] for key in keys}
        clustered = any(r.get("cluster") for r in canon)
        intervals = case_bootstrap(columns, confidence=confidence, seed=seed) \
            if not clustered else {}
        overall: dict[str, dict] = {}
        for key in keys:
            if clustered:  # whole clusters resampled (metrics.stats; docs/compare.md)
                from queryeval.metrics import stats as _stats

                index = _stats.cluster_index([r.get("cluster") for r in canon
                                              if r.get(key) is not None])
                ci = _stats.cluster_bootstrap_ci(columns[key], index, confidence=confidence,
                                                 seed=seed) if columns[key] else None
                overall[key] = {"mean": exact_mean(columns[key]),
                                "ci_low": ci.low if ci else None,
                                "ci_high": ci.high if ci else None, "n": len(columns[key])}
                if ci is not None and ci.clusters is not None:
                    overall[key].update(clusters=ci.clusters, design_effect=ci.design_effect,
                                        effective_n=ci.effective_n)
                continue
            low, high = intervals[key]
            overall[key] = {"mean": exact_mean(columns[key]), "ci_low": low, "ci_high": high,
                            "n": len(columns[key])}
        for name in self.metric_names:
            overall[f"mean_{name}_std"] = {"mean": exact_mean(
                [r[f"{name}_std"] for r in self.rows if r.get(f"{name}_std") is not None])}
        n_cases = len(self.rows)
        flaky = [r for r in self.rows if r["flaky"]]
        return {
            "repeats": self.repeats,
            "pass_k": self.ks,
            "cases": n_cases,
            "attempts": sum(r["attempts"] for r in self.rows),
            "confidence": confidence,
            "ci_method": "percentile bootstrap over cases (clustered: attempts are not resampled)"
            if not clustered else "percentile bootstrap over the cases' clusters (whole "
            "clusters resampled; attempts are not resampled)",
            "overall": overall,
            "flaky_cases": len(flaky),
            "flaky_share": len(flaky) / n_cases if n_cases else None,
            "flaky": [{"case_id": r["case_id"], "outcomes": r["outcomes"],
                       "pass_rate": r["pass_rate"]} for r in flaky[:FLAKY_LIST]],
        }


def in_bootstrap_order(items: Iterable[T], case_id: Callable[[T], Any]) -> list[T]:
    """``items`` (one per case) in the order every case bootstrap takes its cases in: case
    id order. The resampled cases are drawn by position, so the order decides the interval;
    one order for the repeats section and the reports' Overall CIs (and the viewer's) gives
    one interval per figure, whatever order the records were read in (completion order,
    suite order)."""
    return sorted(items, key=lambda x: str(case_id(x)))


def case_bootstrap(columns: dict[str, list[float]], *, confidence: float = 0.95,
                   resamples: int | None = None, seed: int = 0) -> dict[str, tuple]:
    """Percentile bootstrap intervals of the mean of each column, resampling CASES: the same
    resampled sets of cases for every column of the same length (the same seed), and
    one computation for columns holding the same values (pass@1 = pass rate = pass^1).
    A constant column's interval is its value; an empty one's is (None, None)."""
    import numpy as np

    out: dict[str, tuple] = {}
    done: dict[tuple, tuple] = {}
    tail = (1.0 - confidence) / 2.0
    for key, values in columns.items():
        sig = tuple(values)
        if sig in done:
            out[key] = done[sig]
            continue
        n = len(values)
        arr = np.asarray(values, dtype=float)
        if n == 0:
            out[key] = (None, None)
        elif np.all(arr == arr[0]):
            out[key] = (float(arr[0]), float(arr[0]))
        else:
            total = resamples or (10_000 if n <= 10_000 else max(200, 10**8 // n))
            rng = np.random.default_rng(seed)  # the same resampled cases for every column
            rows = max(1, 4_000_000 // n)
            means = np.concatenate([arr[rng.integers(0, n, size=(min(rows, total - i), n))]
                                    .mean(axis=1) for i in range(0, total, rows)])
            low, high = np.quantile(means, [tail, 1.0 - tail])
            out[key] = (float(low), float(high))
        done[sig] = out[key]
    return out


def repeat_stats(cases: Iterable[Any], repeats: int, ks: Iterable[int]) -> RepeatStats:
    """:class:`RepeatStats` over a run's cases as the run model reduced them
    (:func:`queryeval.run.results.reduce_cases`), in their order."""
    stats = RepeatStats(repeats, ks)
    for case in cases:
        stats.add_case(case)
    return stats


def write_cases_csv(path: Path, stats: RepeatStats) -> None:
    """``repeats_<id>.csv``: one row per case (mean and std of each metric, pass figures)."""
    from queryeval.io.atomic import atomic_open
    from queryeval.io.safetext import csv_row
    from queryeval.io.writing import writing

    cols = stats.columns()
    with writing(path), atomic_open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(csv_row(cols, raw=False))
        for row in stats.rows:
            writer.writerow(csv_row([row.get(c) for c in cols], raw=False))


SUMMED = frozenset({"errors", "errors_by_kind"})
"""Keys of an aggregate that count failed attempts: summed over the repeats, not averaged."""


def pass_ks(repeats: int, pass_k: Iterable[int] | None) -> list[int]:
    """The k of pass@k / pass^k a run with ``repeats`` reports: ``pass_k`` as given, else
    ``1`` and ``repeats`` (``--pass-k``'s default)."""
    return list(pass_k or []) or sorted({1, repeats})


def aggregate_attempts(task: Any, records: Iterable[dict], repeats: int) -> dict:
    """The task's overall and group figures for a run with repeats, counted per CASE.

    The task aggregates the records of each repeat r apart (each is a plain run over the
    suite: one record per case), and every figure is the mean of its N values
    (:func:`combine_aggregates`). Every repeat counts the same cases: under ``on_error=skip``
    a case with a failed attempt is left out of the means in every repeat
    (:func:`queryeval.tasks.accum.skipped_cases`, the per-case population's rule too), so a
    mean over cases is the mean over the counted cases of each case's mean over its N
    attempts; a count (cases, tag sizes, ``in_target``) is a count of cases; a deterministic
    system gives exactly the figures of a plain run. ``records`` is read once for the
    grouping (a :class:`RecordStream` is split by offsets into one stream per repeat; other
    iterables are grouped in memory)."""
    from queryeval.run.records import RecordStream
    from queryeval.tasks.accum import skipped_cases

    statuses: list[tuple[str, str]] = []  # (case id, status) of the failed attempts only

    def repeat_of(r: dict) -> int:
        if r.get("status") == "error":
            statuses.append((str(r.get("case_id")), "error"))
        return _repeat(r)

    if isinstance(records, RecordStream):
        import numpy as np

        reps = np.fromiter((repeat_of(r) for r in records), dtype=np.int64, count=len(records))
        parts: list[Iterable[dict]] = [
            RecordStream(records.path, records.offsets[reps == k], records.sizes[reps == k], None)
            for k in sorted(set(reps.tolist()))]
    else:
        groups: dict[int, list[dict]] = {}
        for r in records:
            groups.setdefault(repeat_of(r), []).append(r)
        parts = [groups[k] for k in sorted(groups)]
    if not parts:
        return task.aggregate([])
    skipped = skipped_cases(task.options.on_error, statuses)
    if skipped:
        parts = [_SkippingCases(p, skipped) for p in parts]
    return combine_aggregates([task.aggregate(p) for p in parts])


class _SkippingCases:
    """One repeat's records with each attempt of a skipped case that did not fail marked
    :data:`~queryeval.tasks.accum.SKIPPED_CASE` (a copy: counted in the case totals, left out
    of the means). Re-iterable, with a length, like the records it wraps."""

    def __init__(self, records: Iterable[dict], skipped: frozenset[str]) -> None:
        self.records = records
        self.skipped = skipped

    def __len__(self) -> int:
        return len(self.records)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[dict]:
        from queryeval.tasks.accum import SKIPPED_CASE

        for r in self.records:
            if r.get("status") != "error" and str(r.get("case_id")) in self.skipped:
                yield {**r, SKIPPED_CASE: True}
            else:
                yield r


def _repeat(record: dict) -> int:
    rep = record.get("repeat")
    return rep if type(rep) is int else 0


_ABSENT = object()
"""A key one repeat's aggregate does not have (a group no case of that attempt fell in)."""


def combine_aggregates(results: list[Any], key: str = "") -> Any:
    """Leaf by leaf over N aggregates of the same shape: numbers equal in all stay as they are
    (an int stays an int, so a deterministic system's figures are those of a plain run),
    other numbers become their correctly rounded mean (None values left out; all None stays
    None); :data:`SUMMED` counts are summed; anything else is taken from the first.

    A key absent from some repeats (a group, say the free-form cases left inconclusive, that
    no case of one attempt fell in) counts 0 there where its values are counts (ints), and
    is left out where they are rates (floats: undefined in that attempt); before, its counts
    were averaged over the attempts that had it, so the group's cases no longer summed to
    the run's."""
    present = [r for r in results if r is not _ABSENT]
    first = present[0] if present else None
    if key in SUMMED:
        return _summed(present) if present else None
    if isinstance(first, dict):
        keys = list(first)
        for other in present[1:]:
            if isinstance(other, dict):
                keys += [k for k in other if k not in keys]
        return {k: combine_aggregates([r.get(k, _ABSENT) if isinstance(r, dict) else
                                       (r if r is _ABSENT else None) for r in results], k)
                for k in keys}
    values = [v for v in present if v is not None]
    counts = bool(values) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    results = [(0 if counts else None) if r is _ABSENT else r for r in results]
    numbers = [r for r in results if r is not None]
    if numbers and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       for v in numbers):
        if len(numbers) == len(results) and all(v == numbers[0] and type(v) is type(numbers[0])
                                                for v in numbers):
            return numbers[0]
        return exact_mean([float(v) for v in numbers])
    return next((r for r in results if r is not None), None)


def _summed(results: list[Any]) -> Any:
    if all(isinstance(r, int) and not isinstance(r, bool) for r in results):
        return sum(results)
    if all(isinstance(r, dict) for r in results):
        out: dict = {}
        for r in results:
            for k, v in r.items():
                out[k] = out.get(k, 0) + v if isinstance(v, int) else v
        return dict(sorted(out.items()))
    return results[0]
