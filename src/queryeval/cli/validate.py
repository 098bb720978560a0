"""``queryeval validate SUITE``: check a suite without running anything."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    suite: Path = typer.Argument(..., help="Suite: a YAML file, multi-document YAML, or a folder."),
) -> None:
    """Check a suite: schema, line-numbered errors, duplicate case ids."""
    from queryeval.suite import load_suite

    loaded = load_suite(suite)
    kinds = ", ".join(sorted(loaded.task_kinds())) or "none"
    turns = sum(len(c.scored_turns()) for c in loaded.cases)
    console.print(
        f"{suite}: ok — {len(loaded.cases)} cases, {turns} scored turns, "
        f"{len(loaded.sources)} file(s), tasks: {kinds}",
        markup=False, highlight=False,
    )
