"""``queryeval report RUN``: write the run's self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    run: Path = typer.Argument(..., help="Run log: its batch_<id>.json, a file of the batch, or a one-run folder."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="HTML file to write (default: report_<id>.html beside the log)."),
    resamples: int = typer.Option(10_000, "--resamples", min=1, help="Bootstrap resamples for the CIs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
) -> None:
    """Write an HTML report (charts, confidence intervals, per-case table) for RUN."""
    from queryeval.report.html import write_html_report

    path = write_html_report(run, output, resamples=resamples, seed=seed)
    console.print(f"report: {path}", markup=False, highlight=False, soft_wrap=True)
