"""``queryeval validate SUITE``: check a suite without running anything."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console

FORMATS = (
    "Suite formats, chosen from the path: "
    "a YAML file (.yaml/.yml, one case or a list of cases), a multi-document YAML file "
    "(cases separated by ---), or a folder of YAML files; "
    "a cases JSONL file (.jsonl, one case with its 'conversation' per line); "
    "a retrieval questions CSV (.csv with a content_hash column); "
    "DABench questions JSONL together with --labels LABELS.jsonl; "
    "a BuildingQA QA JSON file (.json, questions with gold SPARQL); "
    "a fields evaluation table (.csv or .xlsx: a question column and one ground-truth "
    "column per field)."
)


def command(
    suite: Path = typer.Argument(..., help="Suite file or folder (see the formats above)."),
    labels: Path | None = typer.Option(
        None, "--labels", help="DABench labels JSONL, with a DABench questions JSONL suite."),
    corpus: Path | None = typer.Option(
        None, "--corpus", help="The corpus (JSONL of chunks) a ragas/DeepEval suite's contexts "
        "are matched to, as the run matches them: a context no chunk matches, or a "
        "'|'-joined list a chunk holding '|' makes ambiguous, is an error (docs/formats.md)."),
) -> None:
    """Check a suite without running anything: schema, line-numbered errors, duplicate case
    ids; print one line with the counts."""
    from queryeval.suite import load_suite

    loaded = load_suite(suite, labels=labels, corpus=corpus)
    kinds = ", ".join(sorted(loaded.task_kinds())) or "none"
    turns = sum(len(c.scored_turns()) for c in loaded.cases)
    console.print(
        f"{suite}: ok, {len(loaded.cases)} cases, {turns} scored turns, "
        f"{len(loaded.sources)} file(s), tasks: {kinds}",
        markup=False, highlight=False,
    )


command.__doc__ = f"{command.__doc__}\n\n{FORMATS}"
