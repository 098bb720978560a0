"""``queryeval schema``: print the JSON Schema of a test case (for yaml-language-server)."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def command(
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file."),
) -> None:
    """Print the JSON Schema of a suite document.

    Editors validate suites with it: put
    ``# yaml-language-server: $schema=case.schema.json`` at the top of a YAML file.
    """
    from queryeval.suite.models import case_json_schema

    text = json.dumps(case_json_schema(), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
