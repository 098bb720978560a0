"""``queryeval schema``: print the JSON Schema of a test case (for yaml-language-server), or
with ``--run-log`` that of the run log's files (batch, record, metrics)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    output: Path | None = typer.Option(
        None, "--output", "-o",
        help="Write the schema to this file, e.g. case.schema.json beside your suite "
        "(default: print it on stdout)."),
    run_log: bool = typer.Option(
        False, "--run-log",
        help="The schema of the run log instead: batch_<id>.json, each line of "
        "results_<id>.jsonl (by task kind) and metrics_<id>.json (docs/run-log.md)."),
) -> None:
    """Print the JSON Schema of a suite document, or write it with -o. Editors validate and
    complete suites with it: put the line "# yaml-language-server: $schema=case.schema.json" at
    the top of a YAML suite. With --run-log: the schema of the files a run writes."""
    from queryeval.io.atomic import write_text_atomic
    from queryeval.io.writing import writing

    if run_log:
        from queryeval.run.logmodel import run_log_json_schema

        schema = run_log_json_schema()
    else:
        from queryeval.suite.models import case_json_schema

        schema = case_json_schema()
    text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    with writing(output):
        write_text_atomic(output, text)
    console.print(f"schema: {output}", markup=False, highlight=False)
