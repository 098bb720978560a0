"""Compare runs of the same task case by case: one model for two runs and for N runs.

Cases are paired by ``case_id`` and read from the run model
(:class:`queryeval.run.results.RunResults`): each case's per-case figures are its exact mean
over its attempts (one attempt without ``--repeats``; a case errored when any attempt did),
so the viewer and every compare pair on the same values with n = cases.

:func:`compare_many` builds the one model, :class:`NWayComparison`: one table per scope
(overall, each group), rows = metrics, columns = runs, and per pair of runs (each against
the baseline, the first, or all pairs) and metric a :class:`MetricComparison`: the means,
the difference with a paired bootstrap CI, a paired randomization (sign-flip) test and a
paired t-test, Holm-adjusted across the table's tests (``pairs × metrics``), the verdict
and warnings (:mod:`queryeval.report.compare_verdict`), and the cases that improved or
regressed. Means in a table are over the cases shared by all runs; each test is over the
cases its two runs share.

Two runs are the case N = 2: :func:`compare_runs` builds the model of two runs and reads
its one pair as a :class:`Comparison` (B against A; Holm across B's metrics, which for two
runs is the table's family). One gate, :func:`check_regression`, serves both. Outputs:
console, Markdown, LaTeX, CSV, JSON and xlsx in :mod:`queryeval.report.compare_output`,
HTML in :mod:`queryeval.report.html_compare`. See docs/compare.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from queryeval.errors import ConfigError, GateFailure, one_line
from queryeval.metrics import stats
from queryeval.report import compare_verdict as verdicts
from queryeval.report.planning import minimum_detectable_effect
from queryeval.run.repeats import exact_mean
from queryeval.run.results import (
    RunResults,
    lower_is_better,
)

#: Changes smaller than this are float noise, not flips.
FLIP_EPS = 1e-12
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def letter(i: int) -> str:
    """The short name of run ``i``: a, b, …, z, then a1, b1, …"""
    return LETTERS[i % 26] + (str(i // 26) if i >= 26 else "")


# --- reading runs (run/results.py: one model of a run's per-case results) -------------------


# --- the comparison ---------------------------------------------------------------------------
@dataclass
class Flip:
    case_id: str
    name: str | None
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass
class MetricComparison:
    metric: str
    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    """mean(B − A) over the paired cases."""
    ci_low: float | None
    ci_high: float | None
    p_randomization: float | None
    randomization_method: str
    p_ttest: float | None
    p_holm: float | None = None
    """Holm-adjusted randomization p (the one the regression gate uses)."""
    p_ttest_holm: float | None = None
    binary: bool = False
    lower_is_better: bool = False
    improved: list[Flip] = field(default_factory=list)
    regressed: list[Flip] = field(default_factory=list)
    verdict: str = "no detectable difference"
    """``better`` / ``worse`` (significant after Holm), ``no detectable difference``, or
    ``count (not tested)``: :mod:`queryeval.report.compare_verdict`."""
    tested: bool = True
    """In the Holm family (not a count, not a twin of an earlier metric)."""
    same_as: str | None = None
    """The earlier metric whose per-case values this one equals in both runs (its test)."""
    notes: list[str] = field(default_factory=list)
    clusters: int | None = None
    """Clusters of the paired cases (None: every case its own): the CI resamples whole
    clusters, the randomization test flips clusters' sums, the t-test is CR1 (docs/compare.md)."""
    design_effect: float | None = None
    """Cluster-robust over independent-cases variance of mean(B − A) (with clusters)."""
    effective_n: float | None = None
    """n / design effect: as many independent cases as the clusters are worth."""
    mde: float | None = None
    """Minimum detectable effect: the |B − A| this comparison detects with 80% power at
    alpha / (tested metrics), from the standard error of mean(B − A) (CR1 with clusters)."""
    se: float | None = field(default=None, repr=False)
    diffs: list[float] = field(default_factory=list, repr=False)
    units: list[float] = field(default_factory=list, repr=False)
    """What the randomization test flips: the differences, or the clusters' sums of them."""
    paired_values: list[tuple[str, str | None, float, float]] = field(
        default_factory=list, repr=False)
    """Each paired case's (case id, name, A, B), in ``diffs``' order: the values every
    figure of this metric is computed from (the compare HTML's scatter draws them)."""

    def worse(self) -> bool:
        """B is worse than A on this metric (direction-aware)."""
        if self.diff is None:
            return False
        return self.diff > 0 if self.lower_is_better else self.diff < 0

    def to_dict(self) -> dict:
        # the per-case lists stay out (not copied: asdict would copy every case's tuple)
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in ("diffs", "units", "paired_values", "se")}
        out["notes"] = list(self.notes)
        if self.clusters is None:  # unclustered: the document as before
            for key in ("clusters", "design_effect", "effective_n"):
                out.pop(key)
        for key in ("improved", "regressed"):
            out[key] = [{**asdict(f), "delta": f.delta} for f in getattr(self, key)]
        return out


