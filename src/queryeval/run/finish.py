"""Finishing a run: aggregate the records, write the CSV and the metrics (with the calls
and the error summary), the repeats section, the derived batches, then the reports."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from queryeval.errors import QueryevalError, one_line
from queryeval.io.idindex import IdIndex
from queryeval.run.log import RunLog
from queryeval.run.records import RecordStream
from queryeval.tasks.base import Task, get_task


class CallsFailed(QueryevalError):
    """Every call failed, or more than ``--max-error-rate`` of them (exit code 3). The run
    log and reports are complete; the error summary was printed before this line."""

    exit_code = 3


def check_error_rate(calls: int, failed: int, limit: float = 1.0, *,
                     to: str = "the system") -> None:
    """Raise :class:`CallsFailed` when all ``calls`` failed, or more than ``limit`` of them
    (``to``: whom the calls went to, the system or the judge; both count the same way)."""
    if not calls or not failed:
        return
    rate = failed / calls
    if failed == calls:
        raise CallsFailed(f"all {calls} calls to {to} failed" if calls > 1 else
                          f"the one call to {to} failed")
    if rate > limit:
        raise CallsFailed(f"{failed} of {calls} calls to {to} failed "
                          f"({rate:.1%}), more than --max-error-rate {limit:g}")


def _one_line(text: str, limit: int = 500) -> str:
    """A system's error message as one printable line: whitespace runs become one space and
    other control characters (a terminal escape, say) are shown escaped, never sent raw."""
    text = " ".join(text.split())[:limit]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ErrorTally:
    """Failed calls per error kind, with the first message and case of each (in suite order)."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = 0
        self.judge_calls = 0   # calls to the LLM judge (a record's judge / answer_judge)
        self.judge_failed = 0
        self.kinds: dict[str, dict] = {}

    def add(self, record: dict) -> dict:
        turns = record.get("turns")
        if (not isinstance(turns, list) and not isinstance(record.get("error"), dict)
                and not isinstance(record.get("judge"), dict)
                and not isinstance(record.get("answer_judge"), dict)):
            self.calls += 1  # one call, no error, no judge: nothing else to count
            return record
        if isinstance(turns, list):
            errors = [t.get("error") for t in turns]
        else:
            errors = [record.get("error")]
        self.calls += len(errors)
        # a failed judge call (kind judge_*) fails its case too, but the call that failed went
        # to the judge: counted once, as a judge call, never as a failed call to the system
        errors = [e for e in errors
                  if not (isinstance(e, dict) and str(e.get("kind", "")).startswith("judge_"))]
        judged = [record.get(key) for key in ("judge", "answer_judge")]
        judge_errors = [j.get("error") for j in judged if isinstance(j, dict)]
        self.judge_calls += len(judge_errors)
        for err, of_judge in [*((e, False) for e in errors), *((e, True) for e in judge_errors)]:
            if not isinstance(err, dict):
                continue
            if of_judge:
                self.judge_failed += 1
            else:
                self.failed += 1
            kind = str(err.get("kind", "error"))
            entry = self.kinds.get(kind)
            if entry is None:
                message = _one_line(str(err.get("message", "")))
                self.kinds[kind] = {"kind": kind, "count": 1, "first_message": message,
                                    "case": str(record.get("case_id", ""))}
            else:
                entry["count"] += 1
        return record

    def summary(self) -> list[dict]:
        return list(self.kinds.values())


def format_error_summary(summary: list[dict]) -> list[str]:
    """One line per error kind: ``12 × connection: ConnectError: ... (case abc)``; each
    line one line whatever the case id and message hold (:func:`one_line`: a newline
    before ``::error::`` would start a GitHub Actions command)."""
    return [one_line(f"{e['count']} × {e['kind']}: {e['first_message']} (case {e['case']})",
                     None) for e in summary]


Reporter = Callable[[RunLog, Task, RecordStream, dict, "list[str] | None"], Any]
"""Writes the reports of a finished run: ``(log, task, records, metrics, warnings)``; the
report layer's ``write_run_reports``. The run layer calls it and never imports it."""


