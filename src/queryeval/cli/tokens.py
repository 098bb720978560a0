"""``queryeval tokens FILE [--field NAME]``: cl100k token counts, offline."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    file: Path = typer.Argument(..., help="A text file, or with --field a table "
                                "(CSV/Parquet/xlsx)."),
    field: str | None = typer.Option(None, "--field", help="Count per distinct value of this "
                                     "table field: values, total, max, mean."),
) -> None:
    """Count cl100k tokens of a text file, or of each value of a table field."""
    from queryeval.errors import InputError
    from queryeval.tokens import count_tokens, count_tokens_many, read_text_file

    if field is None:
        text = read_text_file(file)
        console.print(f"{file}: {count_tokens(text)} tokens", markup=False, highlight=False, soft_wrap=True)
        return

    from queryeval.suite.fields import load_data_table

    table = load_data_table(file)
    if field not in table.fields:
        raise InputError(f"unknown field (fields: {', '.join(table.fields)})", path=file,
                         line=1, field=field)
    counts = count_tokens_many(table.fields[field].values)
    total = sum(counts)
    mean = total / len(counts) if counts else 0.0
    console.print(
        f"{file}: {field}: {len(counts)} values, total {total} tokens, "
        f"max {max(counts, default=0)}, mean {mean:.2f}",
        markup=False, highlight=False, soft_wrap=True,
    )