@dataclass
class Comparison:
    task: str | None
    run_a: dict
    run_b: dict
    paired: int
    only_a: list[str]
    only_b: list[str]
    excluded: list[str]
    """Paired cases left out because a call failed and a run uses ``on_error=skip``."""
    metrics: list[MetricComparison]
    alpha: float
    confidence: float
    resamples: int
    seed: int | None
    warnings: list[str] = field(default_factory=list)
    """A run compared with itself; per metric: a CI excluding 0 beside a Holm p >= alpha,
    an n too small to detect the observed difference."""
    sequential: dict | None = None
    """B's ``--stop-when-decided`` section (its decision and anytime-valid interval) when
    B was decided against a baseline; None otherwise."""

    def metric(self, name: str) -> MetricComparison:
        for m in self.metrics:
            if m.metric == name:
                return m
        raise KeyError(name)

    def regressions(self) -> list[MetricComparison]:
        """Metrics where B is worse and the Holm-adjusted randomization p is below alpha."""
        return [m for m in self.metrics if m.verdict != verdicts.COUNT and verdicts.verdict(
            m.diff, m.p_holm, self.alpha, m.lower_is_better) == verdicts.WORSE]

    def headline(self) -> str:
        """The verdict in one line: per direction, the metrics significantly better or worse
        after Holm, and how many show no detectable difference."""
        return verdicts.headline(self.metrics, self.alpha)

    def to_dict(self) -> dict:
        return {
            "comparison_schema": "queryeval.compare/1", "task": self.task,
            "run_a": self.run_a, "run_b": self.run_b, "paired_cases": self.paired,
            "only_in_a": self.only_a, "only_in_b": self.only_b, "excluded": self.excluded,
            "alpha": self.alpha, "confidence": self.confidence, "resamples": self.resamples,
            "seed": self.seed, "headline": self.headline(), "warnings": self.warnings,
            "verdicts": {m.metric: m.verdict for m in self.metrics},
            "metrics": [m.to_dict() for m in self.metrics],
            "regressions": [m.metric for m in self.regressions()],
            **({"sequential": self.sequential} if self.sequential is not None else {}),
        }


def _run_info(run: RunResults) -> dict:
    return run.describe()


def _flips(ids: list[str], names: dict[str, Any], xs: list[float], ys: list[float],
           lower: bool) -> tuple[list[Flip], list[Flip]]:
    improved, regressed = [], []
    for cid, x, y in zip(ids, xs, ys, strict=True):
        gain = (x - y) if lower else (y - x)
        if gain > FLIP_EPS:
            improved.append(Flip(cid, names.get(cid), x, y))
        elif gain < -FLIP_EPS:
            regressed.append(Flip(cid, names.get(cid), x, y))
    return improved, regressed


def _compare_metric(metric: str, ids: list[str], names: dict, xs: list[float], ys: list[float], *,
                    lower: bool, confidence: float, resamples: int, seed: int | None,
                    exact_max_n: int, clusters: dict[str, str | None] | None = None
                    ) -> MetricComparison:
    if not ids:
        return MetricComparison(metric, 0, None, None, None, None, None, None, "none", None,
                                lower_is_better=lower)
    diffs = [y - x for x, y in zip(xs, ys, strict=True)]
    index = stats.cluster_index([clusters.get(c) for c in ids]) if clusters else None
    if index is None:  # every case its own cluster: the independent-cases methods
        ci = stats.bootstrap_ci(diffs, confidence=confidence, resamples=resamples, seed=seed)
        units = diffs
        p_t = stats.paired_t_test(xs, ys).p_value
        var = stats.cluster_variance(diffs, None)
    else:  # whole clusters resampled, their sums flipped, a CR1 standard error
        ci = stats.cluster_bootstrap_ci(diffs, index, confidence=confidence,
                                        resamples=resamples, seed=seed)
        units = [float(s) for s in stats.cluster_totals(diffs, index)[0]]
        p_t = stats.cluster_t_test(diffs, index).p_value
        var = stats.cluster_variance(diffs, index)
    rand = stats.sign_flip_test(units, resamples=resamples, seed=seed, exact_max_n=exact_max_n)
    improved, regressed = _flips(ids, names, xs, ys, lower)
    return MetricComparison(
        metric, len(ids), exact_mean(xs), exact_mean(ys), ci.mean, ci.low, ci.high,
        rand.p_value, rand.method, p_t,
        binary=all(v in (0.0, 1.0) for v in (*xs, *ys)), lower_is_better=lower,
        improved=improved, regressed=regressed, clusters=ci.clusters,
        design_effect=ci.design_effect, effective_n=ci.effective_n,
        se=math.sqrt(var) if var is not None and var > 0 else None, diffs=diffs, units=units,
        paired_values=[(c, names.get(c), x, y) for c, x, y in zip(ids, xs, ys, strict=True)],
    )


