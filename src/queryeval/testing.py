"""Helpers for asserting a suite's quality in a project's own pytest tests.

    from queryeval.testing import assert_suite

    def test_selection_quality():
        assert_suite("evals/sdmx", system="python:mybot.py:select",
                     thresholds={"macro_recall": 0.8, "macro_precision": 0.75})
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from queryeval.errors import GateFailure


def assert_suite(suite: str | Path, *, responses: str | Path | None = None,
                 system: str | None = None, thresholds: Mapping[str, float],
                 task: str | None = None, out: str | Path | None = None,
                 concurrency: int = 4, timeout: float | None = 60.0, retries: int = 2,
                 **options: Any) -> dict:
    """Run ``suite`` against ``system`` (or recorded ``responses``) and assert every
    ``overall_metrics`` threshold (``value >= threshold``). Extra keyword arguments are task
    options (e.g. ``include_extra_dimensions=False``, ``on_error="skip"``).

    The run log goes to a temporary folder removed afterwards, unless ``out`` is given.
    Returns the metrics document. Raises AssertionError listing every missed threshold (and
    the run's errors, which often explain them); ConfigError for an unknown metric name.
    """
    from queryeval.report.gates import check_thresholds
    from queryeval.run.evaluate import RunConfig, start_run

    if not thresholds:
        raise ValueError("assert_suite needs at least one threshold")

    def run(folder: str | Path) -> dict:
        config = RunConfig(
            suite=str(suite), task=task, system=system,
            responses=str(responses) if responses is not None else None, out=str(folder),
            concurrency=concurrency, timeout=timeout, retries=retries, backoff=0.1,
            task_options=dict(options), reports=False,
        )
        return start_run(config).metrics

    if out is not None:
        metrics = run(out)
    else:
        with tempfile.TemporaryDirectory(prefix="queryeval-") as tmp:
            metrics = run(tmp)
    try:
        check_thresholds(metrics, thresholds)
    except GateFailure as exc:
        overall = metrics.get("overall_metrics", {})
        extra = ""
        if overall.get("errors"):
            extra = f"\n  the run had {overall['errors']} failed call(s): {overall.get('errors_by_kind')}"
        raise AssertionError(f"suite {suite}: {exc}{extra}") from None
    return metrics
