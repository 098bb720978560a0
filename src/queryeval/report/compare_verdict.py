"""What a comparison concludes, metric by metric: better, worse or no detectable difference
(significant after Holm or not), which metrics form the Holm family, and the warnings a
reader needs (a run compared with itself, too few cases to detect the observed difference,
a confidence interval that excludes 0 beside a Holm-adjusted p above alpha).

The Holm family holds each distinct per-case figure once: a metric whose per-case values
equal an earlier metric's in every run, up to a positive factor (the tests are scale-free),
takes that metric's test instead of counting twice (``hit_rate@k`` and ``recall@k``,
``map@k`` and ``mrr@k``, and ``precision@k = recall@k / k`` when each question has one
relevant chunk); counts (``subquestions``, ``cases``: whole numbers named as counts or not
all 0/1) are shown, never tested. Both compares (two runs and N runs) call these functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from statistics import NormalDist

from queryeval.metrics.stats import min_p_value

BETTER, WORSE, SAME = "better", "worse", "no detectable difference"
COUNT = "count (not tested)"
POWER = 0.8
"""Power at which :func:`cases_needed` sizes a comparison."""


_COUNT_NAME = re.compile(r"(?:^|_)(?:subquestions|questions|cases|count|answered|rows)$"
                         r"|^(?:n|num|total)_")


def is_count(values: Sequence[float], name: str = "") -> bool:
    """Non-negative whole numbers, either named as a count (``subquestions``, ``cases``,
    ``n_…``, ``total_…``) or not all 0/1: a count of things, not a rate."""
    return bool(values) and all(v >= 0 and float(v).is_integer() for v in values) \
        and (any(v > 1 for v in values) or bool(_COUNT_NAME.search(name)))


def classify(metrics: Sequence[str], columns: Sequence[Mapping[str, Mapping[str, float]]],
             ids: Sequence[str]) -> tuple[dict[str, str], set[str]]:
    """(``{metric: earlier metric it equals, up to a positive factor, in every run}``, the
    count metrics) over the cases ``ids`` of each run's per-case values
    ``columns[k][case_id][metric]``."""
    twins: dict[str, str] = {}
    counts: set[str] = set()
    seen: dict[tuple, str] = {}
    for m in metrics:
        vector = tuple(tuple(col[c].get(m) for c in ids if c in col) for col in columns)
        flat = [v for run in vector for v in run if v is not None]
        if is_count(flat, m):
            counts.add(m)
            continue
        if not flat:
            continue
        # the paired tests are scale-free: a metric proportional to an earlier one case by
        # case in every run (precision@k = recall@k / k with one relevant chunk) has its p
        scale = max(abs(v) for v in flat) or 1.0
        vector = tuple(tuple(None if v is None else round(v / scale, 12) for v in run)
                       for run in vector)
        if vector in seen:
            twins[m] = seen[vector]
        else:
            seen[vector] = m
    return twins, counts


min_p = min_p_value
"""The smallest two-sided p the sign-flip test gives with ``n`` non-zero differences."""


def cases_needed(diffs: Sequence[float], alpha: float, power: float = POWER) -> int | None:
    """About how many paired cases a two-sided test at ``alpha`` needs to detect the mean
    of ``diffs`` with ``power`` (normal approximation, the observed spread); None when the
    mean or the spread is 0."""
    n = len(diffs)
    if n < 2:
        return None
    mean = math.fsum(diffs) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1))
    if mean == 0 or sd == 0:
        return None
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return math.ceil((z * sd / abs(mean)) ** 2)


def direction(diff: float | None, lower_is_better: bool) -> str:
    if not diff:
        return SAME
    return BETTER if (diff < 0) == lower_is_better else WORSE


def verdict(diff: float | None, p_adjusted: float | None, alpha: float,
            lower_is_better: bool) -> str:
    """``better`` / ``worse`` when significant after Holm, else no detectable difference."""
    if p_adjusted is None or p_adjusted >= alpha:
        return SAME
    return direction(diff, lower_is_better)


def notes(metric: str, *, n: int, diffs: Sequence[float], ci: tuple[float | None, float | None],
          confidence: float, p_raw: float | None, p_adjusted: float | None, family: int,
          alpha: float, units: Sequence[float] | None = None,
          design_effect: float | None = None, clusters: int | None = None) -> list[str]:
    """Why a metric reads as it does: a CI that excludes 0 beside a Holm p at or above alpha,
    and an n too small to detect the observed difference. With clusters, ``units`` are the
    clusters' sums the test flips and the cases needed are scaled by the design effect
    (at least 1: clusters never make fewer cases enough)."""
    out: list[str] = []
    if p_adjusted is None or p_adjusted < alpha:
        return out
    low, high = ci
    if low is not None and high is not None and (low > 0 or high < 0):
        out.append(f"{metric}: the {confidence:.0%} CI of B − A [{low:+.4f}, {high:+.4f}] "
                   f"excludes 0, yet p = {p_raw:.4g} becomes {p_adjusted:.4g} after Holm's "
                   f"adjustment over {family} tested metric(s): the interval is not adjusted "
                   "for testing several metrics, so the difference is not significant")
    nonzero = sum(1 for d in (diffs if units is None else units) if d)
    what = "case(s)" if clusters is None else f"of {clusters} cluster(s)"
    if nonzero and min_p(nonzero) * max(1, family) >= alpha and min_p(nonzero) < 1:
        out.append(f"{metric}: only {nonzero} {what} differ; the smallest p the test can "
                   f"give is {min_p(nonzero):.4g} ({min_p(nonzero) * family:.4g} after Holm "
                   f"over {family}), so no difference can be significant at alpha {alpha:g}")
    else:
        need = cases_needed(diffs, alpha / max(1, family))
        if need is not None and design_effect is not None and clusters is not None:
            need = math.ceil(need * max(design_effect, 1.0))  # never fewer than unclustered
        if need is not None and need > n:
            out.append(f"{metric}: n = {n} is too small to detect the observed difference "
                       f"({math.fsum(diffs) / len(diffs):+.4f}): about {need} paired cases "
                       f"would detect it with {POWER:.0%} power at alpha {alpha:g}/{family}")
    return out


def cluster_note(metrics: Sequence) -> list[str]:
    """One line when the paired cases form clusters: how many, and per tested metric the
    design effect and the effective n the intervals and tests account for."""
    clustered = [m for m in metrics if getattr(m, "clusters", None) is not None
                 and getattr(m, "tested", True)]
    if not clustered:
        return []
    first = clustered[0]
    parts = [f"{m.metric} {m.design_effect:.2f} (effective n {m.effective_n:.1f})"
             for m in clustered if m.design_effect is not None and m.effective_n is not None]
    return [f"clustered cases: {first.n} paired cases in {first.clusters} clusters (cases that "
            "share a source); intervals resample whole clusters and the tests flip and test "
            "clusters' sums" + (f"; design effect {', '.join(parts)}" if parts else "")]


def same_run_warning(infos: Sequence[Mapping]) -> list[str]:
    """A warning per run given more than once (same batch id)."""
    seen: dict[str, int] = {}
    out = []
    for k, info in enumerate(infos):
        bid = str(info.get("batch_id"))
        if bid in seen:
            out.append(f"run {k + 1} is the same run as run {seen[bid] + 1} (batch {bid}): "
                       "a run compared with itself shows no difference by construction")
        else:
            seen[bid] = k
    return out


def headline(metrics: Sequence, alpha: float) -> str:
    """``B is worse on 2 of 5 tested metrics (significant after Holm, alpha 0.05): x, y;
    better on none; no detectable difference on 3``."""
    tested = [m for m in metrics if m.verdict != COUNT]
    worse = [m.metric for m in tested if m.verdict == WORSE]
    better = [m.metric for m in tested if m.verdict == BETTER]
    same = len(tested) - len(worse) - len(better)

    def part(word: str, names: list[str]) -> str:
        return f"{word} on {len(names)}: {', '.join(names)}" if names else f"{word} on none"

    return (f"B against A over {len(tested)} metric(s), significant after Holm at alpha "
            f"{alpha:g}: {part('worse', worse)}; {part('better', better)}; no detectable "
            f"difference on {same}{detectable(tested)}")


def detectable(metrics: Sequence) -> str:
    """`` (detectable at 80% power: passed ±0.244, …)``: the minimum detectable effect of
    each metric with no detectable difference (empty when none has one)."""
    parts = [f"{m.metric} ±{m.mde:.3g}" for m in metrics
             if m.verdict == SAME and getattr(m, "mde", None) is not None]
    return f" (detectable at {POWER:.0%} power: {', '.join(parts)})" if parts else ""