@dataclass
class PairedCases:
    """Two runs' cases paired by id, with their per-case figures (each case's mean over its
    attempts, :class:`~queryeval.run.results.CaseResult`): the input of every test."""

    a: RunResults | None
    b: RunResults | None
    ids_a: list[str]
    ids_b: list[str]
    paired: list[str]
    excluded: list[str]
    task: Any
    vals_a: dict[str, dict[str, float]]
    vals_b: dict[str, dict[str, float]]
    names: dict[str, str | None] = field(default_factory=dict)
    clusters: dict[str, str | None] = field(default_factory=dict)
    """Each paired case's cluster (A's record, else B's); empty when no case names one."""

    def available(self) -> list[str]:
        """Per-case metrics present in both runs, in first-seen order."""
        out: list[str] = []
        in_b = {k for c in self.paired for k in self.vals_b[c]}
        for cid in self.paired:
            out += [k for k in self.vals_a[cid] if k not in out and k in in_b]
        return out


def pair_runs(a: RunResults, b: RunResults, keep: set[str] | None = None) -> PairedCases:
    """Pair the cases of two runs of the same task by ``case_id`` (ConfigError otherwise, and
    when no case id is in both runs). With ``on_error=skip`` in either run, cases whose call
    failed in either are excluded. ``keep``: pair only these case ids (``--cases``: a
    platinum subset); ConfigError when none of them is in both runs."""
    if a.task_name != b.task_name:
        raise ConfigError(f"cannot compare runs of different tasks: {a.task_name!r} "
                          f"({a.log.paths.batch}) vs {b.task_name!r} ({b.log.paths.batch})")
    by_a = {c.case_id: c for c in a.cases}
    by_b = {c.case_id: c for c in b.cases}
    paired = [cid for cid in by_a if cid in by_b]
    if not paired:  # nothing to compare: an empty table (and a passed regression gate) would hide it
        raise ConfigError(
            f"the runs share no case: {len(by_a)} in {a.label} ({a.log.paths.batch.name}), "
            f"{len(by_b)} in {b.label} ({b.log.paths.batch.name}), none with the same case id "
            "(a dataset without ids takes its case ids from the question and reference: "
            "give its records the suite's ids)")
    if keep is not None:
        paired = [cid for cid in paired if cid in keep]
        if not paired:
            raise ConfigError(f"none of the {len(keep)} case(s) of --cases is in both runs "
                              f"({a.label}, {b.label})")
    excluded: list[str] = []
    if "skip" in (a.on_error, b.on_error):
        excluded = [cid for cid in paired if by_a[cid].errored or by_b[cid].errored]
        gone = set(excluded)
        paired = [cid for cid in paired if cid not in gone]
    clusters = {cid: by_a[cid].cluster or by_b[cid].cluster for cid in paired}
    return PairedCases(a, b, list(by_a), list(by_b), paired, excluded, a.task or b.task,
                       {cid: dict(by_a[cid].means) for cid in paired},
                       {cid: dict(by_b[cid].means) for cid in paired},
                       {cid: by_a[cid].name for cid in paired},
                       clusters if any(clusters.values()) else {})


def choose_metrics(pair: PairedCases, metrics: Sequence[str] | None) -> list[str]:
    available = pair.available()
    if not metrics:
        return available
    unknown = [m for m in metrics if m not in available]
    if unknown:
        raise ConfigError(f"unknown metric(s) {', '.join(unknown)}; per-case metrics of both "
                          f"runs: {', '.join(available) or 'none'}")
    return list(dict.fromkeys(metrics))


def compare_pair_metrics(pair: PairedCases, chosen: Sequence[str], *, cases: set[str] | None = None,
                         confidence: float = 0.95, resamples: int = 10_000, seed: int | None = 0,
                         exact_max_n: int = 20) -> list[MetricComparison]:
    """One :class:`MetricComparison` per metric over the paired cases (those in ``cases``
    only, when given: a group). ``p_holm`` is left unset."""
    names = pair.names
    results = []
    for metric in chosen:
        ids = [cid for cid in pair.paired if metric in pair.vals_a[cid]
               and metric in pair.vals_b[cid] and (cases is None or cid in cases)]
        results.append(_compare_metric(
            metric, ids, names, [pair.vals_a[c][metric] for c in ids],
            [pair.vals_b[c][metric] for c in ids], lower=lower_is_better(pair.task, metric),
            confidence=confidence, resamples=resamples, seed=seed, exact_max_n=exact_max_n,
            clusters=pair.clusters))
    return results


def compare_runs(run_a: str | Path | RunResults, run_b: str | Path | RunResults,
                 metrics: Sequence[str] | None = None, *, alpha: float = 0.05,
                 confidence: float = 0.95, resamples: int = 10_000, seed: int | None = 0,
                 exact_max_n: int = 20, cases: set[str] | None = None) -> Comparison:
    """Pair two runs' cases by id and compare every per-case metric (or those named);
    ``cases``: only these case ids (a platinum subset). The model of two runs
    (:func:`compare_many` with N = 2, no group tables) read as B against A
    (:meth:`NWayComparison.pair_view`).

    Raises ConfigError when the runs are of different task kinds, when a named metric is not
    a per-case metric of both runs, or when ``alpha``/``resamples`` are out of range.
    """
    return compare_many([run_a, run_b], metrics, groups=False, alpha=alpha,
                        confidence=confidence, resamples=resamples, seed=seed,
                        exact_max_n=exact_max_n, cases=cases).pair_view()


