"""``queryeval run``: evaluate a suite against a system (or recorded outputs), or resume a run."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from queryeval.cli.console import console, err_console


def _parse_options(items: list[str]) -> dict:
    """``key=value`` pairs; values are read as JSON when they parse (true, 3, 0.5, [..])."""
    from queryeval.errors import ConfigError

    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--option expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip().replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip().replace("-", "_")] = value
    return out


def _per_field(items: list[str], cast):
    """``["5"]`` -> 5; ``["item=5", "type=2"]`` -> ``{"item": 5, "type": 2}``."""
    from queryeval.errors import ConfigError

    if len(items) == 1 and "=" not in items[0]:
        try:
            return cast(items[0])
        except ValueError:
            raise ConfigError(f"expected a number, got {items[0]!r}") from None
    out = {}
    for item in items:
        key, sep, value = item.rpartition("=")
        if not sep or not key:
            raise ConfigError(f"expected FIELD=VALUE, got {item!r}")
        try:
            out[key] = cast(value)
        except ValueError:
            raise ConfigError(f"expected a number in {item!r}") from None
    return out


def command(
    suite: Path | None = typer.Argument(None, help="Suite file or folder (not needed with --resume)."),
    responses: Path | None = typer.Option(None, "--responses", "-r", help="Recorded outputs (JSONL)."),
    system: str | None = typer.Option(
        None, "--system", "-s",
        help="System under test: python:MODULE:FUNC, http(s)://URL, or cmd:COMMAND."),
    task: str | None = typer.Option(None, "--task", help="Task kind (inferred from the targets)."),
    labels: Path | None = typer.Option(None, "--labels", help="DABench labels JSONL (with a questions JSONL suite)."),
    tables: Path | None = typer.Option(None, "--tables", help="Answers: folder of the questions' table files."),
    match: str | None = typer.Option(None, "--match", help="Answers: numeric (default) or strict."),
    missing: str | None = typer.Option(None, "--missing", help="Answers: wrong (default) or skip."),
    compat: str | None = typer.Option(None, "--compat", help="Answers: infiagent reproduces "
                                      "InfiAgent's evaluator (first non-empty response per id, "
                                      "missing=skip)."),
    export: list[str] = typer.Option([], "--export", help="Extra output, e.g. dabench."),
    corpus: Path | None = typer.Option(None, "--corpus", help="Retrieval: chunks (JSONL, CSV or Parquet)."),
    k: str | None = typer.Option(None, "--k", help="Retrieval: comma-separated k values, e.g. 5,10,25."),
    dataset: list[str] = typer.Option([], "--dataset", help="Retrieval: keep this dataset (repeatable; 'all')."),
    min_score: float | None = typer.Option(None, "--min-score", help="Retrieval: drop chunks scoring below."),
    sampling: float | None = typer.Option(None, "--sampling", help="Retrieval: fraction to sample per dataset."),
    random_seed: int | None = typer.Option(None, "--random-seed", help="Seed for --sampling."),
    retriever: str | None = typer.Option(None, "--retriever", help="Built-in retriever: bm25 or dense."),
    model: str | None = typer.Option(None, "--model", help="Dense model: a local sentence-transformers path."),
    graph: list[Path] = typer.Option([], "--graph", help="Query: RDF file(s) to run queries on (embedded store)."),
    database: Path | None = typer.Option(None, "--database", help="Query: a sqlite (.sqlite/.db) or DuckDB file."),
    endpoint: str | None = typer.Option(None, "--endpoint", help="Query: a SPARQL 1.1 endpoint URL."),
    rules: str | None = typer.Option(None, "--rules", help="Query: clean (default) or buildingqa metric rules."),
    data: Path | None = typer.Option(None, "--data", help="Fields: the data table whose values are retrieved."),
    n: list[str] = typer.Option([], "--n", help="Fields: values retrieved per field: N, or FIELD=N (repeatable)."),
    tuning: Path | None = typer.Option(None, "--tuning", help="Fields: N and model per field from a `queryeval tune` JSON."),
    reformat: bool = typer.Option(False, "--reformat", help="Answers: reformat free text with an LLM first."),
    reformat_model: str | None = typer.Option(None, "--reformat-model", help="Chat model for --reformat."),
    reformat_base_url: str = typer.Option(
        "https://api.openai.com/v1", "--reformat-base-url", help="OpenAI-compatible base URL."),
    reformat_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--reformat-key-env", help="Environment variable holding the API key ('' for none)."),
    reformat_temperature: float = typer.Option(0.0, "--reformat-temperature"),
    out: Path = typer.Option(Path("runs"), "--out", "-o", help="Run log folder."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", min=1, help="Cases in flight."),
    timeout: float = typer.Option(60.0, "--timeout", min=0.001, help="Per-call timeout, seconds."),
    retries: int = typer.Option(2, "--retries", min=0, help="Retries of transient failures."),
    backoff: float = typer.Option(0.5, "--backoff", min=0.0, help="First retry wait, seconds."),
    on_error: str | None = typer.Option(
        None, "--on-error", help="score (failed calls score as empty output) or skip."),
    option: list[str] = typer.Option(
        [], "--option", help="Task option KEY=VALUE, e.g. include_extra_dimensions=false."),
    resume: Path | None = typer.Option(
        None, "--resume", help="Continue an interrupted run: its batch_<id>.json or run folder."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="With --resume: redo failed cases."),
    no_report: bool = typer.Option(False, "--no-report", help="Skip the Excel report."),
    executor: str = typer.Option("local", "--executor", help="local (threads) or ray."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Ray cluster address (default: start a local one)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
    fail_under: list[str] = typer.Option(
        [], "--fail-under", help="Gate: METRIC=MIN on overall_metrics, e.g. macro_recall=0.8 (exit 1 if missed)."),
) -> None:
    """Evaluate SUITE: call the system for every scored turn, score, write the run log."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from queryeval.errors import ConfigError
    from queryeval.report.gates import check_thresholds, parse_thresholds
    from queryeval.run.evaluate import RunConfig, resume_run, start_run
    from queryeval.run.memory import use_mmap_for_large_blocks

    thresholds = parse_thresholds(fail_under)
    use_mmap_for_large_blocks()  # large runs: freed arrays leave resident memory at once

    bar = Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=err_console, disable=quiet, transient=False,
    )
    handle = bar.add_task("cases", total=None)

    def progress(advance: int, total: int) -> None:
        """Started on the first call, once the suite has loaded, so errors print alone."""
        if total:
            bar.update(handle, total=total)
            if not bar.live.is_started:
                bar.start()
        if advance:
            bar.advance(handle, advance)

    try:
        if resume is not None:
            if suite is not None or responses is not None or system is not None:
                raise ConfigError("--resume takes the run's own configuration; drop SUITE/--system/--responses")
            result = resume_run(resume, retry_errors=retry_errors, progress=progress)
        else:
            if suite is None:
                raise ConfigError("missing SUITE (or --resume RUN)")
            task_options = _parse_options(option)
            flags = {"on_error": on_error, "match": match, "missing": missing, "compat": compat,
                     "tables": str(tables.resolve()) if tables else None,
                     "corpus": str(corpus.resolve()) if corpus else None, "k": k,
                     "min_score": min_score, "sampling": sampling, "random_seed": random_seed,
                     "retriever": retriever, "model": model}
            task_options.update({k: v for k, v in flags.items() if v is not None})
            if export:
                task_options["export"] = export
            if dataset:
                task_options["dataset"] = dataset
            sources = [str(p.resolve()) for p in graph] + ([str(database.resolve())] if database else []) \
                + ([endpoint] if endpoint else [])
            if sum(bool(x) for x in (graph, database, endpoint)) > 1:
                raise ConfigError("give one of --graph, --database or --endpoint")
            if sources:
                task_options["source"] = ",".join(sources)
            if rules:
                task_options["rules"] = rules
            if data:
                task_options["data"] = str(data.resolve())
            if tuning:
                task_options["tuning"] = str(tuning.resolve())
            if n:
                task_options["n"] = _per_field(n, int)
            if reformat:
                if not reformat_model:
                    raise ConfigError("--reformat needs --reformat-model")
                task_options["reformat"] = {
                    "base_url": reformat_base_url, "model": reformat_model,
                    "api_key_env": reformat_key_env or None, "temperature": reformat_temperature,
                }
            config = RunConfig(
                suite=str(suite), labels=str(labels) if labels else None, task=task, system=system,
                responses=str(responses) if responses else None, out=str(out),
                concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
                task_options=task_options, reports=not no_report,
                executor=executor, ray_address=ray_address,
            )
            result = start_run(config, progress=progress)
    finally:
        if bar.live.is_started:
            bar.stop()

    for w in result.warnings:
        err_console.print(f"warning: {w}", markup=False, highlight=False)
    if not quiet:
        summary = result.task.summary(result.metrics)
        for renderable in summary if isinstance(summary, list) else [summary]:
            console.print(renderable)
    paths = result.log.paths
    written = [paths.batch, paths.results_jsonl, paths.results_csv, paths.metrics]
    written += [p for p in (paths.report_xlsx, paths.folder / f"report_{paths.batch_id}.html") if p.exists()]
    console.print("run log: " + ", ".join(str(p) for p in written), markup=False, highlight=False)
    for opts, batch_id in result.log.batch.get("derived_batches", {}).items():
        console.print(f"derived batch {opts}: {paths.folder / f'batch_{batch_id}.json'}",
                      markup=False, highlight=False)
    if thresholds:
        check_thresholds(result.metrics, thresholds)
        console.print("gates passed: " + ", ".join(f"{k} >= {v:g}" for k, v in thresholds.items()),
                      markup=False, highlight=False)