def finish(log: RunLog, task: Task, order: IdIndex | Sequence[str] | None = None, *,
           reporter: Reporter | None = None, warnings: list[str] | None = None,
           extra: dict | None = None) -> tuple[dict, RecordStream]:
    """Aggregate the records of a log and write the CSV and metrics atomically, mark the
    batch complete, then call ``reporter`` (None: no reports).

    The records are streamed from the results file in ``order`` (case ids, or an IdIndex of
    ranks). Without repeats one pass does it all (:func:`_one_pass`): it aggregates, writes
    the CSV and re-scores each record for every derived batch, writing that batch's records
    and CSV; each derived batch's aggregate then reads its own (smaller) records once. A run
    with repeats makes one pass to aggregate, one to write the CSV and one per derived batch.
    ``extra`` goes into the metrics (e.g. the call cache's counts). A run with repeats (its
    batch's ``repeats`` > 1) also gets the ``repeats`` section of the metrics and
    ``repeats_<id>.csv`` (docs/repeats.md)."""
    try:
        records = log.scan_records(order)
        if _repeats(log) > 1:
            add = {**(extra or {}), **_repeat_section(log, task, records)}
            metrics = _write_tables(log, task, records, extra=add, repeat_column=True)
            _write_variants(log, task, records)
        else:
            metrics = _one_pass(log, task, records, extra)
        log.mark_complete()
        if reporter is not None:
            reporter(log, task, records, metrics, warnings)
        return metrics, records
    finally:
        task.close()


def _repeats(log: RunLog) -> int:
    value = (log.batch.get("evaluation_config") or {}).get("repeats", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _repeat_section(log: RunLog, task: Task, records: RecordStream) -> dict:
    """For a run with repeats: ``{"repeats": ...}`` for the metrics, and
    ``repeats_<id>.csv`` written (docs/repeats.md); else nothing."""
    repeats = _repeats(log)
    if repeats <= 1:
        return {}
    from queryeval.run.repeats import pass_ks, repeat_stats, write_cases_csv
    from queryeval.run.results import counted_cases, reduce_cases

    ks = pass_ks(repeats, (log.batch.get("evaluation_config") or {}).get("pass_k"))
    # the run model's one reduction, from the record stream (no file reopened)
    # under on_error=skip, the counted cases only: the population of the task's figures
    cases = counted_cases(task.options.on_error, reduce_cases(task, records))
    stats = repeat_stats(cases, repeats, ks)
    write_cases_csv(log.paths.repeats_csv, stats)
    return {"repeats": stats.result()}


CLUSTER = "cluster"
"""The results CSV's last column: the case's cluster (cases sharing a file, a document, a
building; docs/compare.md), blank when the case is its own."""


def csv_layout(task: Task) -> tuple[list[str], Callable[[dict], Iterable[dict]]]:
    """The results CSV's columns and a record's rows: the task's, then :data:`CLUSTER` (none
    added when the task has a column of that name)."""
    columns, rows = list(task.csv_columns), task.csv_rows
    if CLUSTER in columns:
        return columns, rows

    def with_cluster(record: dict) -> Iterator[dict]:
        cluster = record.get(CLUSTER)
        for row in rows(record):
            if row is record or type(row) is not dict:
                row = dict(row)  # never the record itself
            row[CLUSTER] = cluster  # the task's fresh row: no copy of every row
            yield row

    return [*columns, CLUSTER], with_cluster


def _write_tables(log: RunLog, task: Task, records: RecordStream, *, extra: dict | None = None,
                  repeat_column: bool = False) -> dict:
    """Aggregate, write the CSV (counting failed calls on the way) and the metrics, which
    carry ``calls`` (total, failed) and ``error_summary`` (per kind: kind, count,
    first_message, case). ``repeat_column``: the CSV's second column is ``repeat``."""
    if repeat_column:  # counted per case: docs/repeats.md
        from queryeval.run.repeats import aggregate_attempts

        metrics = aggregate_attempts(task, records, _repeats(log))
    else:
        metrics = task.aggregate(records)
    errors = ErrorTally()
    columns, csv_rows = csv_layout(task)
    if repeat_column:
        columns = [*columns[:1], "repeat", *[c for c in columns[1:] if c != "repeat"]]
        rows = ({**row, "repeat": r.get("repeat")}
                for r in records for row in csv_rows(errors.add(r)))
    else:
        rows = (row for r in records for row in csv_rows(errors.add(r)))
    log.write_csv(columns, rows)
    _put_calls(metrics, errors, extra)
    log.write_metrics(metrics)
    return metrics


def _derived_logs(log: RunLog, task: Task) -> list[tuple[str, RunLog, Task]]:
    """The derived batches of a run (e.g. one per smaller k), created (batch file written,
    status running), each with its key (its options) and its task. Their ids are derived from
    the parent's id and the options (and kept in the parent batch), so finishing again, after
    a resume or after a kill part-way through writing them, rewrites the same batches instead
    of adding more."""
    out = []
    known = log.batch.get("derived_batches", {})
    base_opts = task.options.model_dump()
    for opts in task.variant_options():
        key = json.dumps(opts, sort_keys=True)
        vtask = get_task(task.name, {**base_opts, **opts})
        fields = {k: v for k, v in log.batch.items()
                  if k not in ("log_schema", "batch_id", "timestamp", "status", "derived_batches",
                               "completed_at", "resumed_at")}
        config = dict(fields.get("evaluation_config", {}))
        config["task_options"] = vtask.options.model_dump()
        config.update(vtask.batch_info())
        fields.update({"evaluation_config": config, "derived_from": log.paths.batch_id})
        batch_id = known.get(key) or str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                     f"queryeval:{log.paths.batch_id}:{key}"))
        out.append((key, RunLog.create(log.paths.folder, fields, batch_id=batch_id, dated=False), vtask))
    return out