def sequential_of(run: RunResults) -> dict | None:
    """The run's ``sequential`` section (``--stop-when-decided``), from its metrics."""
    seq = (run.metrics or {}).get("sequential")
    return seq if isinstance(seq, dict) and isinstance(seq.get("interval"), list) else None


def sequential_note(seq: dict | None, who: str, names: dict[str, str],
                    baseline: str = "A") -> list[str]:
    """Run ``who`` (B, or an N-way compare's letter) stopped once decided: the fixed-n
    intervals and p-values of this table do not allow for that stopping, the anytime-valid
    interval does. ``names``: the compared runs' names by batch id, so its baseline is named
    ("its baseline was c") unless it is ``baseline``; one not compared is named by its path."""
    if seq is None:
        return []
    from queryeval.run.sequential import summary_line

    named = names.get(str(seq.get("baseline_batch_id")))
    against = "" if named == baseline else (
        f" (its baseline was {named or seq.get('baseline')}, not {baseline})")
    difference = f"{who} − {named or 'its baseline'}"
    return [f"{who} stopped when decided{against}: {summary_line(seq, difference)}; the CIs "
            "and p-values below assume a fixed number of cases, the anytime-valid interval "
            "allows for the stopping"]


def conclude(results: list[MetricComparison], pair: PairedCases, *, alpha: float,
             confidence: float) -> None:
    """Holm's adjustment over the family of distinct tested metrics (counts out; a metric
    equal case by case to an earlier one takes its test), then each metric's verdict and
    notes. Sets ``p_holm``, ``p_ttest_holm``, ``tested``, ``same_as``, ``verdict``, ``notes``."""
    names = [m.metric for m in results]
    twins, counts = verdicts.classify(names, [pair.vals_a, pair.vals_b], pair.paired)
    family = [m for m in results if m.metric not in counts and m.metric not in twins]
    for m, p in zip(family, stats.holm([m.p_randomization for m in family]), strict=True):
        m.p_holm = p
    for m, p in zip(family, stats.holm([m.p_ttest for m in family]), strict=True):
        m.p_ttest_holm = p
    by_name = {m.metric: m for m in results}
    for m in results:
        m.tested = m in family
        if m.metric in counts:
            m.p_holm = m.p_ttest_holm = None
            m.verdict = verdicts.COUNT
            continue
        if m.metric in twins:
            m.same_as = twins[m.metric]
            m.p_holm, m.p_ttest_holm = by_name[m.same_as].p_holm, by_name[m.same_as].p_ttest_holm
        m.verdict = verdicts.verdict(m.diff, m.p_holm, alpha, m.lower_is_better)
        m.mde = minimum_detectable_effect(m.se, alpha=alpha / max(1, len(family)))
        if m.tested:
            m.notes = verdicts.notes(m.metric, n=m.n, diffs=m.diffs, ci=(m.ci_low, m.ci_high),
                                     confidence=confidence, p_raw=m.p_randomization,
                                     p_adjusted=m.p_holm, family=len(family), alpha=alpha,
                                     units=m.units, design_effect=m.design_effect,
                                     clusters=m.clusters)


# --- N runs: the one model (two runs: its pair_view) ----------------------------------------
@dataclass
class PairTest:
    """One paired test of a table: run ``j`` against run ``i`` (``diff`` = j − i)."""

    i: int
    j: int
    result: MetricComparison
    p_adjusted: float | None = None
    """Holm-adjusted across every test of the table."""


