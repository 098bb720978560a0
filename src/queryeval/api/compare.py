"""``compare``: the statistics of ``queryeval compare`` (paired bootstrap CI, sign-flip and
t tests, Holm adjustment, flipped cases) as a Python object: two runs as
:class:`Comparison` (B against A), more as :class:`MultiComparison` (one table), both views
of the one model of :mod:`queryeval.report.compare`."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from queryeval.api.text import render_text


def _loaded(run: Any) -> Any:
    """A :class:`~queryeval.api.run.Run`'s loaded log (duck-typed: ``api.run`` imports this
    module for ``Run.compare``, so this one does not import it back); paths pass through."""
    load = getattr(run, "_load", None)
    return load() if callable(load) else run


@dataclass(frozen=True)
class SequentialDecision:
    """A compared run decided with ``--stop-when-decided`` (``sequential=``): its decision and
    anytime-valid interval against its own baseline, as the run recorded them
    (``run.metrics["sequential"]``), and the line the compare prints about it."""

    run: int
    """Its index among the compared runs (a two-run compare: 1, run B)."""
    letter: str
    """Its name in the compare: ``B`` (two runs) or the N-way letter (``b``, ``c`` ...)."""
    label: str
    decision: Literal["better", "worse", "equivalent", "undecided"]
    interval: tuple[float, float]
    """The anytime-valid interval for the run minus its baseline (positive: better)."""
    metric: str
    alpha: float
    margin: float | None
    cases_used: int
    cases: int
    calls_saved: int
    baseline: str
    """The baseline run it was decided against (its path as the run recorded it)."""
    baseline_run: int | None
    """The baseline's index among the compared runs; None when it is not one of them."""
    note: str
    """The warning the compare prints (:func:`queryeval.report.compare.sequential_note`)."""

    @classmethod
    def of(cls, run: int, section: dict, runs: list[dict], labels: list[str], *,
           two_runs: bool) -> SequentialDecision:
        """From run ``run``'s ``sequential`` section; ``runs``: the compared runs' infos
        (their batch ids name the baseline), ``two_runs``: named A and B as ``queryeval
        compare A B`` names them, else by the N-way letters."""
        from queryeval.report.compare import letter, sequential_note

        ids = [str(r.get("batch_id")) for r in runs]
        if two_runs:  # B's baseline is A, or named by its path
            who, first, names = "B", "A", {ids[0]: "A"}
        else:
            who, first, names = letter(run), letter(0), {i: letter(k) for k, i in enumerate(ids)}
        base = str(section.get("baseline_batch_id"))
        low, high = section["interval"]
        return cls(run=run, letter=who, label=labels[run], decision=section["decision"],
                   interval=(float(low), float(high)), metric=str(section["metric"]),
                   alpha=float(section["alpha"]), margin=section.get("margin"),
                   cases_used=int(section["cases_used"]), cases=int(section["cases"]),
                   calls_saved=int(section["calls_saved"]), baseline=str(section["baseline"]),
                   baseline_run=ids.index(base) if base in ids else None,
                   note=" ".join(sequential_note(section, who, names, baseline=first)))