def _mark_derived(log: RunLog, derived: list[tuple[str, RunLog, Task]]) -> None:
    known = log.batch.get("derived_batches", {})
    for key, vlog, _ in derived:
        known[key] = vlog.paths.batch_id
    if derived:
        log.batch["derived_batches"] = known


def _write_variants(log: RunLog, task: Task, records: RecordStream) -> None:
    """Derived batches (e.g. one per smaller k): the same outputs re-scored with other task
    options, each a complete batch of its own (:func:`_derived_logs`), each re-scored from
    a pass of its own over ``records`` (the path of a run with repeats; :func:`_one_pass`
    writes them during the parent's pass)."""
    derived = _derived_logs(log, task)
    for _, vlog, vtask in derived:
        vlog.rewrite_records(vtask.rescore_record(r) for r in records)
        vrecords = vlog.scan_records(in_order=True)  # just written, in the parent's order
        _write_tables(vlog, vtask, vrecords, extra=_repeat_section(vlog, vtask, vrecords),
                      repeat_column=_repeats(vlog) > 1)
        vlog.mark_complete()
    _mark_derived(log, derived)


def _one_pass(log: RunLog, task: Task, records: RecordStream, extra: dict | None) -> dict:
    """The run's aggregate, its CSV (with the error tally) and every derived batch's records,
    CSV and aggregate, from one read of ``records`` (a run without repeats). A derived task
    with an ``accumulator()`` (its aggregate fed record by record: the retrieval task's) is
    fed each re-scored record as it is written; another task's aggregate reads its records
    (just written, in the parent's order) once. The files are those of
    :func:`_write_tables` and :func:`_write_variants`, byte for byte: the same functions
    compute every cell and figure, only the passes are shared."""
    derived = _derived_logs(log, task)
    errors = ErrorTally()
    columns, csv_rows = csv_layout(task)
    tallies = [ErrorTally() for _ in derived]
    accumulators = [_accumulator(vtask) for _, _, vtask in derived]
    with contextlib.ExitStack() as stack:
        add_row = stack.enter_context(log.csv_writer(columns))
        sinks = [(vtask.rescore_record, stack.enter_context(vlog.records_writer()),
                  stack.enter_context(vlog.csv_writer(layout[0])), layout[1], tally.add,
                  acc.add if acc is not None else None)
                 for (_, vlog, vtask), tally, acc in zip(derived, tallies, accumulators, strict=True)
                 for layout in [csv_layout(vtask)]]

        def through() -> Iterator[dict]:
            for r in records:
                yield r  # aggregated first, as in the separate passes (nothing read changes)
                for row in csv_rows(errors.add(r)):
                    add_row(row)
                for rescore, add_record, add_vrow, vrows, vtally, vadd in sinks:
                    rv = rescore(r)
                    add_record(rv)
                    for row in vrows(vtally(rv)):
                        add_vrow(row)
                    if vadd is not None:
                        vadd(rv)

        stream = through()
        metrics = task.aggregate(stream)
        for _ in stream:  # an aggregate that stopped early: the files still get every record
            pass
    _put_calls(metrics, errors, extra)
    log.write_metrics(metrics)
    for (_, vlog, vtask), tally, acc in zip(derived, tallies, accumulators, strict=True):
        vmetrics = (acc.result() if acc is not None else
                    vtask.aggregate(vlog.scan_records(in_order=True)))
        _put_calls(vmetrics, tally, None)
        vlog.write_metrics(vmetrics)
        vlog.mark_complete()
    _mark_derived(log, derived)
    return metrics


def _accumulator(task: Task) -> Any:
    """The task's aggregate fed record by record (``add(record)``, then ``result()``), when
    the task offers one (``task.accumulator()``); else None (its aggregate reads a stream)."""
    make = getattr(task, "accumulator", None)
    return make() if callable(make) else None


def _put_calls(metrics: dict, errors: ErrorTally, extra: dict | None) -> None:
    """The figures the CSV pass counted (calls, judge calls, error summary), then ``extra``."""
    metrics["calls"] = {"total": errors.calls, "failed": errors.failed}
    if errors.judge_calls:  # judge calls count toward --max-error-rate too (docs/judge.md)
        metrics["judge_calls"] = {"total": errors.judge_calls, "failed": errors.judge_failed}
    metrics["error_summary"] = errors.summary()
    metrics.update(extra or {})
