"""``queryeval schema``: print the JSON Schema of a test case (for yaml-language-server)."""

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
) -> None:
    """Print the JSON Schema of a suite document, or write it with -o. Editors validate and
    complete suites with it: put the line "# yaml-language-server: $schema=case.schema.json" at
    the top of a YAML suite."""
    from queryeval.io.atomic import write_text_atomic
    from queryeval.run.log import writing
    from queryeval.suite.models import case_json_schema

    text = json.dumps(case_json_schema(), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    with writing(output):
        write_text_atomic(output, text)
    console.print(f"schema: {output}", markup=False, highlight=False)