class _Compared:
    """What both views of a comparison share: the wrapped model, its verdict, warnings,
    gate, console text and files (:mod:`queryeval.report.compare_output`)."""

    def __init__(self, raw: Any, platinum: dict | None = None) -> None:
        self.raw = raw
        """The underlying :class:`queryeval.report.compare.Comparison` (two runs) or
        :class:`queryeval.report.compare.NWayComparison`."""
        self.platinum = platinum
        """With ``cases=``: :func:`queryeval.report.platinum.platinum_shift` of the first
        metric (each run's mean on all shared cases and on the subset, the shift, both
        ranks, Spearman), also in ``to_json`` (``platinum_shift``) and ``to_html``."""

    @property
    def task(self) -> str | None:
        return self.raw.task

    @property
    def headline(self) -> str:
        """The verdict: per run against the baseline (B against A with two runs), the
        metrics significantly better or worse after Holm."""
        return self.raw.headline()

    @property
    def warnings(self) -> list[str]:
        return list(self.raw.warnings)

    def check(self) -> None:
        """Raise :class:`~queryeval.errors.GateFailure` when there is a regression."""
        from queryeval.report.compare import check_regression

        check_regression(self.raw)

    def to_dict(self) -> dict:
        """The ``--json`` document."""
        return self.raw.to_dict()

    def write(self, path: str | os.PathLike, kind: str | None = None) -> Path:
        """Write as ``kind`` (json, xlsx, html; N runs also md, tex, csv; default: from
        the suffix)."""
        from queryeval.report.compare_output import write
        from queryeval.report.platinum import add_shift

        kind = kind or Path(path).suffix.lstrip(".").lower()
        return add_shift(write(self.raw, path, kind), kind, self.platinum)

    def to_json(self, path: str | os.PathLike) -> Path:
        return self.write(path, "json")

    def to_xlsx(self, path: str | os.PathLike) -> Path:
        return self.write(path, "xlsx")

    def to_html(self, path: str | os.PathLike) -> Path:
        return self.write(path, "html")

    def renderables(self, details: bool = False) -> list:
        """What ``queryeval compare`` prints (``details``: ``--details``)."""
        from queryeval.report.compare_output import console_renderables

        return console_renderables(self.raw, details=details)

    def __str__(self) -> str:
        return render_text(self.renderables())


