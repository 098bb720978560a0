"""Compare two runs of the same task case by case: differences, significance, flipped cases.

Cases are paired by ``case_id`` and read from the run model
(:class:`queryeval.run.results.RunResults`): each case's per-case figures are its exact mean
over its attempts (one attempt without ``--repeats``; a case errored when any attempt did),
so the N-way compare, the viewer and this one pair on the same values with n = cases. For
every per-case metric the comparison holds the means of A and B, the difference B − A with a
paired bootstrap CI, a paired randomization (sign-flip) test and a paired t-test, Holm-adjusted
p-values across the distinct tested metrics, the verdict and warnings
(:mod:`queryeval.report.compare_verdict`), and the cases that improved or regressed.
``load_run``/``LoadedRun`` are the run model's former names. Outputs: console, JSON and xlsx
in :mod:`queryeval.report.compare_output`, HTML in :mod:`queryeval.report.html_compare`.
See docs/compare.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError, GateFailure
from queryeval.metrics import stats
from queryeval.report import compare_verdict as verdicts
from queryeval.report.planning import minimum_detectable_effect
from queryeval.run.repeats import exact_mean
from queryeval.run.results import (  # noqa: F401 - re-exported
    RunResults,
    case_metrics,
    default_case_metrics,
    lower_is_better,
    resolve_batch,
)

#: Changes smaller than this are float noise, not flips.
FLIP_EPS = 1e-12


# --- reading runs (run/results.py: one model of a run's per-case results) -------------------
LoadedRun = RunResults
"""The run model (kept under its former name)."""
load_run = RunResults.open


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

    def worse(self) -> bool:
        """B is worse than A on this metric (direction-aware)."""
        if self.diff is None:
            return False
        return self.diff > 0 if self.lower_is_better else self.diff < 0

    def to_dict(self) -> dict:
        out = asdict(self)
        out.pop("diffs")
        out.pop("units")
        out.pop("se")
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


def compare_runs(run_a: str | Path | LoadedRun, run_b: str | Path | LoadedRun,
                 metrics: Sequence[str] | None = None, *, alpha: float = 0.05,
                 confidence: float = 0.95, resamples: int = 10_000, seed: int | None = 0,
                 exact_max_n: int = 20, cases: set[str] | None = None) -> Comparison:
    """Pair two runs' cases by id and compare every per-case metric (or those named);
    ``cases``: only these case ids (a platinum subset).

    Raises ConfigError when the runs are of different task kinds, when a named metric is not
    a per-case metric of both runs, or when ``alpha``/``resamples`` are out of range.
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha}")
    if resamples < 1:
        raise ConfigError(f"resamples must be >= 1, got {resamples}")
    a, b = load_run(run_a), load_run(run_b)
    pair = pair_runs(a, b, cases)
    chosen = choose_metrics(pair, metrics)
    results = compare_pair_metrics(pair, chosen, confidence=confidence, resamples=resamples,
                                   seed=seed, exact_max_n=exact_max_n)
    conclude(results, pair, alpha=alpha, confidence=confidence)
    seq = sequential_of(b)
    return Comparison(
        task=a.task_name, run_a=_run_info(a), run_b=_run_info(b), paired=len(pair.paired),
        only_a=[c for c in pair.ids_a if c not in set(pair.ids_b)],
        only_b=[c for c in pair.ids_b if c not in set(pair.ids_a)],
        excluded=pair.excluded, metrics=results, alpha=alpha, confidence=confidence,
        resamples=resamples, seed=seed,
        warnings=verdicts.same_run_warning([_run_info(a), _run_info(b)])
        + verdicts.cluster_note(results) + [n for m in results for n in m.notes]
        + sequential_note(seq, "B", {a.batch_id: "A"}),
        sequential=seq,
    )


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


def check_regression(comparison: Comparison) -> None:
    """The ``--fail-on-regression`` gate: raise GateFailure naming every metric where B is
    significantly worse than A (Holm-adjusted randomization p < alpha)."""
    bad = comparison.regressions()
    if not bad:
        return
    lines = [
        f"{m.metric}: {m.mean_a:.4f} (A) -> {m.mean_b:.4f} (B), difference {m.diff:+.4f}, "
        f"Holm-adjusted p = {m.p_holm:.4g} < alpha {comparison.alpha:g} "
        f"({len(m.regressed)} case(s) regressed)"
        for m in bad
    ]
    raise GateFailure("significant regression: " + "; ".join(lines))


# --- outputs: report/compare_output.py (console, JSON, xlsx); HTML: report/html_compare.py --
def __getattr__(name: str):  # the outputs' former home: report.compare.write_xlsx etc.
    if name in ("console_renderables", "write_json", "write_xlsx", "_sheet_title"):
        from queryeval.report import compare_output

        return getattr(compare_output, name)
    raise AttributeError(name)