@dataclass
class Table:
    """One scope (overall, or one member of a group key): means per metric and run, and tests."""

    key: str | None
    member: str | None
    metrics: list[str]
    means: dict[str, list[float | None]]
    n: dict[str, int]
    """Cases shared by every run that carry the metric (the means' cases)."""
    lower: dict[str, bool]
    tests: list[PairTest] = field(default_factory=list)
    twins: dict[str, str] = field(default_factory=dict)
    """Metric -> the earlier metric it equals case by case in every run (shares its test)."""
    counts: set[str] = field(default_factory=set)
    """Count metrics (shown, not tested)."""
    also: tuple[str, ...] = ()
    """Other group keys whose member has exactly this table's cases (shown once, here)."""

    def test(self, metric: str, i: int, j: int) -> PairTest | None:
        for t in self.tests:
            if t.result.metric == metric and {t.i, t.j} == {i, j}:
                return t
        return None

    def best(self, metric: str) -> list[int]:
        """Runs with the best mean (ties all marked; direction-aware)."""
        vals = [(v, k) for k, v in enumerate(self.means[metric]) if v is not None]
        if not vals:
            return []
        top = (min if self.lower[metric] else max)(v for v, _ in vals)
        return [k for v, k in vals if abs(v - top) <= 1e-12]

    def marks(self, metric: str, k: int, alpha: float) -> tuple[list[int], list[int]]:
        """(runs that run ``k`` is significantly better than, … significantly worse than)."""
        better, worse = [], []
        for t in self.tests:
            if t.result.metric != metric or k not in (t.i, t.j) or t.p_adjusted is None \
                    or t.p_adjusted >= alpha or not t.result.diff:
                continue
            other = t.j if k == t.i else t.i
            j_better = t.result.diff < 0 if t.result.lower_is_better else t.result.diff > 0
            (better if j_better == (k == t.j) else worse).append(other)
        return sorted(better), sorted(worse)

    def to_dict(self, alpha: float) -> dict:
        return {
            "key": self.key, "member": self.member, "also": list(self.also), "metrics": [{
                "metric": m, "n": self.n[m], "lower_is_better": self.lower[m],
                "means": self.means[m], "best": self.best(m),
                "better_than": [self.marks(m, k, alpha)[0] for k in range(len(self.means[m]))],
                "worse_than": [self.marks(m, k, alpha)[1] for k in range(len(self.means[m]))],
                "tested": m not in self.counts and m not in self.twins,
                "same_as": self.twins.get(m), "count": m in self.counts,
            } for m in self.metrics],
            "tests": [{"run_a": t.i, "run_b": t.j, "p_adjusted": t.p_adjusted,
                       **{k: v for k, v in t.result.to_dict().items()
                          if k not in ("p_holm", "p_ttest_holm", "improved", "regressed")},
                       "improved": len(t.result.improved), "regressed": len(t.result.regressed)}
                      for t in self.tests],
        }


@dataclass
class NWayComparison:
    task: str | None
    runs: list[dict]
    labels: list[str]
    pairs: str
    overall: Table
    groups: dict[str, list[Table]]
    pair_results: dict[tuple[int, int], list[MetricComparison]]
    """Overall tests per pair with their flipped cases (``p_holm`` across that pair's metrics,
    as in the two-run compare)."""
    alpha: float
    confidence: float
    resamples: int
    seed: int | None
    warnings: list[str] = field(default_factory=list)
    """A run given twice; per pair and metric: a CI excluding 0 beside a Holm p >= alpha,
    an n too small to detect the observed difference; a run that stopped when decided."""
    sequential: dict[int, dict] = field(default_factory=dict)
    """Per run (its index) decided with ``--stop-when-decided``: its ``sequential`` section
    (decision, anytime-valid interval against its own baseline)."""
    pairings: dict[tuple[int, int], PairedCases] = field(default_factory=dict, repr=False)
    """Per tested pair: its two runs' cases paired by id (what each test reads)."""
    count_results: dict[tuple[int, int], list[MetricComparison]] = field(
        default_factory=dict, repr=False)
    """Per tested pair: the count metrics (shown, never tested: verdict ``count``)."""

    def pair_metrics(self, i: int, j: int) -> list[MetricComparison]:
        """Every metric of the pair (its tests and its counts) in the table's order."""
        by = {m.metric: m for m in [*self.pair_results[(i, j)], *self.count_results[(i, j)]]}
        return [by[m] for m in self.overall.metrics if m in by]

    def pair_view(self) -> Comparison:
        """A model of two runs read as B (run 1) against A (run 0): the two-run
        :class:`Comparison`. With two runs Holm's family of the pair is the table's, so each
        figure and verdict is the table's."""
        pair, results = self.pairings[(0, 1)], self.pair_metrics(0, 1)
        seq = self.sequential.get(1)
        return Comparison(
            task=self.task, run_a=self.runs[0], run_b=self.runs[1], paired=len(pair.paired),
            only_a=[c for c in pair.ids_a if c not in set(pair.ids_b)],
            only_b=[c for c in pair.ids_b if c not in set(pair.ids_a)],
            excluded=pair.excluded, metrics=results, alpha=self.alpha,
            confidence=self.confidence, resamples=self.resamples, seed=self.seed,
            warnings=verdicts.same_run_warning(self.runs) + verdicts.cluster_note(results)
            + [n for m in results for n in m.notes]
            + sequential_note(seq, "B", {str(self.runs[0].get("batch_id")): "A"}),
            sequential=seq)

    def tables(self) -> list[Table]:
        return [self.overall, *(t for ts in self.groups.values() for t in ts)]

    def regressions(self) -> list[PairTest]:
        """Overall tests where a run is significantly worse than the baseline (run 0)."""
        return [t for t in self.overall.tests if t.i == 0 and verdicts.verdict(
            t.result.diff, t.p_adjusted, self.alpha, t.result.lower_is_better) == verdicts.WORSE]

    def verdicts(self) -> list[dict]:
        """Per pair of the overall table and metric: the verdict of the second run against
        the first (better / worse / no detectable difference, significant after Holm over
        the table's tests)."""
        out = []
        for t in self.overall.tests:
            m = t.result
            out.append({"run_a": t.i, "run_b": t.j, "metric": m.metric, "diff": m.diff,
                        "p_adjusted": t.p_adjusted, "verdict": verdicts.verdict(
                            m.diff, t.p_adjusted, self.alpha, m.lower_is_better)})
        return out

    def headline(self) -> str:
        """One line per run against the baseline: metrics significantly worse and better."""
        lines = []
        for j in range(1, len(self.runs)):
            rows = [v for v in self.verdicts() if v["run_a"] == 0 and v["run_b"] == j]
            worse = [v["metric"] for v in rows if v["verdict"] == verdicts.WORSE]
            better = [v["metric"] for v in rows if v["verdict"] == verdicts.BETTER]
            # one line per run: a label or metric with a newline must not start another
            same = [t.result for t in self.overall.tests if (t.i, t.j) == (0, j)
                    and t.result.metric not in worse and t.result.metric not in better]
            lines.append(f"{letter(j)} ({_one(self.labels[j])}) against a "
                         f"({_one(self.labels[0])}): worse on {len(worse)}"
                         f"{': ' + ', '.join(map(_one, worse)) if worse else ''}; better on {len(better)}"
                         f"{': ' + ', '.join(map(_one, better)) if better else ''}; "
                         f"no detectable difference on {len(rows) - len(worse) - len(better)}"
                         f"{verdicts.detectable(same)}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "comparison_schema": "queryeval.compare-nway/1", "task": self.task,
            "runs": [{**r, "letter": letter(k), "label": self.labels[k]}
                     for k, r in enumerate(self.runs)],
            "pairs": self.pairs, "alpha": self.alpha, "confidence": self.confidence,
            "resamples": self.resamples, "seed": self.seed, "headline": self.headline(),
            "warnings": self.warnings, "verdicts": self.verdicts(),
            "overall": self.overall.to_dict(self.alpha),
            "groups": {k: [t.to_dict(self.alpha) for t in ts] for k, ts in self.groups.items()},
            "flips": [{"run_a": i, "run_b": j, "metric": m.metric,
                       "improved": [f.case_id for f in m.improved],
                       "regressed": [f.case_id for f in m.regressed]}
                      for (i, j), ms in self.pair_results.items() for m in ms],
            "regressions": [{"run": t.j, "metric": t.result.metric, "p_adjusted": t.p_adjusted}
                            for t in self.regressions()],
            **({"sequential": [{"run": k, "letter": letter(k), **seq}
                               for k, seq in sorted(self.sequential.items())]}
               if self.sequential else {}),
        }