class Comparison(_Compared):
    """Run B against run A, case by case: the model of two runs read as one pair
    (wraps :class:`queryeval.report.compare.Comparison`)."""

    @property
    def paired(self) -> int:
        """Cases present in both runs (and counted)."""
        return self.raw.paired

    @property
    def metrics(self) -> list:
        """One :class:`~queryeval.report.compare.MetricComparison` per per-case metric."""
        return self.raw.metrics

    def metric(self, name: str) -> Any:
        return self.raw.metric(name)

    @property
    def regressions(self) -> list[str]:
        """Metrics where B is significantly worse than A (Holm-adjusted randomization
        p < alpha): the ones ``--fail-on-regression`` fails on."""
        return [m.metric for m in self.raw.regressions()]

    def to_pandas(self) -> Any:
        """One row per metric: n, means, difference B − A with its CI, p-values (raw and
        Holm-adjusted), counts of improved and regressed cases, ``regression``, the minimum
        detectable effect ``mde`` and, with clusters, ``clusters``, ``design_effect`` and
        ``effective_n``."""
        import pandas as pd

        bad = set(self.regressions)
        rows = [{
            "metric": m.metric, "n": m.n, "mean_a": m.mean_a, "mean_b": m.mean_b, "diff": m.diff,
            "ci_low": m.ci_low, "ci_high": m.ci_high, "p_randomization": m.p_randomization,
            "p_ttest": m.p_ttest, "p_holm": m.p_holm, "p_ttest_holm": m.p_ttest_holm,
            "improved": len(m.improved), "regressed": len(m.regressed),
            "lower_is_better": m.lower_is_better, "regression": m.metric in bad,
            "verdict": m.verdict, "tested": m.tested, "same_as": m.same_as, "mde": m.mde,
            **({"clusters": m.clusters, "design_effect": m.design_effect,
                "effective_n": m.effective_n} if m.clusters is not None else {}),
        } for m in self.raw.metrics]
        return pd.DataFrame(rows).set_index("metric") if rows else pd.DataFrame(rows)

    def flips(self) -> Any:
        """Every flipped case: metric, change (improved/regressed), case_id, name, a, b, delta."""
        import pandas as pd

        rows = [{"metric": m.metric, "change": kind, "case_id": f.case_id, "name": f.name,
                 "a": f.a, "b": f.b, "delta": f.delta}
                for m in self.raw.metrics
                for kind, flips in (("improved", m.improved), ("regressed", m.regressed))
                for f in flips]
        columns = ["metric", "change", "case_id", "name", "a", "b", "delta"]
        return pd.DataFrame(rows, columns=columns)

    @property
    def labels(self) -> list[str]:
        """The labels of A and B (``name=`` / ``--name``, else the system's)."""
        return [str(self.raw.run_a.get("label")), str(self.raw.run_b.get("label"))]

    @property
    def verdicts(self) -> dict[str, str]:
        """Per metric: better, worse, no detectable difference, count (not tested)."""
        return {m.metric: m.verdict for m in self.raw.metrics}

    @property
    def sequential(self) -> SequentialDecision | None:
        """B's decision when B was run with ``--stop-when-decided`` (None otherwise)."""
        seq = self.raw.sequential
        if seq is None:
            return None
        return SequentialDecision.of(1, seq, [self.raw.run_a, self.raw.run_b], self.labels,
                                     two_runs=True)

    def __repr__(self) -> str:
        return (f"<queryeval.Comparison {self.task} {self.paired} paired cases, "
                f"{len(self.regressions)} regression(s)>")

    def _repr_html_(self) -> str:
        e = html.escape

        def f(v: Any, spec: str = ".4f") -> str:
            return "—" if v is None else e(format(v, spec))

        bad = set(self.regressions)
        RED = ' style="color:#b00"'  # noqa: N806
        rows = "".join(
            f"<tr{RED if m.metric in bad else ''}><td>{e(m.metric)}</td>"
            f"<td>{m.n}</td><td>{f(m.mean_a)}</td><td>{f(m.mean_b)}</td>"
            f"<td>{f(m.diff, '+.4f')}</td><td>[{f(m.ci_low, '+.4f')}, {f(m.ci_high, '+.4f')}]</td>"
            f"<td>{f(m.p_holm, '.4g')}</td><td>{e(m.verdict)}</td></tr>"
            for m in self.raw.metrics)
        a, b = self.raw.run_a, self.raw.run_b
        head = (f"<b>queryeval compare</b> · task <code>{e(str(self.task))}</code> · A "
                f"{e(str(a.get('label')))} <code>{e(str(a.get('batch_id'))[:8])}</code> · B "
                f"{e(str(b.get('label')))} <code>{e(str(b.get('batch_id'))[:8])}</code> · "
                f"{self.paired} paired cases, "
                f"{len(self.raw.only_a)} only in A, {len(self.raw.only_b)} only in B")
        cols = "".join(f"<th>{e(c)}</th>" for c in (
            "metric", "n", "mean A", "mean B", "B − A", f"{self.raw.confidence:.0%} CI",
            "p Holm", "verdict"))
        style = RED if bad else ""
        warn = "".join(f"<p>warning: {e(w)}</p>" for w in self.raw.warnings)
        from queryeval.report.html_charts import compare_charts

        # the compare HTML's forest plot (it styles itself: no page stylesheet needed)
        forest = "".join(c["svg"] for c in compare_charts(self.raw) if c["id"] == "forest")
        return (f"<div class='queryeval-compare'><p>{head}</p><p{style}><b>"
                f"{e(self.raw.headline())}</b></p>{warn}{forest}"
                f"<table><tr>{cols}</tr>{rows}</table></div>")


