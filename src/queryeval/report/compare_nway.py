"""Compare many runs of the same task at once: one table per scope (overall, each group),
rows = metrics, columns = runs, the best mean marked, and significance marks from paired
randomization tests against the baseline (the first run) or between all pairs.

Every pairwise test is exactly the two-run test of :mod:`queryeval.report.compare` (same
pairing, same seed, same resamples: the raw p-value of a pair equals
``compare_runs(A, B).metric(m).p_randomization``). Holm's adjustment runs across every test
of one table: ``pairs × metrics`` (``pairs`` = N − 1 against the baseline, or N(N − 1)/2).
Means in a table are over the cases shared by all runs (so the columns are comparable); each
test is over the cases its two runs share. Outputs: console, Markdown, LaTeX (booktabs), CSV,
JSON and xlsx here; HTML in :mod:`queryeval.report.html_compare`. See docs/compare.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from queryeval.errors import ConfigError, GateFailure
from queryeval.io.safetext import one_line
from queryeval.metrics import stats
from queryeval.report import compare_verdict as verdicts
from queryeval.report.compare import (
    LoadedRun,
    MetricComparison,
    PairedCases,
    _run_info,
    choose_metrics,
    compare_pair_metrics,
    conclude,
    load_run,
    lower_is_better,
    pair_runs,
    sequential_note,
    sequential_of,
)
from queryeval.report.nway_cells import (  # noqa: F401 - letter re-exported
    LETTERS,
    _cells,
    _legend,
    _num,
    _scope,
    letter,
)
from queryeval.run.repeats import exact_mean
from queryeval.run.results import GROUP_FIELDS, record_groups  # noqa: E402,F401 - re-exported


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
    for i, j in paired:
        res = [t.result for t in overall.tests if (t.i, t.j) == (i, j)]
        conclude(res, paired[(i, j)], alpha=alpha, confidence=confidence)
        pair_results[(i, j)] = res
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
                          warnings, sequential)


def compare_many(runs: Sequence[str | Path | LoadedRun], metrics: Sequence[str] | None = None, *,
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
    loaded = [load_run(r) for r in runs]
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


def check_regression(comp: NWayComparison) -> None:
    """``--fail-on-regression``: raise GateFailure naming every run and metric significantly
    worse than the baseline (Holm-adjusted across the overall table's tests)."""
    bad = comp.regressions()
    if not bad:
        return
    raise GateFailure("significant regression against the baseline: " + "; ".join(
        f"{letter(t.j)} ({comp.labels[t.j]}) {t.result.metric}: {t.result.mean_a:.4f} -> "
        f"{t.result.mean_b:.4f}, Holm-adjusted p = {t.p_adjusted:.4g} < alpha {comp.alpha:g}"
        for t in bad))


# --- outputs: report/nway_output.py (cells, legend and scope: report/nway_cells.py) -------------
_OUTPUTS = ("to_markdown", "latex_escape", "to_latex", "csv_rows", "to_csv", "write",
            "write_xlsx", "console_renderables")


def __getattr__(name: str):  # the outputs' former home: compare_nway.to_markdown etc.
    if name in _OUTPUTS:
        from queryeval.report import nway_output

        return getattr(nway_output, name)
    raise AttributeError(name)