def _one(name: Any) -> str:
    return one_line(name, None)


def run_label(info: dict) -> str:
    """A run's label: the one stored in its batch record (``--name`` or the default of
    :func:`queryeval.run.results.default_label`), else its system, its responses file's
    name, else its batch id."""
    if isinstance(info.get("label"), str) and info["label"]:
        return info["label"]
    system = info.get("system")
    if isinstance(system, dict):
        system = system.get("name") or system.get("kind")
    if system:
        return str(system)
    responses = info.get("responses")
    if responses:
        return Path(str(responses)).name
    return str(info.get("batch_id", ""))[:8]


def _adjust(tests: list[PairTest], twins: dict[str, str], counts: set[str]) -> None:
    """Holm across the table's tests of distinct, tested metrics (compare_verdict): a count
    is not tested, a metric equal case by case to an earlier one takes that one's test."""
    family = [t for t in tests if t.result.metric not in counts and t.result.metric not in twins]
    for t, p in zip(family, stats.holm([t.result.p_randomization for t in family]), strict=True):
        t.p_adjusted = p
    adjusted = {(t.result.metric, t.i, t.j): t.p_adjusted for t in family}
    for t in tests:
        if t.result.metric in twins:
            t.p_adjusted = adjusted.get((twins[t.result.metric], t.i, t.j))


def _table(key: str | None, member: str | None, per: list[dict[str, dict[str, float]]],
           common: list[str], metrics: list[str], task: Any,
           pairs: dict[tuple[int, int], PairedCases], kw: dict, cases: set[str] | None) -> Table:
    means: dict[str, list[float | None]] = {}
    n: dict[str, int] = {}
    for m in metrics:
        ids = [c for c in common if (cases is None or c in cases) and all(m in p[c] for p in per)]
        n[m] = len(ids)
        means[m] = [exact_mean([p[c][m] for c in ids]) if ids else None for p in per]
    table = Table(key, member, list(metrics), means, n,
                  {m: lower_is_better(task, m) for m in metrics})
    ids = [c for c in common if cases is None or c in cases]
    twins, counts = verdicts.classify(metrics, per, ids)
    table.twins, table.counts = twins, counts
    for (i, j), pair in pairs.items():
        for res in compare_pair_metrics(pair, [m for m in metrics if m not in counts],
                                        cases=cases, **kw):
            table.tests.append(PairTest(i, j, res))
    _adjust(table.tests, twins, counts)
    return table


