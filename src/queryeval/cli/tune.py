"""``queryeval tune EVALUATION --data DATA [--model M ...]``: the model and the exact N per
field (seed 004). The rankings come from the built-in retrievers (each (model, field) indexed
once, one full ranking per question serving every N), or from a precomputed ``--rankings``
JSON."""

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
                                          "./.queryeval-cache/embeddings)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the "
                                  "embedding cache."),
    description: list[str] | None = typer.Option(None, "--description",
                                                 help="FIELD=COLUMN description column."),
    question_column: str = typer.Option("Question", "--question-column"),
    field: list[str] | None = typer.Option(None, "--field", help="Evaluate only these fields."),
    budget: int = typer.Option(2000, "--budget", min=0, help="Token budget sum(N x cost)."),
    cost_from: str = typer.Option("value", "--cost-from", help="A field's token cost: the "
                                  "largest count over its values ('value') or its documents, "
                                  "value + ' ' + description ('document', the reference's)."),
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
    from queryeval.suite.fields import load_data_table
    from queryeval.tune import InfeasibleBudget, tune
    from queryeval.tune.output import print_result, write_csv, write_json, write_xlsx

    if rankings is None and data is None:
        raise ConfigError("tune needs --data DATA_TABLE (to retrieve) or --rankings FILE")
    if rankings is not None and model:
        raise ConfigError("--model picks retrievers; with --rankings the models are the file's")
    if cost_from not in ("value", "document"):
        raise ConfigError(f"--cost-from must be 'value' or 'document', got {cost_from!r}")
    table = load_data_table(data, _parse_descriptions(description)) if data else None
    cost_texts = ({name: list(f.documents) for name, f in table.fields.items()}
                  if table is not None and cost_from == "document" else None)
    known = list(table.fields) if table else None
    ev = _evaluation(evaluation, question_column, field or None, known)
    if rankings is not None:
        from queryeval.tune.rankings import field_inputs, load_rankings

        values = {name: f.values for name, f in table.fields.items()} if table else None
        inputs = field_inputs(load_rankings(rankings), ev.ground_truth, rankings, values,
                              cost_texts)
    else:
        from queryeval.tune.retrieve import default_factory, rank_fields, tune_inputs

        cache: object = False if no_cache else (cache_dir if cache_dir else True)
        ranked = rank_fields(table, ev.questions, ev.fields, model or ["minilm"],
                             factory=default_factory(cache=cache, device=device))
        inputs = tune_inputs(ranked, ev.ground_truth, cost_texts)
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
