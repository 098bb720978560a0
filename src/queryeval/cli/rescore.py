"""``queryeval rescore RUN``: recompute scores and reports with other task options, from the
log alone (the system is not called again). Writes a new batch; the source is not modified."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    run: Path = typer.Argument(..., help="Run log: its batch_<id>.json, a file of the batch, or a one-run folder."),
    option: list[str] = typer.Option(
        [], "--option", help="Task option KEY=VALUE overriding the run's, e.g. include_extra_dimensions=false."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Output folder of the new batch (default: the source run's)."),
    no_report: bool = typer.Option(False, "--no-report", help="Skip the Excel and HTML reports."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary."),
) -> None:
    """Re-score RUN with other task options into a new batch."""
    from queryeval.cli.run import _parse_options
    from queryeval.io.safetext import console_plain
    from queryeval.report.rescore import rescore_run

    result = rescore_run(run, _parse_options(option), out=out, reports=not no_report)
    if not quiet:
        from queryeval.report.console import render_summary
        from queryeval.report.html_figures import figure_kinds

        for renderable in render_summary(result.task.summary(result.metrics), result.metrics,
                                         figure_kinds(result.task)):
            console.print(renderable)
        if "repeats" in result.metrics:  # as queryeval run prints it (Run.summary)
            from queryeval.report.console import repeats_tables

            for table in repeats_tables(result.metrics["repeats"]):
                console.print(table)
    paths = result.log.paths
    changed = ", ".join(f"{k}={v}" for k, v in result.changed_options.items()) or "none"
    source = console_plain(result.source_batch_id)  # from a run log: controls shown, not sent
    console.print(f"re-scored {source} (changed options: {changed})",
                  markup=False, highlight=False, soft_wrap=True)
    from queryeval.cli.run import written_lines

    for line in written_lines(paths):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
