"""Re-score a run log with other task options, without calling the system again.

The records hold every scored turn's target and output, so the task rebuilt with the stored
``task_options`` updated by the new ones can recompute each record
(:meth:`Task.rescore_record`) and the aggregates (:meth:`Task.aggregate`). The result is a
NEW batch (new id) in the usual layout whose batch file says where it came from
(``rescored_from``: source batch id, path and the options that changed). The source run is
only read, never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError, InputError, one_line
from queryeval.run.log import RunLog, now_iso
from queryeval.run.records import RecordStream, csv_order
from queryeval.run.results import resolve_batch


@dataclass
class RescoreResult:
    log: RunLog
    task: Any
    metrics: dict
    records: RecordStream
    """The new batch's records in suite order, read from its results file on each pass."""
    source_batch_id: str
    changed_options: dict


def rescore_run(source: str | Path, options: dict | None = None, *, out: str | Path | None = None,
                reports: bool = True, html: bool = True) -> RescoreResult:
    """Re-score ``source`` (a batch file, a file of the batch, or a one-run folder) with
    ``options`` overriding its stored task options; write the new batch under ``out``
    (default: the source's output folder, i.e. the parent of its date folder).

    Raises ConfigError for an unknown task kind or invalid options (the task validates them),
    and when the source has no records.
    """
    from queryeval.report.run_reports import write_run_reports
    from queryeval.run.finish import finish
    from queryeval.run.prepare import software_info
    from queryeval.tasks.base import get_task

    src_log = RunLog.open(resolve_batch(source))
    task_name = src_log.batch.get("task")
    if not task_name:
        raise ConfigError(f"{src_log.paths.batch}: the batch names no task")
    order = csv_order(src_log.paths.results_csv)  # the source's suite order
    source_records = src_log.scan_records(order)  # streamed: a million records stay on disk
    if not source_records:
        raise ConfigError(f"{src_log.paths.results_jsonl}: no records to re-score")
    src = src_log.batch
    stored = dict(src.get("evaluation_config", {}).get("task_options") or {})
    # an option that is an object (the judge) changes the fields given, keeps the others:
    # judge={"when": "never"} re-scores without the stored verdicts, same model and endpoint
    merged = {k: ({**stored[k], **v} if isinstance(v, dict) and isinstance(stored.get(k), dict)
                  else v) for k, v in (options or {}).items()}
    task = get_task(task_name, {**stored, **merged})
    new_options = task.options.model_dump()
    changed = {k: v for k, v in new_options.items() if stored.get(k) != v}

    config = dict(src.get("evaluation_config", {}))
    config["task_options"] = new_options
    target = Path(out) if out is not None else src_log.paths.folder.parent
    config["out"] = str(target.resolve())
    fields = {
        "task": task_name,
        "evaluation_config": config,
        "suite_info": src.get("suite_info"),
        "software_info": software_info(),
        "rescored_from": {
            "batch_id": src_log.paths.batch_id,
            "path": str(src_log.paths.batch.resolve()),
            "task_options": stored,
            "changed_options": changed,
            "rescored_at": now_iso(),
        },
    }
    log = RunLog.create(target, fields)
    try:
        for record in source_records:
            log.append(_rescored(task, record, src_log.paths.results_jsonl))
    finally:
        log.close()
    metrics, records = finish(log, task, order,
                              reporter=write_run_reports if reports else None)
    if html and reports:
        from queryeval.report.html import write_html_report

        write_html_report(log.paths.batch)
    return RescoreResult(log, task, metrics, records, src_log.paths.batch_id, changed)


def _rescored(task: Any, record: dict, path: Path) -> dict:
    """``task.rescore_record(record)``; a record whose fields have another shape than the task
    writes (a damaged or hand-edited run file: ``"reference": "x"``) is one error line naming
    the file and the case, not a traceback."""
    try:
        return task.rescore_record(record)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        case = record.get("case_id") if isinstance(record, dict) else None
        raise InputError(f"a field has another shape than the {task.name} task writes "
                         f"({type(exc).__name__}: {one_line(exc)})", path=path,
                         record=one_line(case)) from None