class MultiComparison(_Compared):
    """Two or more runs side by side (wraps :class:`queryeval.report.compare.NWayComparison`):
    one table per scope (overall, each group), rows = metrics, columns = runs."""

    @property
    def labels(self) -> list[str]:
        return self.raw.labels

    @property
    def overall(self) -> Any:
        """The overall :class:`~queryeval.report.compare.Table`."""
        return self.raw.overall

    @property
    def groups(self) -> dict[str, list]:
        return self.raw.groups

    def pair(self, i: int, j: int) -> list:
        """The overall tests of run ``j`` against run ``i`` (MetricComparisons with flips)."""
        return self.raw.pair_results[(i, j)]

    @property
    def regressions(self) -> list[tuple[int, str]]:
        """(run index, metric) significantly worse than the baseline."""
        return [(t.j, t.result.metric) for t in self.raw.regressions()]

    def to_pandas(self) -> Any:
        """The overall table: one row per metric, one column per run, named by its letter
        and label as in the CLI's exports (``a: responses.jsonl``), so runs whose labels
        match still get a column each."""
        import pandas as pd

        from queryeval.report.compare import letter

        t = self.raw.overall
        columns = [f"{letter(k)}: {lb}" for k, lb in enumerate(self.labels)]
        return pd.DataFrame([[t.means[m][k] for k in range(len(columns))] for m in t.metrics],
                            index=list(t.metrics), columns=columns)

    def to_markdown(self) -> str:
        from queryeval.report.compare_output import to_markdown

        return to_markdown(self.raw)

    def to_latex(self) -> str:
        from queryeval.report.compare_output import to_latex

        return to_latex(self.raw)

    def to_csv(self) -> str:
        from queryeval.report.compare_output import to_csv

        return to_csv(self.raw)

    @property
    def sequential(self) -> list[SequentialDecision]:
        """The N-way sequential decisions: one per compared run that was run with
        ``--stop-when-decided``, in run order (empty when none was); each names its baseline
        by its index when it is one of the compared runs (``baseline_run``)."""
        return [SequentialDecision.of(k, seq, self.raw.runs, self.labels, two_runs=False)
                for k, seq in sorted(self.raw.sequential.items())]

    def __repr__(self) -> str:
        return (f"<queryeval.MultiComparison {self.task} {len(self.labels)} runs, "
                f"{len(self.regressions)} regression(s)>")

    def _repr_html_(self) -> str:
        from queryeval.report.html_charts import nway_charts
        from queryeval.report.html_compare import nway_tables

        forest = "".join(c["svg"] for c in nway_charts(self.raw) if c["id"] == "forest")
        return (f"<div class='queryeval-compare'>{forest}"
                f"{nway_tables(self.raw, groups=False)}</div>")


def compare(*runs: Any, metrics: Sequence[str] | None = None, pairs: str | None = None,
            groups: bool = True, alpha: float = 0.05, confidence: float = 0.95,
            resamples: int = 10_000, seed: int | None = 0,
            cases: str | os.PathLike | Sequence[str] | None = None) -> Any:
    """Compare runs (Runs or run-log paths), pairing cases by id; the first is the baseline.
    ``cases``: compare on these cases only (a suite file, e.g. the platinum suite of
    ``qe.audit(..., write_platinum=...)``, or case ids).

    Two runs (and no ``pairs``): a :class:`Comparison` of B against A, the statistics of
    ``queryeval compare A B``. Three or more, or ``pairs`` given (``"baseline"``: each run
    against the first; ``"all"``: every pair): a :class:`MultiComparison`. For backward
    compatibility a list of metric names may follow two runs positionally.

    Raises ConfigError for runs of different tasks or an unknown metric name."""
    runs_list = list(runs)
    if len(runs_list) == 3 and isinstance(runs_list[2], (list, tuple)):
        metrics = runs_list.pop()
    keep = None
    if cases is not None:
        from queryeval.report.platinum import case_ids

        keep = case_ids(cases)
    if len(runs_list) == 2 and pairs is None:
        from queryeval.report.compare import compare_runs

        a, b = runs_list
        loaded = [_loaded(a), _loaded(b)]
        two = Comparison(compare_runs(loaded[0], loaded[1], list(metrics) if metrics else None,
                                      alpha=alpha, confidence=confidence, resamples=resamples,
                                      seed=seed, cases=keep))
        if keep is not None:
            two.platinum = _shift(loaded, keep, metrics, two.metrics[0].metric)
        return two
    from queryeval.report.compare import compare_many

    loaded = [_loaded(r) for r in runs_list]
    many = MultiComparison(compare_many(loaded, list(metrics) if metrics else None,
                                        pairs=pairs or "baseline",  # type: ignore[arg-type]
                                        groups=groups, alpha=alpha, confidence=confidence,
                                        resamples=resamples, seed=seed, cases=keep))
    if keep is not None:
        many.platinum = _shift(loaded, keep, metrics, many.raw.overall.metrics[0])
    return many


def _shift(runs: list, keep: set[str], metrics: Sequence[str] | None, first: str) -> dict:
    """The platinum shift of the first metric asked for (else the comparison's first)."""
    from queryeval.report.platinum import platinum_shift

    return platinum_shift(runs, keep, metrics[0] if metrics else first)
