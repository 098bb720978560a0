"""Start, resume and finish a run: suite -> system -> outputs -> scores -> run log -> reports."""

from __future__ import annotations

import contextlib
import functools
import json
import platform
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import queryeval
from queryeval.errors import ConfigError, OutputError
from queryeval.io.idindex import IdIndex, KeyBuilder
from queryeval.run.log import RunLog, now_iso
from queryeval.run.records import RecordStream
from queryeval.run.runner import RetryPolicy, run_cases
from queryeval.suite.loader import Suite, load_suite
from queryeval.suite.models import Case
from queryeval.systems.base import System, make_system
from queryeval.systems.recorded import RecordedSystem
from queryeval.tasks.base import Task, get_task, infer_task


class RunConfig(BaseModel):
    """Everything that defines a run; stored in the batch file so a run can be resumed."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    labels: str | None = None
    task: str | None = None
    system: str | None = None
    responses: str | None = None
    out: str = "runs"
    concurrency: int = Field(4, ge=1, le=1024)
    timeout: float | None = Field(60.0, gt=0)
    retries: int = Field(2, ge=0, le=100)
    backoff: float = Field(0.5, ge=0)
    task_options: dict[str, Any] = Field(default_factory=dict)
    reports: bool = True
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    isolate: bool = False
    """A ``python:`` system runs in worker processes (systems/python.py)."""


REPORT_CASE_LIMIT = 100_000
"""Above this many cases a run writes no xlsx/HTML report by itself (they hold every case in
memory, and Excel stops at 1,048,576 rows); ``queryeval report RUN`` still writes them."""


@dataclass
class RunResult:
    log: RunLog
    task: Task
    metrics: dict
    records: RecordStream
    """The run's records in suite order, read from the results file on each iteration."""
    newly_done: int
    warnings: list[str] = field(default_factory=list)


class Cases:
    """The cases of a run: re-iterable (each pass reads a lazy suite again), with a count, and
    each case's rank in run order (:attr:`order`, used to put records in that order)."""

    def __init__(self, make: Callable[[], Iterable[Case]]) -> None:
        self._make = make
        first = make()  # a generator does no work until read
        self._fixed = first if isinstance(first, list) else None  # sampled: keep that sample
        self.count = 0
        self.order = IdIndex.from_ids([])

    def __iter__(self) -> Iterator[Case]:
        return iter(self._fixed if self._fixed is not None else self._make())

    def __len__(self) -> int:
        return self.count

    def scan(self, task: Task) -> Iterator[tuple[str, list[int]]]:
        """One pass: count the cases, rank their ids, and yield ``(case id, scored turns)``."""
        keys = KeyBuilder()
        for case in self:
            keys.add(case.id, len(keys))
            yield case.id, task.scored_turns(case)
        self.count = len(keys)
        self.order = keys.build()


Progress = Callable[[int, int], Any]  # (advance, total) callbacks are wired by the CLI


