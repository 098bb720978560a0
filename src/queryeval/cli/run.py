"""``queryeval run``: evaluate a suite against a system (or recorded outputs), or resume a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import typer

from queryeval.cli import task_flags
from queryeval.cli.cache import CallCacheDir
from queryeval.cli.console import console, err_console
from queryeval.cli.help import Command, _hide_flag_types
from queryeval.io.safetext import console_plain

TASK_FLAGS = "queryeval.task_flags"
"""Where :class:`RunCommand` leaves the task flags' values (``ctx.meta``) for the command."""


class RunCommand(Command):
    """``run`` with the task flags of :mod:`queryeval.cli.task_flags` after ``--labels``:
    built when ``run`` parses its arguments or shows its help (never for other commands);
    their values reach the command through ``ctx.meta``, by flag."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        at = next((i + 1 for i, p in enumerate(params) if p.name == "labels"), len(params))
        return _hide_flag_types([*params[:at], *task_flags.click_params(), *params[at:]])

    def invoke(self, ctx: Any) -> Any:
        ctx.meta[TASK_FLAGS] = {name: ctx.params.pop(name)
                                for name in task_flags.dests() if name in ctx.params}
        return super().invoke(ctx)


COMMAND_CLASS = RunCommand


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
    out: Path = typer.Option(Path("runs"), "--out", "-o", help="Run log folder."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", help="Cases in flight (1-1024)."),
    timeout: float = typer.Option(60.0, "--timeout", help="Per-call timeout, seconds (at most a week)."),
    retries: int = typer.Option(2, "--retries", help="Retries of transient failures (0-100)."),
    backoff: float = typer.Option(0.5, "--backoff", help="First retry wait, seconds."),
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
    cache_dir: CallCacheDir = None,
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
    from queryeval.run.config import make_config
    from queryeval.run.evaluate import RunInterrupted
    from queryeval.run.finish import format_error_summary
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
        task_options = task_flags.task_options(ctx.meta.get(TASK_FLAGS, {}),
                                               _parse_options(option))
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
        for param in ctx.command.get_params(ctx):
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
            result = qe.evaluate(config, fail_under=thresholds or None, progress=progress)
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
