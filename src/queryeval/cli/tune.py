"""``queryeval tune EVALUATION --data DATA [--model M ...]``: the model and the exact N per
field (seed 004). The rankings come from the built-in retrievers (each (model, field) indexed
once, one full ranking per question serving every N), or from a precomputed ``--rankings``
JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer

from queryeval.cli.console import console


def _parse_descriptions(items: list[str] | None) -> dict[str, str]:
    from queryeval.errors import ConfigError

    out: dict[str, str] = {}
    for item in items or []:
        fld, sep, column = item.partition("=")
        if not sep or not fld or not column:
            raise ConfigError(f"--description expects FIELD=COLUMN, got {item!r}")
        out[fld] = column
    return out


def _evaluation(path: Path, question_column: str, fields: list[str] | None,
                known: list[str] | None):
    """The evaluation table, from CSV/xlsx or from a suite YAML's ``target.fields``."""
    from queryeval.errors import InputError
    from queryeval.suite.fields import evaluation_from_cases, load_evaluation_table

    if path.is_dir() or path.suffix.lower() in (".yaml", ".yml"):
        from queryeval.suite.loader import load_yaml_suite

        ev = evaluation_from_cases(load_yaml_suite(path).cases, path, fields)
        if known is not None:
            for name in ev.fields:
                if name not in known:
                    raise InputError(f"unknown field (data table fields: {', '.join(known)})",
                                     path=path, field=name)
        return ev
    return load_evaluation_table(path, question_column, fields, known)


def command(
    evaluation: Path = typer.Argument(..., help="Evaluation table (CSV/xlsx): a question column "
                                      "and one ';'-separated ground-truth column per field; or a "
                                      "suite YAML whose targets hold 'fields'."),
    data: Path | None = typer.Option(None, "--data", help="Data table (CSV/Parquet/xlsx) whose "
                                     "field values are retrieved (needed unless --rankings)."),
    model: list[str] | None = typer.Option(None, "--model", "-m", help="Candidate model, "
                                           "repeatable, first wins MRR ties: minilm (default), "
                                           "bm25, or a local sentence-transformers directory."),
    rankings: Path | None = typer.Option(None, "--rankings", help="Precomputed rankings JSON "
                                         "instead of retrieving (see docs/fields.md)."),
    device: str | None = typer.Option(None, "--device", help="Torch device for dense models "
                                      "(cpu, cuda; default: sentence-transformers' choice)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Embedding cache folder "
                                          "(default $QUERYEVAL_CACHE_DIR/embeddings or "
                                          "~/.cache/queryeval/embeddings)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the "
                                  "embedding cache."),
    description: list[str] | None = typer.Option(None, "--description",
                                                 help="FIELD=COLUMN description column."),
    question_column: str = typer.Option("Question", "--question-column",
                                        help="The evaluation table's question column."),
    field: list[str] | None = typer.Option(None, "--field", help="Evaluate only these fields."),
    budget: int = typer.Option(2000, "--budget", min=0, help="Token budget sum(N x cost)."),
    cost_from: Literal["value", "document"] = typer.Option("value", "--cost-from", help="A field's token cost: the "
                                  "largest count over its values ('value') or its documents, "
                                  "value + ' ' + description ('document', the reference's)."),
    unlimited: bool = typer.Option(False, "--unlimited", help="No token budget."),
    min_n: int = typer.Option(1, "--min-n", min=0, help="Smallest N per field (0 lets a "
                              "field be switched off, as the reference may)."),
    node_limit: int = typer.Option(500_000, "--node-limit", min=1,
                                   help="Search nodes before giving up on proving optimality."),
    out: Path = typer.Option(Path("runs"), "--out", "-o", help="Folder of the result, like "
                             "run's: OUT/YYYY-MM-DD/tuning_<id>.json (for run --tuning) and "
                             ".xlsx."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write rows and summary as "
                                         "JSON to this file."),
    csv_out: Path | None = typer.Option(None, "--csv", help="Also write rows as CSV to this "
                                        "file."),
    xlsx_out: Path | None = typer.Option(None, "--xlsx", help="Also write rows and summary as "
                                         "xlsx to this file."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress or table (the written "
                               "paths are still printed)."),
) -> None:
    """Choose each field's model (highest mean MRR) and N (exact: most questions passed, then
    highest recall, then fewest tokens, within the budget). Writes the result under --out
    and prints its path."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from queryeval.cli.console import err_console
    from queryeval.errors import ConfigError
    from queryeval.io.writing import writing
    from queryeval.report.tuning import (
        print_result,
        write_csv,
        write_default,
        write_json,
        write_xlsx,
    )
    from queryeval.suite.fields import load_data_table
    from queryeval.tune import InfeasibleBudget, tune

    if rankings is None and data is None:
        raise ConfigError("tune needs --data DATA_TABLE (to retrieve) or --rankings FILE")
    if rankings is not None and model:
        raise ConfigError("--model picks retrievers; with --rankings the models are the file's")
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(), console=err_console,
                   # transient: gone once done; off a terminal it would leave an empty line
                   disable=quiet or not err_console.is_terminal, transient=True)
    with bar:
        step = bar.add_task("reading the tables", total=None)

        def show(**fields) -> None:
            """Update the step and draw it now (a fast step still shows once)."""
            bar.update(step, **fields)
            bar.refresh()

        show()
        table = load_data_table(data, _parse_descriptions(description)) if data else None
        cost_texts = ({name: list(f.documents) for name, f in table.fields.items()}
                      if table is not None and cost_from == "document" else None)
        known = list(table.fields) if table else None
        ev = _evaluation(evaluation, question_column, field or None, known)
        if rankings is not None:
            from queryeval.tune.rankings import field_inputs, load_rankings

            show(description=f"reading {rankings.name}")
            values = {name: f.values for name, f in table.fields.items()} if table else None
            inputs = field_inputs(load_rankings(rankings), ev.ground_truth, rankings, values,
                                  cost_texts)
        else:
            from queryeval.tune.retrieve import default_factory, rank_fields, tune_inputs

            def progress(text: str, done: int, total: int) -> None:
                show(description=text, completed=done, total=total)

            cache: object = False if no_cache else (cache_dir if cache_dir else True)
            ranked = rank_fields(table, ev.questions, ev.fields, model or ["minilm"],
                                 factory=default_factory(cache=cache, device=device),
                                 progress=progress)
            show(description="token costs of the values", total=None, completed=0)
            inputs = tune_inputs(ranked, ev.ground_truth, cost_texts)
        show(description=f"choosing N for {len(inputs)} fields (exact search)", total=None,
             completed=0)
        try:
            result = tune(inputs, budget=None if unlimited else budget, min_n=min_n,
                          node_limit=node_limit)
        except InfeasibleBudget as exc:
            raise ConfigError(str(exc)) from None
    if not quiet:
        print_result(result, console)
    written: list[Path] = []
    for target, writer in ((json_out, write_json), (csv_out, write_csv), (xlsx_out, write_xlsx)):
        if target is not None:
            with writing(target):
                written.append(writer(result, target))
    with writing(out):
        written[:0] = write_default(result, out)
    console.print("tuning: " + ", ".join(str(p) for p in written), markup=False, highlight=False)
