"""``queryeval trec QRELS RUN -m ndcg@10 -m recall@100``: trec_eval-compatible scoring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import typer

from queryeval.cli.console import console


def command(
    qrels: Path = typer.Argument(..., help="TREC qrels file: qid iter docid relevance."),
    run: Path = typer.Argument(..., help="TREC run file: qid Q0 docid rank score tag."),
    metric: list[str] = typer.Option(
        ..., "-m", "--metric",
        help="Metric, repeatable: ndcg@10, recall@100, mrr@10, map, precision@5, hit_rate@10 "
        "(trec_eval names such as ndcg_cut.10 or P.5 work too, and ir_measures' such as "
        "AP, 'P(rel=2)@5', RR@10, Judged@10).",
    ),
    per_query: bool = typer.Option(False, "--per-query", help="Also print every query."),
    missing_query: Literal["zero", "skip"] = typer.Option(
        "zero", "--missing-query",
        help="A judged query absent from the run: 'zero' scores it 0 (trec_eval -c), "
        "'skip' leaves it out (pytrec_eval).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    relevance_level: int = typer.Option(
        1, "-l", "--relevance-level", help="Relevant means relevance >= this (trec_eval -l)."),
    judged_only: bool = typer.Option(
        False, "-J", "--judged-only", help="Drop unjudged documents first (trec_eval -J)."),
    max_docs: int | None = typer.Option(
        None, "-M", "--max-docs", help="Only each query's top N documents (trec_eval -M)."),
    trec_format: bool = typer.Option(
        False, "--trec-format", help="Print trec_eval's 'measure<TAB>query<TAB>value' lines."),
    strict: bool = typer.Option(
        False, "--strict", help="Refuse comments, extra columns and numbers with trailing text "
        "(trec_eval reads them leniently)."),
) -> None:
    """Score a TREC run against TREC qrels with trec_eval's conventions."""
    from queryeval.errors import ConfigError
    from queryeval.metrics.ranking import parse_metrics
    from queryeval.suite.trec import evaluate_files

    try:
        parse_metrics(metric)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if trec_format and as_json:
        raise ConfigError("--json and --trec-format are two formats of the same figures; "
                          "choose one")
    if missing_query not in ("zero", "skip"):
        raise ConfigError(f"--missing-query must be 'zero' or 'skip', got {missing_query!r}")
    try:
        result = evaluate_files(qrels, run, metric, per_query=per_query,
                                missing_query=missing_query, relevance_level=relevance_level,
                                judged_only=judged_only, strict=strict, max_docs=max_docs)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if trec_format:
        from queryeval.metrics.ranking import trec_eval_lines

        typer.echo(trec_eval_lines(result, metric, per_query=per_query), nl=False)
        return
    if as_json:
        out: dict = {"queries": len(result.qids), "missing_queries": result.n_missing,
                     "missing_query": missing_query,
                     "queries_without_relevant": result.n_without_relevant,
                     "means": result.means}
        if per_query:
            out["per_query"] = {
                q: {m: float(v[i]) for m, v in result.per_query.items()}
                for i, q in enumerate(result.qids)
            }
        console.print_json(json.dumps(out))
        return
    from rich.table import Table

    from queryeval.io.safetext import console_plain, console_text

    console.print(console_plain(heading(run.name, qrels.name, len(result.qids), result.n_missing,
                                        missing_query, result.n_without_relevant)),
                  markup=False, highlight=False)
    table = Table()
    table.add_column("query")
    for name in result.means:
        table.add_column(name, justify="right")
    if per_query:
        for i, q in enumerate(result.qids):
            table.add_row(console_text(q), *(f"{result.per_query[m][i]:.4f}" for m in result.means))
    table.add_row("all", *(f"{v:.4f}" for v in result.means.values()), style="bold")
    console.print(table)


def heading(run: str, qrels: str, queries: int, missing: int, missing_query: str,
            without_relevant: int = 0) -> str:
    """The line above the table: what was scored, what became of judged queries the run
    does not answer, and how many queries have no relevant judgement."""
    line = f"{run} scored against {qrels}: {queries} {'query' if queries == 1 else 'queries'}"
    if not missing:
        line += "; every judged query is in the run"
    else:
        fate = "each scores 0" if missing_query == "zero" else "left out"
        line += (f"; {missing} judged {'query is' if missing == 1 else 'queries are'} absent "
                 f"from the run ({fate}, --missing-query {missing_query})")
    if without_relevant:
        line += (f"; {without_relevant} {'query has' if without_relevant == 1 else 'queries have'}"
                 " no relevant judgement (0 on every measure, counted)")
    return line
