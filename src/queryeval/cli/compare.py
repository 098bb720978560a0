"""``queryeval compare RUN_A RUN_B``: paired comparison of two runs of the same task."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    run_a: Path = typer.Argument(..., help="The baseline run (batch_<id>.json or one-run folder)."),
    run_b: Path = typer.Argument(..., help="The run compared with it."),
    metric: list[str] = typer.Option([], "--metric", "-m", help="Per-case metric to compare (repeatable; default: all)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level (Holm-adjusted across metrics)."),
    fail_on_regression: bool = typer.Option(
        False, "--fail-on-regression", help="Exit 1 when B is significantly worse than A on any metric."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the comparison as JSON."),
    xlsx_out: Path | None = typer.Option(None, "--xlsx", help="Write the comparison as Excel."),
    html_out: Path | None = typer.Option(None, "--html", help="Write the comparison as HTML."),
    resamples: int = typer.Option(10_000, "--resamples", min=1, help="Monte Carlo / bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the resampling."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No tables on the console."),
) -> None:
    """Compare RUN_B with RUN_A case by case: differences, significance, flipped cases."""
    from queryeval.api.compare import compare

    comp = compare(run_a, run_b, metric or None, alpha=alpha, resamples=resamples, seed=seed)
    if not quiet:
        for renderable in comp.renderables():
            console.print(renderable)
    written = []
    if json_out is not None:
        written.append(comp.to_json(json_out))
    if xlsx_out is not None:
        written.append(comp.to_xlsx(xlsx_out))
    if html_out is not None:
        written.append(comp.to_html(html_out))
    if written:
        console.print("written: " + ", ".join(str(p) for p in written), markup=False, highlight=False, soft_wrap=True)
    if fail_on_regression:
        comp.check()