def distinct_groups(members: dict[str, dict[str, set[str]]]
                    ) -> list[tuple[str, str, set[str], tuple[str, ...]]]:
    """The one membership rule for group sections: (key, member, cases, other keys), keys and
    members sorted; a member with no case is left out, and a member with exactly the cases
    of an earlier one (the retrieval suite's ``tag`` beside its ``dataset``) is shown once,
    under the earlier key, naming the later keys (``tag``, or ``tag = x`` for another name)."""
    out: list[tuple[str, str, set[str], tuple[str, ...]]] = []
    seen: dict[frozenset[str], int] = {}
    for key in sorted(members):
        for member, cases in sorted(members[key].items()):
            if not cases:
                continue
            first = seen.get(frozenset(cases))
            if first is not None:
                k, m, cs, also = out[first]
                out[first] = (k, m, cs, (*also, key if member == m else f"{key} = {member}"))
                continue
            seen[frozenset(cases)] = len(out)
            out.append((key, member, cases, ()))
    return out


def _check(n_runs: int, pairs: str, alpha: float, resamples: int) -> list[tuple[int, int]]:
    if n_runs < 2:
        raise ConfigError(f"compare needs at least two runs, got {n_runs}")
    if pairs not in ("baseline", "all"):
        raise ConfigError(f"pairs must be 'baseline' or 'all', got {pairs!r}")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha}")
    if resamples < 1:
        raise ConfigError(f"resamples must be >= 1, got {resamples}")
    if pairs == "baseline":
        return [(0, j) for j in range(1, n_runs)]
    return [(i, j) for i in range(n_runs) for j in range(i + 1, n_runs)]


def _assemble(task_name: str | None, infos: list[dict], per: list[dict[str, dict[str, float]]],
              common: list[str], chosen: list[str], task: Any,
              paired: dict[tuple[int, int], PairedCases],
              members: dict[str, dict[str, set[str]]], pairs: str, alpha: float,
              confidence: float, resamples: int, seed: int | None,
              exact_max_n: int, sequential: dict[int, dict] | None = None) -> NWayComparison:
    kw = {"confidence": confidence, "resamples": resamples, "seed": seed,
          "exact_max_n": exact_max_n}
    overall = _table(None, None, per, common, chosen, task, paired, kw, None)
    pair_results: dict[tuple[int, int], list[MetricComparison]] = {}
    count_results: dict[tuple[int, int], list[MetricComparison]] = {}
    for (i, j), pair in paired.items():
        res = [t.result for t in overall.tests if (t.i, t.j) == (i, j)]
        conclude(res, pair, alpha=alpha, confidence=confidence)
        pair_results[(i, j)] = res
        count_results[(i, j)] = compare_pair_metrics(
            pair, [m for m in chosen if m in overall.counts], **kw)
        for m in count_results[(i, j)]:  # as conclude leaves a count: shown, not tested
            m.verdict, m.tested = verdicts.COUNT, False
    group_tables: dict[str, list[Table]] = {}
    for key, member, cs, also in distinct_groups(members):
        table = _table(key, member, per, common, chosen, task, paired, kw, cs)
        table.also = also
        group_tables.setdefault(key, []).append(table)
    warnings = verdicts.same_run_warning(infos) + [
        f"{letter(i)} → {letter(j)}: {note}" for (i, j), res in pair_results.items()
        for note in verdicts.cluster_note(res) + [n for m in res for n in m.notes]]
    sequential = sequential or {}
    names = {str(info.get("batch_id")): letter(k) for k, info in enumerate(infos)}
    for k, seq in sorted(sequential.items()):  # as the two-run compare says of B
        warnings += sequential_note(seq, letter(k), names, baseline=letter(0))
    return NWayComparison(task_name, infos, [run_label(i) for i in infos], pairs, overall,
                          group_tables, pair_results, alpha, confidence, resamples, seed,
                          warnings, sequential, paired, count_results)


