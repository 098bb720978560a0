"""``queryeval run``: evaluate a suite against a system (or recorded outputs), or resume a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import typer

from queryeval.cli.console import console, err_console
from queryeval.io.safetext import console_plain

EXPORTS = ("dabench",)


def _choices(option: str, values: list[str], choices: tuple[str, ...]) -> list[str]:
    """A repeatable option's values, each one of ``choices`` (Typer's Literal covers one value)."""
    for value in values:
        if value not in choices:
            raise typer.BadParameter(
                f"{value!r} is not one of {', '.join(repr(c) for c in choices)}.", param_hint=option)
    return values


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


def judge_options(model: str | None, base_url: str | None, api_key_env: str | None,
                  when: str | None) -> dict:
    """The task option ``judge`` from the ``--judge-*`` flags ({} when none is given)."""
    from queryeval.errors import ConfigError

    given = {k: v for k, v in (("model", model), ("base_url", base_url),
                               ("api_key_env", api_key_env or None), ("when", when)) if v}
    if given and not (model and base_url):
        raise ConfigError("the LLM judge needs --judge-model and --judge-base-url "
                          "(docs/judge.md)")
    if given:
        from queryeval.systems.judge import check_key

        check_key(given.get("api_key_env"))
    return given


def command(
    ctx: typer.Context,
    suite: Path | None = typer.Argument(None, help="Suite file or folder (not needed with --resume)."),
    responses: Path | None = typer.Option(None, "--responses", "-r", help="Recorded outputs (JSONL)."),
    system: str | None = typer.Option(
        None, "--system", "-s",
        help="System under test: python:MODULE:FUNC, http(s)://URL, or cmd:COMMAND. An "
        "http(s) URL carries no password: $QUERYEVAL_HTTP_AUTHORIZATION is sent as its "
        "Authorization header."),
    task: str | None = typer.Option(
        None, "--task",
        help="Task kind: indicator_selection, answers, retrieval, query, fields, or a registered "
        "one (default: inferred from the suite's targets)."),
    labels: Path | None = typer.Option(None, "--labels", help="DABench labels JSONL (with a questions JSONL suite)."),
    tables: Path | None = typer.Option(None, "--tables", help="Answers: folder of the questions' table files."),
    match: Literal["numeric", "strict"] | None = typer.Option(
        None, "--match", help="Answers: numeric (equal within 1e-6, the default) or strict (equal text)."),
    missing: Literal["wrong", "skip"] | None = typer.Option(
        None, "--missing", help="Answers: a missing response scores wrong (the default) or is skipped."),
    compat: Literal["infiagent", "spider", "bird", "bird-soft-f1", "spider2"] | None = typer.Option(
        None, "--compat",
        help="Answers: infiagent reproduces InfiAgent's evaluator (first non-empty response per "
        "id, missing answers skipped, unknown ids ignored, string ids missing). Query: spider "
        "or bird adds execution_accuracy as test-suite-sql-eval or BIRD computes it; "
        "bird-soft-f1 adds BIRD mini_dev's soft_f1; spider2 Spider 2.0's matching."),
    export: list[str] = typer.Option(
        [], "--export", metavar="<dabench>", callback=lambda v: _choices("--export", v, EXPORTS),
        help="Answers: extra output (repeatable): dabench writes the DABench analysis JSON."),
    corpus: Path | None = typer.Option(None, "--corpus", help="Retrieval: chunks (JSONL, CSV or Parquet)."),
    k: str | None = typer.Option(None, "--k", help="Retrieval: comma-separated k values, e.g. 5,10,25."),
    dataset: list[str] = typer.Option([], "--dataset", help="Retrieval: keep this dataset (repeatable; 'all')."),
    min_score: float | None = typer.Option(None, "--min-score", help="Retrieval: drop chunks scoring below."),
    sampling: float | None = typer.Option(None, "--sampling", help="Retrieval: fraction to sample per dataset."),
    random_seed: int | None = typer.Option(None, "--random-seed", help="Seed for --sampling."),
    retriever: Literal["bm25", "dense"] | None = typer.Option(
        None, "--retriever", help="Retrieval: built-in retriever (default: bm25; dense needs the embeddings extra)."),
    model: str | None = typer.Option(None, "--model", help="Dense model: a local sentence-transformers path."),
    graph: list[Path] = typer.Option([], "--graph", help="Query: RDF file(s) to run queries on (embedded store)."),
    database: str | None = typer.Option(None, "--database", help="Query: a sqlite (.sqlite/.db) or DuckDB file, or a postgresql:// URL."),
    endpoint: str | None = typer.Option(None, "--endpoint", help="Query: a SPARQL 1.1 endpoint URL."),
    rules: Literal["clean", "buildingqa"] | None = typer.Option(
        None, "--rules", help="Query: table metric rules (default: clean)."),
    test_suite: int | None = typer.Option(
        None, "--test-suite", min=0, max=1000, help="Query: also compare on N neighbour databases/graphs (test_suite_match; docs/test-suite.md)."),
    data: Path | None = typer.Option(None, "--data", help="Fields: the data table whose values are retrieved."),
    n: list[str] = typer.Option([], "--n", help="Fields: values retrieved per field: N, or FIELD=N (repeatable)."),
    tuning: Path | None = typer.Option(None, "--tuning", help="Fields: N and model per field from a `queryeval tune` JSON."),
    reformat: bool = typer.Option(False, "--reformat", help="Answers: reformat free text with an LLM first."),
    reformat_model: str | None = typer.Option(None, "--reformat-model", help="Chat model for --reformat."),
    reformat_base_url: str = typer.Option(
        "https://api.openai.com/v1", "--reformat-base-url", help="OpenAI-compatible base URL."),
    reformat_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--reformat-key-env", help="Environment variable holding the API key ('' for none)."),
    reformat_temperature: float = typer.Option(0.0, "--reformat-temperature", help="Sampling temperature for --reformat."),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="LLM judge: chat model; with --judge-base-url turns the judge on (docs/judge.md)."),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="LLM judge: OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1."),
    judge_api_key_env: str | None = typer.Option(
        None, "--judge-api-key-env", help="LLM judge: environment variable holding the API key (default: none, for local servers)."),
    judge_when: Literal["inconclusive", "always", "never"] | None = typer.Option(
        None, "--judge-when",
        help="LLM judge: inconclusive (only cases no rule decides, the default), always, or never."),
    out: Path = typer.Option(Path("runs"), "--out", "-o", help="Run log folder."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", help="Cases in flight (1-1024)."),
    timeout: float = typer.Option(60.0, "--timeout", help="Per-call timeout, seconds (at most a week)."),
    retries: int = typer.Option(2, "--retries", help="Retries of transient failures (0-100)."),
    backoff: float = typer.Option(0.5, "--backoff", help="First retry wait, seconds."),
    on_error: Literal["score", "skip"] | None = typer.Option(
        None, "--on-error",
        help="A failed call: score (the worst score on every metric, the default) or skip "
        "(left out of the means)."),
    option: list[str] = typer.Option(
        [], "--option", help="Task option KEY=VALUE, e.g. include_extra_dimensions=false."),
    resume: Path | None = typer.Option(
        None, "--resume", help="Continue an interrupted run: its batch_<id>.json or run folder."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="With --resume: redo failed cases."),
    force: bool = typer.Option(
        False, "--force", help="With --resume: go on although input files changed (recorded in the batch)."),
    max_error_rate: float = typer.Option(
        1.0, "--max-error-rate",
        help="Exit 3 when more than this share of calls failed (default 1.0: only when all failed)."),
    no_report: bool = typer.Option(
        False, "--no-report", help="Skip the Excel and HTML reports (the run log is still written)."),
    executor: Literal["local", "ray"] = typer.Option(
        "local", "--executor", help="Where cases run: local (threads) or ray."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Ray cluster address (default: start a local one)."),
    isolate: bool = typer.Option(
        False, "--isolate", help="Run a python: system in worker processes (os._exit, crashes "
        "and os.chdir stay in the worker)."),
    repeats: int = typer.Option(
        1, "--repeats", help="Call every scored turn N times (nondeterministic systems): per-case "
        "mean and spread, pass rate, pass@k, flaky cases (docs/repeats.md)."),
    pass_k: str | None = typer.Option(
        None, "--pass-k", help="With --repeats: comma-separated k of pass@k and pass^k, e.g. "
        "1,3,5 (each at most N; default 1,N)."),
    cache: bool = typer.Option(
        False, "--cache", help="Reuse system outputs from the call cache and store new ones "
        "(off by default; needs --system-version)."),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Call cache folder (default $QUERYEVAL_CACHE_DIR/calls or "
        "~/.cache/queryeval/calls)."),
    cache_max_mb: float = typer.Option(
        1024.0, "--cache-max-mb", help="Call cache size limit; least recently used entries go first."),
    system_version: str | None = typer.Option(
        None, "--system-version", help="The system's version: part of the call cache's key."),
    name: str | None = typer.Option(
        None, "--name", help="The run's label in reports and comparisons (default: the system's "
        "name, the responses file's name, or the built-in system)."),
    cluster_by: str | None = typer.Option(
        None, "--cluster-by", metavar="FIELD",
        help="Each case's cluster (cases that share a source: intervals and compares resample "
        "and test whole clusters) from its metadata FIELD or its FIELD:VALUE tag; see "
        "docs/compare.md."),
    # sequential decisions (docs/compare.md, "Sequential decisions")
    stop_when_decided: bool = typer.Option(
        False, "--stop-when-decided", help="With --baseline RUN: call cases in a seeded random "
        "order and stop once an anytime-valid confidence sequence for the paired difference "
        "decides better, worse or (with --margin) equivalent."),
    baseline: Path | None = typer.Option(
        None, "--baseline", metavar="RUN", help="The run to compare against (its batch file or "
        "folder), with --stop-when-decided."),
    alpha: float | None = typer.Option(
        None, "--alpha", help="With --stop-when-decided: the chance of a wrong decision "
        "(default 0.05)."),
    margin: float | None = typer.Option(
        None, "--margin", help="With --stop-when-decided: decide 'equivalent' once the interval "
        "lies within ±M."),
    metric: str | None = typer.Option(
        None, "--metric", help="With --stop-when-decided: the per-case figure in [0, 1] to "
        "pair (default: pass, the case's pass verdict)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
    fail_under: list[str] = typer.Option(
        [], "--fail-under", help="Gate: METRIC=MIN on overall_metrics, e.g. macro_recall=0.8 (exit 1 if missed)."),
    # CI and observability (docs/ci.md)
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML: one testcase per case."),
    github: bool | None = typer.Option(
        None, "--github/--no-github", help="GitHub ::error/::warning annotations for missed gates "
        "and failed calls (default: on when GITHUB_ACTIONS=true)."),
    otel: bool = typer.Option(False, "--otel", help="Export spans and gen_ai.evaluation.result "
                              "events over OTLP/HTTP (OTEL_EXPORTER_OTLP_* variables)."),
    mlflow: bool = typer.Option(False, "--mlflow", help="Log parameters, metrics and reports to MLflow."),
    mlflow_uri: str | None = typer.Option(
        None, "--mlflow-uri", help="MLflow tracking URI (default: MLFLOW_TRACKING_URI)."),
    mlflow_experiment: str = typer.Option("queryeval", "--mlflow-experiment", help="MLflow experiment name."),
) -> None:
    """Evaluate SUITE: call the system for every scored turn, score, write the run log."""
    import os
    import signal
    import threading

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    import queryeval as qe
    from queryeval.errors import ConfigError
    from queryeval.report.gates import check_thresholds, parse_thresholds
    from queryeval.run.evaluate import RunInterrupted, format_error_summary, make_config
    from queryeval.run.log import RunPaths
    from queryeval.run.memory import use_mmap_for_large_blocks

    thresholds = parse_thresholds(fail_under)

    def say(line: str) -> None:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)

    bar = Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=err_console, disable=quiet, transient=False,
    )
    handle = bar.add_task(_progress_unit(repeats, resume), total=None)

    def progress(advance: int, total: int) -> None:
        """Started on the first call, once the suite has loaded, so errors print alone."""
        if total:
            bar.update(handle, total=total)
            if not bar.live.is_started:
                bar.start()
        if advance:
            bar.advance(handle, advance)

    def build_config():
        if suite is None:
            raise ConfigError("missing SUITE (or --resume RUN)")
        if system and responses:
            raise ConfigError("give one of --system or --responses, not both")
        task_options = _parse_options(option)
        flags = {"on_error": on_error, "match": match, "missing": missing, "compat": compat,
                 "tables": str(tables) if tables else None,
                 "corpus": str(corpus) if corpus else None, "k": k,
                 "min_score": min_score, "sampling": sampling, "random_seed": random_seed,
                 "retriever": retriever, "model": model}
        for key, value in flags.items():  # a flag silently beating its --option hid e.g. dense-hnsw
            if value is not None and key in task_options and str(task_options[key]) != str(value):
                flag = "--" + key.replace("_", "-")
                raise ConfigError(f"{flag} {value} and --option {key}={task_options[key]} "
                                  "disagree: give one")
        task_options.update({k: v for k, v in flags.items() if v is not None})
        if export:
            task_options["export"] = export
        if dataset:
            task_options["dataset"] = dataset
        sources = [str(p) for p in graph] + ([str(database)] if database else []) \
            + ([endpoint] if endpoint else [])
        if sum(bool(x) for x in (graph, database, endpoint)) > 1:
            raise ConfigError("give one of --graph, --database or --endpoint")
        if sources:
            task_options["source"] = ",".join(sources)
        if rules:
            task_options["rules"] = rules
        if test_suite is not None:
            task_options["test_suite"] = test_suite
        if data:
            task_options["data"] = str(data)
        if tuning:
            task_options["tuning"] = str(tuning)
        if n:
            task_options["n"] = _per_field(n, int)
        if reformat:
            if not reformat_model:
                raise ConfigError("--reformat needs --reformat-model")
            task_options["reformat"] = {
                "base_url": reformat_base_url, "model": reformat_model,
                "api_key_env": reformat_key_env or None, "temperature": reformat_temperature,
            }
        judge = judge_options(judge_model, judge_base_url, judge_api_key_env, judge_when)
        if judge:
            task_options["judge"] = {**(task_options.get("judge") or {}), **judge}
        ks: list[int] = []
        for part in (pass_k or "").split(","):
            if part.strip():
                try:
                    ks.append(int(part))
                except ValueError:
                    raise ConfigError(f"--pass-k: expected comma-separated integers, got "
                                      f"{pass_k!r}") from None
        sequential = None
        seq_given = [flag for flag, v in (("--baseline", baseline), ("--alpha", alpha),
                                          ("--margin", margin), ("--metric", metric))
                     if v is not None]
        if stop_when_decided:
            if baseline is None:
                raise ConfigError("--stop-when-decided needs --baseline RUN (the run to decide "
                                  "against)")
            sequential = {k: v for k, v in (("baseline", str(baseline.expanduser().resolve())),
                                            ("alpha", alpha), ("margin", margin),
                                            ("metric", metric)) if v is not None}
        elif seq_given:
            raise ConfigError(f"{seq_given[0]} goes with --stop-when-decided")
        # paths are made absolute by the run itself (resolve_config), once, at start
        return make_config(sequential=sequential,
            repeats=repeats, pass_k=ks, cache=cache,
            cache_dir=str(cache_dir.expanduser().resolve()) if cache_dir else None,
            cache_max_mb=cache_max_mb, system_version=system_version, name=name,
            cluster_by=cluster_by, suite=str(suite), labels=str(labels) if labels else None, task=task, system=system,
            responses=str(responses) if responses else None, out=str(out),
            concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
            task_options=task_options, reports=not no_report,
            executor=executor, ray_address=ray_address, max_error_rate=max_error_rate, isolate=isolate,
        )

    def resume_overrides() -> dict:
        """The options given with --resume: the safe ones to apply, the rest refused."""
        safe = {"concurrency": concurrency, "timeout": timeout, "retries": retries,
                "backoff": backoff, "no_report": not no_report, "max_error_rate": max_error_rate}
        always = {"resume", "retry_errors", "force", "quiet", "fail_under", "junit", "github",
                  "otel", "mlflow", "mlflow_uri", "mlflow_experiment"}
        given, refused = {}, []
        for param in ctx.command.params:
            source = ctx.get_parameter_source(param.name)
            if source is None or source.name in ("DEFAULT", "DEFAULT_MAP") or param.name in always:
                continue
            if param.name in safe:
                given["reports" if param.name == "no_report" else param.name] = safe[param.name]
            else:
                refused.append(param.opts[0] if param.opts[0].startswith("-") else param.name.upper())
        if refused:
            raise ConfigError(f"--resume keeps the run's own configuration; drop {', '.join(refused)} "
                              "(only --concurrency, --timeout, --retries, --backoff, --no-report, "
                              "--max-error-rate, --quiet may change)")
        if "reports" in given:
            given["reports"] = not no_report
        make_config(suite="-", **given)  # range checks, one line naming the option
        return given

    interrupted = []

    def on_sigint(signum, frame):  # the first Ctrl-C stops the run cleanly; a second at once
        interrupted.append(True)
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if in_main else None
    try:
        if resume is not None:
            overrides = resume_overrides()
            use_mmap_for_large_blocks()
            result = qe.resume(resume, retry_errors=retry_errors, force=force,
                               overrides=overrides, progress=progress, notice=say)
        else:
            config = build_config()  # checked here: errors name the command-line options
            use_mmap_for_large_blocks()  # large runs: freed arrays leave resident memory at once
            result = qe.evaluate(
                config.suite, system=config.system, responses=config.responses,
                labels=config.labels, task=config.task, out=config.out,
                options=config.task_options, concurrency=config.concurrency,
                timeout=config.timeout, retries=config.retries, backoff=config.backoff,
                reports=config.reports, executor=config.executor,
                ray_address=config.ray_address, max_error_rate=config.max_error_rate,
                isolate=config.isolate, repeats=config.repeats, pass_k=config.pass_k,
                cache=config.cache, cache_dir=config.cache_dir, cache_max_mb=config.cache_max_mb,
                system_version=config.system_version, name=config.name,
                cluster_by=config.cluster_by,
                sequential=(config.sequential.model_dump()
                            if config.sequential is not None else None),
                fail_under=thresholds or None,
                progress=progress)
    except (RunInterrupted, KeyboardInterrupt) as exc:
        if bar.live.is_started:
            bar.stop()
        say(str(exc) if isinstance(exc, RunInterrupted) else "interrupted")
        raise typer.Exit(130) from None
    finally:
        if bar.live.is_started:
            bar.stop()
        if in_main and not interrupted:  # after Ctrl-C, calls still in flight are waited for
            signal.signal(signal.SIGINT, previous)  # at exit: a second Ctrl-C ends that at once

    for w in result.warnings:
        line = console_plain(w).replace("\n", "\\n")  # one line each, whatever a name holds
        err_console.print(f"warning: {line}", markup=False, highlight=False)
    if not quiet:
        summary = result.summary()
        for renderable in summary if isinstance(summary, list) else [summary]:
            console.print(renderable)  # the Repeats tables are part of the run's summary
        if "cache" in result.metrics:
            c = result.metrics["cache"]
            console.print(f"call cache: {c['hits']} hits, {c['calls']} calls ({c['folder']})",
                          markup=False, highlight=False)
    for line in written_lines(RunPaths(result.folder, result.batch_id)):
        console.print(line, markup=False, highlight=False)
    paths = RunPaths(result.folder, result.batch_id)
    for opts, batch_id in result.batch.get("derived_batches", {}).items():
        console.print(f"derived batch {opts}: {paths.folder / f'batch_{batch_id}.json'}",
                      markup=False, highlight=False)
    from queryeval.report.html_figures import batch_to_compare

    which = batch_to_compare(result.batch_id, result.batch.get("derived_batches"))
    if which:
        console.print(which, markup=False, highlight=False)
    from queryeval.cli.ci import run_outputs

    run_outputs(result, thresholds, junit=junit, github=github, otel=otel, mlflow=mlflow,
                mlflow_uri=mlflow_uri, mlflow_experiment=mlflow_experiment)
    judge_calls = result.metrics.get("judge_calls") or {}
    if result.calls["failed"]:
        say(f"{result.calls['failed']} of {result.calls['total']} calls failed:")
    if judge_calls.get("failed"):
        say(f"{judge_calls['failed']} of {judge_calls['total']} calls to the judge failed:")
    if result.calls["failed"] or judge_calls.get("failed"):
        for line in format_error_summary(result.error_summary):
            say(line)
    result.check_calls()
    result.check_golds()
    if thresholds:
        check_thresholds(result.metrics, thresholds)
        console.print("gates passed: " + ", ".join(f"{k} >= {v:g}" for k, v in thresholds.items()),
                      markup=False, highlight=False)


def written_lines(paths: Any) -> list[str]:
    """What a run wrote, a path a line: ``run log: FOLDER`` with the log's file names
    indented below it, then ``report: PATH`` per report and ``export: PATH`` per export
    (each line short enough to read; the whole list was one ~1,000-character line)."""
    logs = [paths.batch, paths.results_jsonl, paths.results_csv, paths.metrics]
    logs += [paths.repeats_csv] if paths.repeats_csv.exists() else []
    lines = [f"run log: {paths.folder}", *(f"  {p.name}" for p in logs if p.exists())]
    reports = (paths.report_xlsx, paths.folder / f"report_{paths.batch_id}.html")
    lines += [f"report: {p}" for p in reports if p.exists()]
    export = paths.folder / f"dabench_{paths.batch_id}.json"
    lines += [f"export: {export}"] if export.exists() else []
    return lines


def _progress_unit(repeats: int, resume: Path | None) -> str:
    """What the progress bar counts: ``cases``, or ``attempts`` (case × repeat) with repeats,
    also when resuming a run of repeats."""
    if resume is not None:
        from queryeval.run.log import RunLog

        try:
            repeats = RunLog.open(resume).batch.get("evaluation_config", {}).get("repeats") or 1
        except Exception:  # noqa: BLE001 - the resume itself reports a bad RUN
            repeats = 1
    return "attempts" if isinstance(repeats, int) and repeats > 1 else "cases"
