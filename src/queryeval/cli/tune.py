"""``queryeval tune EVALUATION --rankings FILE``: the model and the exact N per field (seed 004)."""

from __future__ import annotations

from pathlib import Path

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


def command(
    evaluation: Path = typer.Argument(..., help="Evaluation table (CSV/xlsx): a question column "
                                      "and one ';'-separated ground-truth column per field."),
    rankings: Path = typer.Option(..., "--rankings", help="Precomputed rankings JSON "
                                  "(see docs/fields.md for its shape)."),
    data: Path | None = typer.Option(None, "--data", help="Data table (CSV/Parquet/xlsx): checks "
                                     "field names, gives token costs and value counts."),
    description: list[str] | None = typer.Option(None, "--description",
                                                 help="FIELD=COLUMN description column."),
    question_column: str = typer.Option("Question", "--question-column"),
    field: list[str] | None = typer.Option(None, "--field", help="Evaluate only these fields."),
    budget: int = typer.Option(2000, "--budget", min=0, help="Token budget sum(N x cost)."),
    unlimited: bool = typer.Option(False, "--unlimited", help="No token budget."),
    min_n: int = typer.Option(1, "--min-n", min=0, help="Smallest N per field (0 lets a "
                              "field be switched off, as the reference may)."),
    node_limit: int = typer.Option(500_000, "--node-limit", min=1,
                                   help="Search nodes before giving up on proving optimality."),
    json_out: Path | None = typer.Option(None, "--json", help="Write rows and summary as JSON."),
    csv_out: Path | None = typer.Option(None, "--csv", help="Write rows as CSV."),
    xlsx_out: Path | None = typer.Option(None, "--xlsx", help="Write rows and summary as xlsx."),
) -> None:
    """Choose each field's model (highest mean MRR) and N (exact: most questions passed, then
    highest recall, then fewest tokens, within the budget)."""
    from queryeval.errors import ConfigError
    from queryeval.suite.fields import load_data_table, load_evaluation_table
    from queryeval.tune import InfeasibleBudget, tune
    from queryeval.tune.output import print_result, write_csv, write_json, write_xlsx
    from queryeval.tune.rankings import field_inputs, load_rankings

    table = load_data_table(data, _parse_descriptions(description)) if data else None
    known = list(table.fields) if table else None
    ev = load_evaluation_table(evaluation, question_column, field or None, known)
    ranks = load_rankings(rankings)
    values = {name: f.values for name, f in table.fields.items()} if table else None
    inputs = field_inputs(ranks, ev.ground_truth, rankings, values)
    try:
        result = tune(inputs, budget=None if unlimited else budget, min_n=min_n,
                      node_limit=node_limit)
    except InfeasibleBudget as exc:
        raise ConfigError(str(exc)) from None
    print_result(result, console)
    if json_out:
        write_json(result, json_out)
    if csv_out:
        write_csv(result, csv_out)
    if xlsx_out:
        write_xlsx(result, xlsx_out)