def compare_many(runs: Sequence[str | Path | RunResults], metrics: Sequence[str] | None = None, *,
                 pairs: Literal["baseline", "all"] = "baseline", groups: bool = True,
                 alpha: float = 0.05, confidence: float = 0.95, resamples: int = 10_000,
                 seed: int | None = 0, exact_max_n: int = 20,
                 cases: set[str] | None = None) -> NWayComparison:
    """Compare two or more runs of one task; the first is the baseline; ``cases``: only
    these case ids (a platinum subset).

    ``pairs="baseline"`` tests every run against the first; ``"all"`` tests every pair.
    Raises ConfigError for fewer than two runs, runs of different tasks, an unknown metric
    (it must be a per-case metric of every run), or out-of-range settings."""
    index = _check(len(runs), pairs, alpha, resamples)
    loaded = [RunResults.open(r) for r in runs]
    keep = cases
    paired = {(i, j): pair_runs(loaded[i], loaded[j], cases) for i, j in index}
    chosen_sets = [choose_metrics(p, metrics) for p in paired.values()]
    chosen = [m for m in chosen_sets[0] if all(m in s for s in chosen_sets[1:])]
    task = next((r.task for r in loaded if r.task is not None), None)
    # every figure from the run model: each case's mean over its attempts (as the two-run
    # compare pairs on), cases in run A's order, present in every run
    cases = [{c.case_id: c for c in run.cases} for run in loaded]
    common = [cid for cid in cases[0] if all(cid in cs for cs in cases[1:])
              and (keep is None or cid in keep)]
    if not common:
        raise ConfigError(f"the runs share no case: no case id is in all {len(loaded)} runs "
                          f"({', '.join(f'{len(cs)} in {r.label}' for cs, r in zip(cases, loaded, strict=True))})")
    if any(run.on_error == "skip" for run in loaded):
        common = [cid for cid in common if not any(cs[cid].errored for cs in cases)]
    per = [{cid: dict(cs[cid].means) for cid in common} for cs in cases]
    members: dict[str, dict[str, set[str]]] = {}
    if groups:
        for cid in common:
            for key, values in cases[0][cid].labels.items():
                for v in values:
                    members.setdefault(key, {}).setdefault(v, set()).add(cid)
    sequential = {k: seq for k, run in enumerate(loaded) if (seq := sequential_of(run))}
    return _assemble(loaded[0].task_name, [_run_info(r) for r in loaded], per, common, chosen,
                     task, paired, members, pairs, alpha, confidence, resamples, seed,
                     exact_max_n, sequential)


DEFAULT_TREC_METRICS = ("ndcg@10", "map", "mrr@10", "recall@100")


def compare_trec(qrels: str | Path, runs: Sequence[str | Path], metrics: Sequence[str] = (), *,
                 pairs: Literal["baseline", "all"] = "baseline", alpha: float = 0.05,
                 confidence: float = 0.95, resamples: int = 10_000, seed: int | None = 0,
                 exact_max_n: int = 20) -> NWayComparison:
    """Compare TREC run files on one qrels file, query by query (the cases are the judged
    queries; a query a run leaves out scores 0, as ``trec_eval -c``), with the same tests
    and tables as :func:`compare_many`. Ranking metrics by name (``ndcg@10``, ``map``, …)."""
    from queryeval.metrics.ranking import parse_metrics
    from queryeval.suite.trec import evaluate_files

    index = _check(len(runs), pairs, alpha, resamples)
    names = list(dict.fromkeys(metrics or DEFAULT_TREC_METRICS))
    try:
        parse_metrics(names)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    per: list[dict[str, dict[str, float]]] = []
    for run in runs:
        try:
            res = evaluate_files(qrels, run, names, per_query=True, missing_query="zero")
        except ValueError as exc:
            raise ConfigError(f"{run}: {exc}") from None
        per.append({q: {m: float(res.per_query[m][k]) for m in names}
                    for k, q in enumerate(res.qids)})
    common = [q for q in per[0] if all(q in p for p in per[1:])]
    paired = {}
    for i, j in index:
        paired[(i, j)] = PairedCases(None, None, list(per[i]), list(per[j]), common, [], None,
                                     {q: per[i][q] for q in common},
                                     {q: per[j][q] for q in common})
    infos = [{"batch_id": Path(r).name, "label": trec_run_tag(r), "path": str(r),
              "status": "trec run", "system": None, "responses": str(r), "cases": len(p),
              "timestamp": None, "task_options": {}}
             for r, p in zip(runs, per, strict=True)]
    return _assemble("trec", infos, per, common, names, None, paired, {}, pairs, alpha,
                     confidence, resamples, seed, exact_max_n)


def trec_run_tag(path: str | Path) -> str:
    """A TREC run's label: the run tag (column 6) of its first line, as ranx and trec_eval
    name runs; the file's name when the line has none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if parts:
                    return parts[5] if len(parts) >= 6 else Path(path).name
    except OSError:
        pass
    return Path(path).name


def check_regression(comp: Comparison | NWayComparison) -> None:
    """The ``--fail-on-regression`` gate of every compare: raise GateFailure naming each
    metric significantly worse than the baseline (Holm-adjusted randomization p < alpha).
    Two runs read as B against A (:class:`Comparison`) name A and B and the cases that
    regressed; the table of N runs names each run by its letter and label."""
    if isinstance(comp, Comparison):
        head, lines = "significant regression: ", [
            f"{m.metric}: {m.mean_a:.4f} (A) -> {m.mean_b:.4f} (B), difference {m.diff:+.4f}, "
            f"Holm-adjusted p = {m.p_holm:.4g} < alpha {comp.alpha:g} "
            f"({len(m.regressed)} case(s) regressed)" for m in comp.regressions()]
    else:
        head, lines = "significant regression against the baseline: ", [
            f"{letter(t.j)} ({comp.labels[t.j]}) {t.result.metric}: {t.result.mean_a:.4f} -> "
            f"{t.result.mean_b:.4f}, Holm-adjusted p = {t.p_adjusted:.4g} < alpha {comp.alpha:g}"
            for t in comp.regressions()]
    if lines:
        raise GateFailure(head + "; ".join(lines))