def _git_commit(folder: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def software_info() -> dict:
    return {
        "package_version": queryeval.__version__,
        "git_commit": _git_commit(Path(queryeval.__file__).resolve().parent),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _prepare(config: RunConfig) -> tuple[Suite, Task, System, Cases, list[str]]:
    if config.system and config.responses:
        raise ConfigError("give one of --system or --responses, not both")
    if config.executor == "ray":
        from queryeval.run.ray_executor import import_ray

        import_ray()  # fail with one clear line before any run file is written
    suite = load_suite(config.suite, labels=config.labels)
    task = get_task(infer_task(suite.task_kinds(), config.task), config.task_options)

    def make() -> Iterable[Case]:
        return task.select_cases(c for c in suite.iter_cases() if task.scored_turns(c))

    cases = Cases(make)
    warnings: list[str] = []
    system: System
    recorded = RecordedSystem.load(config.responses, task) if config.responses else None
    try:  # the first pass over the cases: count, rank, bind recorded answers, task checks
        if recorded is not None:
            warnings += recorded.bind(cases.scan(task))
        else:
            for _ in cases.scan(task):
                pass
        if not cases.count:
            raise ConfigError(f"no case in {config.suite} has a target for task {task.name!r}"
                              " (after filters)")
    except BaseException:
        if recorded is not None:
            recorded.close()
        task.close()
        raise
    if recorded is not None:
        system = recorded
    elif config.system:
        system = make_system(config.system, isolate=config.isolate)
    elif config.executor == "ray":
        from queryeval.systems.retrievers.ray_embed import index_with_ray

        with index_with_ray(address=config.ray_address):  # corpus embedding on Ray Data
            system = task.default_system()
    else:
        system = task.default_system()
    return suite, task, system, cases, warnings


def _batch_fields(config: RunConfig, suite: Suite, task: Task, n_cases: int) -> dict:
    cfg = config.model_dump()
    cfg["suite"] = str(Path(config.suite).resolve())
    for key in ("responses", "labels"):
        if cfg[key]:
            cfg[key] = str(Path(cfg[key]).resolve())
    cfg["out"] = str(Path(config.out).resolve())
    cfg["task"] = task.name
    cfg["task_options"] = task.options.model_dump()
    return {
        "task": task.name,
        "evaluation_config": {**cfg, "num_samples": n_cases, **task.batch_info()},
        "suite_info": {
            "path": cfg["suite"],
            "hash": suite.hash,
            "files": [str(p) for p in suite.sources],
            "cases": len(suite),
        },
        "software_info": software_info(),
    }


def _execute(log: RunLog, task: Task, system: System, todo: Iterable[Case], config: RunConfig,
             progress: Progress | None) -> int:
    def on_record(record: dict) -> None:
        log.append(record)
        if progress:
            progress(1, 0)

    runner = run_cases
    if config.executor == "ray":
        from queryeval.run.ray_executor import run_cases_ray

        runner = functools.partial(run_cases_ray, config=config)
    try:
        done = runner(
            todo, system, task, on_record=on_record, concurrency=config.concurrency,
            timeout=config.timeout,
            policy=RetryPolicy(retries=config.retries, backoff=config.backoff),
            stop=threading.Event(),
        )
    except BaseException:
        log.close(quiet=True)  # the error on its way up is the one to report
        system.close()
        raise
    try:
        log.close()
    finally:
        system.close()
    return done


def _written_file(exc: OSError, fallback: Path) -> Path:
    """The file a failed report write was for: the error's own file name, mapped back from
    the temporary file of an atomic write (``.NAME.XXXX.tmp``) to ``NAME``; else ``fallback``."""
    if not exc.filename:
        return fallback
    path = Path(str(exc.filename))
    name = path.name
    if name.startswith(".") and name.endswith(".tmp") and name.count(".") >= 3:
        return path.with_name(name[1:-len(".tmp")].rsplit(".", 1)[0])
    return path


@contextlib.contextmanager
def _reporting(fallback: Path) -> Iterator[None]:
    """An ``OSError`` while writing a report becomes one :class:`OutputError` line."""
    try:
        yield
    except OSError as exc:
        raise OutputError.from_os(_written_file(exc, fallback), exc) from None


def finish(log: RunLog, task: Task, order: IdIndex | Sequence[str] | None = None, *,
           reports: bool = True, warnings: list[str] | None = None) -> tuple[dict, RecordStream]:
    """Aggregate the records of a log and write the CSV, metrics and reports atomically.

    The records are streamed from the results file in ``order`` (case ids, or an IdIndex of
    ranks): one pass aggregates, one writes the CSV, one per derived batch re-scores. Reports
    hold every record, so above :data:`REPORT_CASE_LIMIT` cases they are left to
    ``queryeval report`` (a line is added to ``warnings``)."""
    try:
        return _finish(log, task, order, reports=reports, warnings=warnings)
    finally:
        task.close()


def _finish(log: RunLog, task: Task, order: IdIndex | Sequence[str] | None, *, reports: bool,
            warnings: list[str] | None) -> tuple[dict, RecordStream]:
    records = log.scan_records(order)
    metrics = task.aggregate(records)
    log.write_csv(task.csv_columns, (row for r in records for row in task.csv_rows(r)))
    log.write_metrics(metrics)
    if reports and len(records) > REPORT_CASE_LIMIT:
        reports = False
        if warnings is not None:
            warnings.append(f"{len(records):,} cases: no xlsx/HTML report written (more than "
                            f"{REPORT_CASE_LIMIT:,}); `queryeval report {log.paths.batch}` writes them")
    if reports:
        with _reporting(log.paths.report_xlsx):
            task.write_reports(log.paths, list(records), metrics)
    _write_variants(log, task, records)
    log.mark_complete()
    if reports:
        from queryeval.report.html import write_html_report

        with _reporting(log.paths.folder / f"report_{log.paths.batch_id}.html"):
            write_html_report(log.paths.batch)
    return metrics, records


def _write_variants(log: RunLog, task: Task, records: RecordStream) -> None:
    """Derived batches (e.g. one per smaller k): the same outputs re-scored with other task
    options, each a complete batch of its own. Their ids are derived from the parent's id and
    the options (and kept in the parent batch), so finishing again, after a resume or after a
    kill part-way through writing them, rewrites the same batches instead of adding more."""
    variants = task.variant_options()
    if not variants:
        return
    known = log.batch.get("derived_batches", {})
    base_opts = task.options.model_dump()
    for opts in variants:
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
        vlog = RunLog.create(log.paths.folder, fields, batch_id=batch_id, dated=False)
        vlog.rewrite_records(vtask.rescore_record(r) for r in records)
        vrecords = vlog.scan_records(in_order=True)  # just written, in the parent's order
        vmetrics = vtask.aggregate(vrecords)
        vlog.write_csv(vtask.csv_columns, (row for r in vrecords for row in vtask.csv_rows(r)))
        vlog.write_metrics(vmetrics)
        vlog.mark_complete()
        known[key] = vlog.paths.batch_id
    log.batch["derived_batches"] = known


def start_run(config: RunConfig, *, progress: Progress | None = None) -> RunResult:
    suite, task, system, cases, warnings = _prepare(config)
    log = RunLog.create(config.out, _batch_fields(config, suite, task, len(cases)))
    if progress:
        progress(0, len(cases))
    done = _execute(log, task, system, cases, config, progress)
    del system  # a recorded system's index is not needed to finish
    metrics, records = finish(log, task, cases.order, reports=config.reports, warnings=warnings)
    return RunResult(log, task, metrics, records, done, warnings)


def resume_run(location: str | Path, *, retry_errors: bool = False,
               progress: Progress | None = None) -> RunResult:
    """Continue an interrupted run: cases already in the results file are not repeated."""
    log = RunLog.open(location)
    if "derived_from" in log.batch:
        parent = log.paths.folder / f"batch_{log.batch['derived_from']}.json"
        raise ConfigError(f"{log.paths.batch}: derived from {parent}; resume that one")
    stored = {k: v for k, v in log.batch.get("evaluation_config", {}).items()
              if k in RunConfig.model_fields}
    try:
        config = RunConfig.model_validate(stored)
    except ValidationError as exc:
        raise ConfigError(f"{log.paths.batch}: cannot read the run's configuration: {exc.errors()[0]['msg']}") from None
    suite, task, system, cases, warnings = _prepare(config)
    expected = log.batch.get("suite_info", {}).get("hash")
    if expected and expected != suite.hash:
        system.close()
        task.close()
        raise ConfigError(
            f"suite {config.suite} changed since the run started ({expected[:19]}… vs "
            f"{suite.hash[:19]}…); start a new run instead of resuming"
        )
    records = log.scan_records(repair=True, with_ids=True)
    if retry_errors and any(r.get("status") == "error" for r in records):
        log.rewrite_records(r for r in records if r.get("status") != "error")
        records = log.scan_records(with_ids=True)
    done_ids = records.ids if records.ids is not None else IdIndex.from_ids([])
    todo = (c for c in cases if c.id not in done_ids)
    already = cases.order.count_common(done_ids)  # cases of this run already done
    log.batch["status"] = "running"
    log.batch.setdefault("resumed_at", []).append(now_iso())
    log.write_batch()
    if progress:
        progress(0, len(cases))
        progress(already, 0)
    done = _execute(log, task, system, todo, config, progress) if already < len(cases) else 0
    if already >= len(cases):
        system.close()
    metrics, records = finish(log, task, cases.order, reports=config.reports, warnings=warnings)
    return RunResult(log, task, metrics, records, done, warnings)
