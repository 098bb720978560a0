"""``queryeval compare RUN_A RUN_B [RUN_C …]``: paired comparison of runs of the same task
(two runs: B against A with flipped cases; more: one table, runs as columns), or of TREC run
files with ``--qrels``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import typer

from queryeval.cli.console import console


def command(
    runs: list[Path] = typer.Argument(
        ..., metavar="RUN", help="Runs (batch_<id>.json or one-run folders; with --qrels: TREC run files). "
        "The first is the baseline."),
    metric: list[str] = typer.Option([], "--metric", "-m", help="Per-case metric to compare (repeatable; default: all; with --qrels: ranking metrics such as ndcg@10)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level (Holm-adjusted across the tests)."),
    pairs: Literal["baseline", "all"] | None = typer.Option(
        None, "--pairs", help="'baseline': test each run against the first (default); 'all': "
        "every pair. Given with two runs, prints the N-run table."),
    qrels: Path | None = typer.Option(None, "--qrels", help="TREC qrels: compare TREC run files query by query."),
    groups: bool = typer.Option(True, "--groups/--no-groups", help="N-run tables per tag/dataset/… too."),
    fail_on_regression: bool = typer.Option(
        False, "--fail-on-regression", help="Exit 1 when a run is significantly worse than the baseline on any metric."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the comparison as JSON."),
    xlsx_out: Path | None = typer.Option(None, "--xlsx", help="Write the comparison as Excel."),
    html_out: Path | None = typer.Option(None, "--html", help="Write the comparison as HTML."),
    md_out: Path | None = typer.Option(None, "--markdown", help="Write the N-run tables as Markdown."),
    tex_out: Path | None = typer.Option(None, "--latex", help="Write the N-run tables as LaTeX (booktabs)."),
    csv_out: Path | None = typer.Option(None, "--csv", help="Write the N-run tables as CSV."),
    resamples: int = typer.Option(10_000, "--resamples", min=1, help="Monte Carlo / bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the resampling."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No tables on the console."),
    details: bool = typer.Option(
        False, "--details", help="Also raw and t-test p-values and the flipped cases (two runs) "
        "or each pair's flip counts (N runs)."),
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML: one testcase per "
                                      "metric (and run), a failure for a significant regression."),
    github: bool | None = typer.Option(
        None, "--github/--no-github", help="GitHub annotations for significant regressions "
        "(default: on when GITHUB_ACTIONS=true)."),
    cases: Path | None = typer.Option(
        None, "--cases", help="Compare on the cases of this suite only (e.g. the platinum "
        "suite of queryeval audit --write-platinum), and show how each run's mean and rank "
        "move."),
) -> None:
    """Compare runs case by case: differences, significance, flipped cases. The first run is
    the baseline; three or more runs make one table with the runs as columns."""
    from queryeval.errors import ConfigError

    if len(runs) < 2:
        raise ConfigError(f"compare needs at least two runs, got {len(runs)}")
    if not 0 < alpha < 1:  # checked here so that the message names the option
        raise ConfigError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    keep = None
    if cases is not None:
        if qrels is not None:
            raise ConfigError("--cases goes with runs of queryeval, not with --qrels")
        from queryeval.report.platinum import case_ids

        keep = case_ids(cases)
    # two runs are read as B against A unless the table is asked for (--pairs, a table file)
    table = qrels is not None or len(runs) > 2 or pairs is not None or any(
        p is not None for p in (md_out, tex_out, csv_out))
    if qrels is not None:
        from queryeval.api.compare import MultiComparison
        from queryeval.report.compare import compare_trec

        comp: Any = MultiComparison(compare_trec(qrels, runs, metric, pairs=pairs or "baseline",
                                                 alpha=alpha, resamples=resamples, seed=seed))
    else:
        from queryeval.api.compare import compare

        comp = compare(*runs, metrics=metric or None, groups=groups, alpha=alpha,
                       resamples=resamples, seed=seed, cases=keep,
                       pairs=pairs or "baseline" if table else None)
    if not quiet:
        for renderable in comp.renderables(details=details):
            console.print(renderable)
    if keep is not None and not quiet and table:
        _print_shift(comp.platinum)
    written = [comp.write(path, kind) for path, kind in (
        (json_out, "json"), (xlsx_out, "xlsx"), (html_out, "html"), (md_out, "md"),
        (tex_out, "tex"), (csv_out, "csv")) if path is not None]
    if written:
        console.print("written: " + ", ".join(str(p) for p in written), markup=False,
                      highlight=False, soft_wrap=True)
    from queryeval.cli.ci import compare_outputs

    compare_outputs(comp.raw, junit=junit, github=github, fail_on_regression=fail_on_regression)
    if fail_on_regression:
        comp.check()
    if keep is not None and not quiet and not table:  # two runs: after the gate, as before
        _print_shift(comp.platinum)


def _print_shift(shift: dict) -> None:
    """Each run's mean of the metric on every shared case and on the --cases subset, the
    shift, its rank by each, and the Spearman correlation of the two rankings (the
    comparison's ``platinum``, :func:`queryeval.report.platinum.platinum_shift`)."""
    from rich.table import Table

    from queryeval.io.safetext import console_line

    table = Table(title=f"--cases: {shift['metric']} on {shift['subset_cases']} of "
                  f"{shift['full_cases']} cases", title_justify="left")
    for name in ("run", "all cases", "rank", "--cases", "rank", "shift"):
        table.add_column(name)
    for r in shift["runs"]:
        table.add_row(console_line(r["label"]), f"{r['full']:.4f}", f"{r['full_rank']:g}",
                      f"{r['subset']:.4f}", f"{r['subset_rank']:g}", f"{r['shift']:+.4f}")
    console.print(table)
    rho = shift["spearman"]
    console.print("Spearman between the rankings: " + ("undefined (fewer than 3 runs or "
                  "equal means)" if rho is None else f"{rho:.3f}"), markup=False,
                  highlight=False)
