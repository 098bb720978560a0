"""The CI and observability outputs of ``run`` and ``compare`` (docs/ci.md): ``--junit``, the
GitHub step summary and annotations, ``--otel``, ``--mlflow``. Written before the exit code
is decided (gates, failed calls, regressions), so a failing step still leaves its reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from queryeval.cli.console import console


def github_default(flag: bool | None) -> bool:
    """``--github/--no-github``: on by default inside GitHub Actions."""
    return flag if flag is not None else os.environ.get("GITHUB_ACTIONS") == "true"


def _say(line: str) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def _annotate(lines: list[str]) -> None:
    for line in lines:  # plain stdout: the runner reads workflow commands from it
        print(line, flush=True)


def run_outputs(run: Any, thresholds: dict[str, float], *, junit: Path | None,
                github: bool | None, otel: bool, mlflow: bool, mlflow_uri: str | None,
                mlflow_experiment: str) -> None:
    """``run``: a finished ``qe.Run``. Each output's modules are imported only when it is
    asked for (a plain run imports none of them)."""
    results = run.results
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    on_github = github_default(github)
    gates: list = []
    if thresholds and (summary or on_github):  # the gates are shown in GitHub's outputs only
        from queryeval.errors import ConfigError
        from queryeval.report.gates import evaluate_thresholds

        try:
            gates = evaluate_thresholds(run.metrics, thresholds)
        except ConfigError:
            gates = []  # an unknown name: the gate check that follows says so
    if junit is not None:
        from queryeval.report.junit import run_junit, write_junit

        _say(f"junit: {write_junit(run_junit(results), junit)}")
    if summary:
        from queryeval.report import github as gh

        gh.append_summary(gh.run_summary(results, gates), summary)
    if on_github:
        from queryeval.report import github as gh

        _annotate(gh.run_commands(results, gates))
    if otel:
        from queryeval.integrations.otel import export_run

        _say(f"otel: {export_run(results)} spans exported")
    if mlflow:
        from queryeval.integrations.mlflow import log_run

        rid = log_run(results, tracking_uri=mlflow_uri, experiment=mlflow_experiment)
        _say(f"mlflow: run {rid}")


def compare_outputs(comp: Any, *, junit: Path | None, github: bool | None,
                    fail_on_regression: bool) -> None:
    """``comp``: the raw two-run or N-way comparison."""
    from queryeval.report import github as gh

    if junit is not None:
        from queryeval.report.junit import comparison_junit, write_junit

        _say(f"junit: {write_junit(comparison_junit(comp), junit)}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        gh.append_summary(gh.comparison_summary(comp), summary)
    if github_default(github):
        _annotate(gh.regression_commands(comp, fail=fail_on_regression))
