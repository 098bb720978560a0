"""``queryeval report RUN``: write the run's self-contained HTML report and its task's xlsx
report (a run of more than ``REPORT_CASE_LIMIT`` cases leaves them to this command)."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    run: Path = typer.Argument(..., help="Run log: its batch_<id>.json, a file of the batch, or a one-run folder."),
    output: Path | None = typer.Option(
        None, "--output", "-o",
        help="HTML file to write; the Excel report goes beside it, never into the run's folder "
             "(default: report_<id>.html and .xlsx beside the log)."),
    resamples: int = typer.Option(10_000, "--resamples", min=1, help="Bootstrap resamples for the CIs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    xlsx: bool = typer.Option(True, "--xlsx/--no-xlsx", help="Also write the task's Excel report (beside the HTML)."),
) -> None:
    """Write an HTML report (charts, confidence intervals, per-case table) for RUN, and the
    task's Excel report."""
    from queryeval.api.evaluate import load
    from queryeval.io.safetext import console_plain

    loaded = load(run)
    folder = output.parent if output is not None else None  # only there, never the run's folder
    for path in loaded.report(folder, html_path=output, xlsx=xlsx, resamples=resamples, seed=seed):
        # the name holds the log's batch id: its controls shown, not sent to the terminal
        console.print(f"report: {console_plain(path)}", markup=False, highlight=False, soft_wrap=True)
