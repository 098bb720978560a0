"""Helpers for asserting a suite's quality in a project's own pytest tests.

The whole suite against thresholds::

    from queryeval.testing import assert_suite

    def test_selection_quality():
        assert_suite("evals/sdmx", system="python:mybot.py:select",
                     thresholds={"macro_recall": 0.8, "macro_precision": 0.75})

A nondeterministic system, gated on the repeats figures (docs/repeats.md)::

    assert_suite("evals/sdmx", system=mybot, repeats=5, pass_k=[3],
                 thresholds={"pass@3": 0.9, "pass_rate": 0.7})

Or one test per case, each failing with its own reason (expected vs got)::

    import pytest
    import queryeval as qe

    @pytest.mark.parametrize("case", qe.testing.cases("evals/sdmx"))
    def test_case(case):
        qe.testing.check_case(case, mybot)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import GateFailure
from queryeval.suite.models import Case


def assert_suite(suite: Any, *, thresholds: Mapping[str, float],
                 out: str | Path | None = None, concurrency: int = 4,
                 timeout: float | None = 60.0, retries: int = 2, backoff: float = 0.1,
                 **kwargs: Any) -> dict:
    """Run ``suite`` as :func:`queryeval.evaluate` does and assert every threshold
    (``value >= threshold``). Everything else is passed to :func:`queryeval.evaluate`: the
    ``system`` (a spec string, a callable, an ``async def`` callable, an object with
    ``.call``) or recorded ``responses``, ``task``, ``labels``, ``repeats``, ``pass_k``,
    ``options`` and task options as keywords (e.g. ``include_extra_dimensions=False``,
    ``on_error="skip"``); ``suite`` is a path or cases in memory.

    ``thresholds`` name any figure the run reports (:func:`queryeval.report.gates.gate_values`):
    ``overall_metrics`` and, with ``repeats``, ``pass_rate``, ``pass@k``, ``pass^k`` as the
    metrics JSON names them; unknown names raise ConfigError before any call. The run log goes
    to a temporary folder removed afterwards, unless ``out`` is given. Returns the metrics
    document. Raises AssertionError listing every missed threshold (and the run's errors,
    which often explain them).
    """
    from queryeval.api.evaluate import evaluate
    from queryeval.report.gates import check_thresholds

    if not thresholds:
        raise ValueError("assert_suite needs at least one threshold")
    run = evaluate(suite, out=out, concurrency=concurrency, timeout=timeout, retries=retries,
                   backoff=backoff, fail_under=dict(thresholds), **kwargs)
    metrics = run.metrics
    try:
        check_thresholds(metrics, thresholds)
    except GateFailure as exc:
        overall = metrics.get("overall_metrics", {})
        extra = ""
        if overall.get("errors"):
            extra = f"\n  the run had {overall['errors']} failed call(s): {overall.get('errors_by_kind')}"
        name = suite if isinstance(suite, (str, os.PathLike)) else "(cases in memory)"
        raise AssertionError(f"suite {name}: {exc}{extra}") from None
    return metrics


# --- one test per case -------------------------------------------------------------------------
# "expected" and "got" are cut to queryeval.report.junit.REASON_CHARS characters each


@dataclass(frozen=True)
class SuiteCase:
    """A case of a suite with what is needed to score it alone (its task and task options)."""

    case: Case
    task: str
    options: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.case.id

    def __str__(self) -> str:
        return self.case.id

    def __repr__(self) -> str:
        return f"SuiteCase({self.case.id!r}, task={self.task!r})"


def cases(suite: Any, *, task: str | None = None, labels: str | Path | None = None,
          **options: Any) -> list:
    """The suite's scored cases as ``pytest.param`` values (test ids are the case ids), for
    ``@pytest.mark.parametrize("case", cases(suite))``. ``suite`` is a path or cases in
    memory (as for :func:`queryeval.evaluate`); ``task`` and task options (``k``,
    ``corpus``, ``match``, …) are kept with each case for :func:`check_case`."""
    import pytest

    from queryeval.api.cases import check_cases
    from queryeval.api.evaluate import task_options
    from queryeval.suite.loader import load_suite
    from queryeval.tasks.base import get_task, infer_task

    opts = task_options(None, **options)
    if isinstance(suite, (str, os.PathLike)):
        loaded = load_suite(suite, labels=labels)
        kinds, items = loaded.task_kinds(), list(loaded.iter_cases())
    else:
        items = check_cases(suite)
        kinds = set().union(*(c.task_kinds() for c in items))
    name = infer_task(kinds, task)
    scorer = get_task(name, opts)
    try:
        chosen = [c for c in scorer.select_cases(c for c in items if scorer.scored_turns(c))]
    finally:
        scorer.close()
    return [pytest.param(SuiteCase(c, name, opts), id=c.id) for c in chosen]


def check_case(case: SuiteCase | Case | Mapping, system: Any = None, *, task: str | None = None,
               thresholds: Mapping[str, float] | None = None, timeout: float | None = 60.0,
               retries: int = 2, backoff: float = 0.1, repeats: int = 1,
               pass_k: list[int] | None = None, **options: Any) -> dict:
    """Run one case against ``system`` and raise AssertionError with a readable reason
    (failing metrics, then expected vs got) unless it passes.

    A case passes when its call succeeded and the task's pass rule says so (the run
    model's verdict, :mod:`queryeval.run.results`, the one the HTML report shows), or, with
    ``thresholds``, when each named per-case metric is at least its threshold. ``system`` is what :func:`queryeval.evaluate` accepts (None:
    the task's built-in system). Returns the case's result record.

    With ``repeats`` N > 1 the case is run N times as :func:`queryeval.evaluate` runs it
    (``pass_k`` as there) and the thresholds name the run's figures for it (one case: the
    case's own): ``pass_rate``, ``pass@k``, ``pass^k``, the per-case metrics' means over the
    attempts; without thresholds every attempt must pass (``pass_rate`` = 1). Returns the
    first failed attempt's record, else the first attempt's."""
    __tracebackhide__ = True  # pytest shows the caller's line and the reason, not this code
    from queryeval.api.cases import check_cases
    from queryeval.api.evaluate import task_options
    from queryeval.run.results import reduce_cases
    from queryeval.run.runner import RetryPolicy, evaluate_case
    from queryeval.systems.factory import make_system
    from queryeval.tasks.base import get_task, infer_task

    if isinstance(case, SuiteCase):
        the_case, name = case.case, task or case.task
        opts = {**case.options, **task_options(None, **options)}
    else:
        (the_case,) = check_cases([case])
        name, opts = infer_task(the_case.task_kinds(), task), task_options(None, **options)
    if repeats != 1 or pass_k:
        return _check_repeated(the_case, system, name, opts, thresholds, timeout=timeout,
                               retries=retries, backoff=backoff, repeats=repeats, pass_k=pass_k)
    scorer = get_task(name, opts)
    try:
        runner = make_system(system) if system is not None else scorer.default_system()
        try:
            record = evaluate_case(the_case, runner, scorer, timeout=timeout,
                                   policy=RetryPolicy(retries=retries, backoff=backoff))
        finally:
            runner.close()
    finally:
        scorer.close()
    (result,) = reduce_cases(scorer, [record])  # the run model: one value, one pass rule
    values, passed = dict(result.means), result.verdict == "pass"
    if record.get("status") == "error":
        raise AssertionError(f"case {the_case.id}: {_error_reason(record)}")
    if thresholds:
        unknown = [m for m in thresholds if m not in values]
        if unknown:
            raise AssertionError(f"case {the_case.id}: no per-case metric {', '.join(unknown)} "
                                 f"(has: {', '.join(values) or 'none'})")
        failed = {m: values[m] for m, t in thresholds.items() if values[m] < t}
        wanted = {m: thresholds[m] for m in failed}
    else:
        failed = {} if passed else {m: v for m, v in values.items() if 0.0 <= v < 1.0}
        if "passed" in failed:  # the task's pass rule is this figure (free-form): not the others
            failed = {"passed": failed["passed"]}
        wanted = {m: 1.0 for m in failed}
        if not failed and not passed:
            failed = {"verdict": 0.0}
    if failed:
        scores = ", ".join(f"{m} = {v:.4g} (wanted >= {wanted.get(m, 1.0):g})"
                           for m, v in failed.items())
        expected, got = _expected_got(record)
        scores += "" if thresholds else _decision_reason(record)
        raise AssertionError(f"case {the_case.id}: {scores}\n  expected: {expected}\n"
                             f"  got:      {got}")
    return record


def _check_repeated(the_case: Case, system: Any, name: str, opts: dict,
                    thresholds: Mapping[str, float] | None, **run: Any) -> dict:
    """:func:`check_case` with repeats: one run of the one case, its figures read from the
    run's metrics (:func:`queryeval.report.gates.gate_values`)."""
    __tracebackhide__ = True
    import csv

    from queryeval.api.evaluate import evaluate
    from queryeval.report.gates import check_threshold_names, gate_values
    from queryeval.tasks.base import get_task

    scorer = get_task(name, opts)
    try:  # a name the run will not report (pass@3 without 3 in pass_k): before any call
        check_threshold_names(scorer, thresholds or {}, repeats=run["repeats"],
                              pass_k=run.get("pass_k") or ())
    finally:
        scorer.close()
    result = evaluate([the_case], system=system, task=name, options=opts, concurrency=1, **run)
    values = gate_values(result.metrics)
    wanted = dict(thresholds or {"pass_rate": 1.0})
    unknown = [m for m in wanted if m not in values]
    if unknown:
        raise AssertionError(f"case {the_case.id}: no figure {', '.join(unknown)} "
                             f"(has: {', '.join(k for k in values if '.' not in k)})")
    failed = {m: values[m] for m, t in wanted.items() if values[m] is None or values[m] < t}
    records = sorted(result.records, key=lambda r: r.get("repeat") or 0)
    with open(result.folder / f"repeats_{result.batch_id}.csv", newline="",
              encoding="utf-8") as fh:
        outcomes = next(iter(csv.DictReader(fh)), {}).get("outcomes", "")
    first_bad = next((r for r, o in zip(records, outcomes, strict=False) if o != "P"),
                     records[0])
    if not failed:
        return first_bad
    scores = ", ".join(f"{m} = {'undefined' if v is None else format(v, '.4g')} "
                       f"(wanted >= {wanted[m]:g})" for m, v in failed.items())
    expected, got = _expected_got(first_bad)
    raise AssertionError(f"case {the_case.id}: {scores}\n  attempts: {outcomes} "
                         "(P passed, F failed, E the call failed)\n"
                         f"  expected: {expected}\n"
                         f"  got:      {got} (repeat {first_bad.get('repeat')})")


def _errors(record: dict) -> str:
    errors = [t.get("error") for t in record.get("turns") or [] if isinstance(t, dict)]
    errors = [e for e in [record.get("error"), *errors] if e]
    return "; ".join(f"{e.get('kind')}: {e.get('message')}" for e in errors) or \
        ", ".join(record.get("error_kinds") or []) or "error"


def _error_reason(record: dict) -> str:
    """Why a case is an error, in the JUnit report's words when the gold query failed (the
    system answered), else the failed call's errors."""
    from queryeval.report.junit import error_line

    line = error_line(record)
    return line if not line.startswith("call failed: ") else \
        f"the system call failed: {_errors(record)}"


def _decision_reason(record: dict) -> str:
    """`` (RULE: WHY)`` of a record that says what decided it (the JUnit report's rule)."""
    from queryeval.report.junit import decision_reason

    return decision_reason(record)


def _expected_got(record: dict) -> tuple[str, str]:
    """What the case wanted and what the system gave (one rule with the JUnit failures)."""
    from queryeval.report.junit import expected_got

    return expected_got(record)
