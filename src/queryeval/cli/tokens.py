"""``queryeval tokens FILE [--field NAME]``: cl100k token counts, offline."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console

JSONL_SUFFIXES = (".jsonl", ".ndjson")


def jsonl_field_values(path: Path, field: str) -> list[str]:
    """The distinct values of ``field`` over a JSONL file's records (a corpus of chunks, a
    questions file), in first-seen order. A record without the field, or whose value is not
    text, is an error naming its line."""
    from queryeval.errors import InputError
    from queryeval.io.jsonl import iter_jsonl

    if not path.is_file():
        raise InputError("file not found", path=path)
    seen: dict[str, None] = {}
    for line, record in iter_jsonl(path):
        if field not in record:
            keys = ", ".join(list(record)[:20]) or "none"
            raise InputError(f"unknown field (this record's fields: {keys})", path=path,
                             line=line, field=field)
        value = record[field]
        if not isinstance(value, str):
            raise InputError(f"expected text, got {type(value).__name__}", path=path,
                             line=line, field=field)
        seen.setdefault(value, None)
    return list(seen)


def command(
    file: Path = typer.Argument(..., help="A text file, or with --field a table (CSV, Parquet, "
                                "xlsx) or a JSONL file of records (e.g. a retrieval corpus)."),
    field: str | None = typer.Option(None, "--field", help="Count per distinct value of this "
                                     "field (a table column or a JSONL key): values, total, "
                                     "max, mean."),
) -> None:
    """Count cl100k tokens of a text file, or of each distinct value of a field of a table or
    JSONL file."""
    from queryeval.errors import InputError
    from queryeval.tokens import count_tokens, count_tokens_many, read_text_file

    if field is None:
        text = read_text_file(file)
        console.print(f"{file}: {count_tokens(text)} tokens", markup=False, highlight=False, soft_wrap=True)
        return

    if file.suffix.lower() in JSONL_SUFFIXES:
        values = jsonl_field_values(file, field)
    else:
        from queryeval.suite.fields import load_data_table

        table = load_data_table(file)
        if field not in table.fields:
            raise InputError(f"unknown field (fields: {', '.join(table.fields)})", path=file,
                             line=1, field=field)
        values = table.fields[field].values
    counts = count_tokens_many(values)
    total = sum(counts)
    mean = total / len(counts) if counts else 0.0
    console.print(
        f"{file}: {field}: {len(counts)} values, total {total} tokens, "
        f"max {max(counts, default=0)}, mean {mean:.2f}",
        markup=False, highlight=False,
    )
