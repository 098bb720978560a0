"""Start, resume and finish a run: suite -> system -> outputs -> scores -> run log -> reports.

The parts live beside this module: :mod:`~queryeval.run.config` (the settings),
:mod:`~queryeval.run.prepare` (suite, task, system, cases), :mod:`~queryeval.run.runner`
(the calls) and :mod:`~queryeval.run.finish` (tables, metrics, derived batches, reports).
Their public names are re-exported here."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.errors import ConfigError, QueryevalError
from queryeval.io.idindex import IdIndex
from queryeval.run import inputs as run_inputs
from queryeval.run.config import (
    SAFE_ON_RESUME,
    RunConfig,
    check_repeats,
    make_config,
    resolve_config,
)
from queryeval.run.finish import Reporter, finish
from queryeval.run.lock import BatchLock
from queryeval.run.log import RunLog, now_iso
from queryeval.run.prepare import (
    Cases,
    _batch_fields,
    _input_paths,
    _prepare,
)
from queryeval.run.records import RecordStream
from queryeval.run.runner import RetryPolicy, run_cases
from queryeval.run.sequential import Sequencer
from queryeval.suite.models import Case
from queryeval.systems.base import System
from queryeval.tasks.base import Task


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run; the batch is marked ``interrupted`` (exit code 130).

    Still a KeyboardInterrupt, so a program that runs queryeval as a library sees Ctrl-C as
    Ctrl-C; ``str()`` is the line to print, with the resume command."""

    exit_code = 130

    def __init__(self, done: int, total: int, batch: Path) -> None:
        self.done, self.total, self.batch = done, total, batch
        super().__init__(f"interrupted: {done} of {total} cases done; resume with: "
                         f"queryeval run --resume {batch}")


@dataclass
class RunResult:
    log: RunLog
    task: Task
    metrics: dict
    records: RecordStream
    """The run's records in suite order, read from the results file on each iteration."""
    newly_done: int
    warnings: list[str] = field(default_factory=list)
    """Calls and failures are in ``metrics`` (``calls``, ``error_summary``); the public
    :class:`queryeval.Run` reads them there (``calls``, ``error_summary``, ``check_calls``)."""


Progress = Callable[[int, int], Any]  # (advance, total) callbacks are wired by the CLI


def _execute(log: RunLog, task: Task, system: System, todo: Iterable[Case], config: RunConfig,
             progress: Progress | None, counter: list[int] | None = None,
             observe: Callable[[dict], Any] | None = None) -> int:
    """Call the system for ``todo``; ``counter[0]`` counts the records appended (read when
    Ctrl-C stops the run part-way); ``observe(record)`` sees each record once written."""
    counter = counter if counter is not None else [0]

    def on_record(record: dict) -> None:
        log.append(record)
        counter[0] += 1
        if observe is not None:
            observe(record)
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
        with contextlib.suppress(Exception):
            system.close()
        raise
    try:
        log.close()
    finally:
        system.close()
    return done


def _mark_interrupted(log: RunLog) -> None:
    log.close(quiet=True)
    log.batch["status"] = "interrupted"
    log.batch.setdefault("interrupted_at", []).append(now_iso())
    with contextlib.suppress(QueryevalError):
        log.write_batch()


def _run(log: RunLog, task: Task, system: System, cases: Cases, todo: Iterable[Case] | None,
         config: RunConfig, progress: Progress | None, warnings: list[str],
         already: int, reporter: Reporter | None, seq: Sequencer | None = None) -> RunResult:
    """Call the system for ``todo`` (None: nothing to do), then finish. Ctrl-C marks the
    batch ``interrupted`` and raises :class:`RunInterrupted` with the count of cases done.
    ``seq`` (``--stop-when-decided``): sees every record written; its section goes into the
    batch file and the metrics."""
    counter = [0]
    try:
        if todo is not None:
            done = _execute(log, task, system, todo, config, progress, counter,
                            observe=seq.feed if seq is not None else None)
        else:
            done = 0
            system.close()
        extra = None
        from queryeval.run.cache import CachedSystem

        cache = system.cache if isinstance(system, CachedSystem) else None
        if cache is not None:
            extra = {"cache": {"hits": cache.hits, "calls": cache.misses, "stored": cache.stored,
                               "folder": str(cache.folder)}}
        if seq is not None:
            section = seq.section(cases.units)
            log.batch["sequential"] = section
            extra = {**(extra or {}), "sequential": section}
        metrics, records = finish(log, task, cases.order, warnings=warnings, extra=extra,
                                  reporter=reporter if config.reports else None)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            task.close()
        _mark_interrupted(log)
        raise RunInterrupted(min(already + counter[0], cases.units), cases.units,
                             log.paths.batch) from None
    return RunResult(log, task, metrics, records, done, warnings)


def start_run(config: RunConfig, *, progress: Progress | None = None,
              before: Callable[[Task], Any] | None = None,
              reporter: Reporter | None = None) -> RunResult:
    """Start a run. ``before(task)`` is called once the suite, task and system are ready and
    before anything is written or called (e.g. to check gate metric names); an error it
    raises stops the run there. ``reporter`` writes the reports at the end when
    ``config.reports`` (``queryeval.report.run_reports.write_run_reports``)."""
    check_repeats(config)
    config = resolve_config(config)
    suite, task, system, cases, warnings = _prepare(config)
    try:
        if before is not None:
            before(task)
        seq = _sequencer(config, task)
        fields = _batch_fields(config, suite, task, len(cases))
        if seq is not None:  # a resume decides against this same baseline (run/sequential.py)
            fields["sequential_baseline"] = seq.pin()
        fields["inputs"] = {"pinned_at": now_iso(),
                            "files": run_inputs.pin(_input_paths(config, suite, task))}
        log = RunLog.create(config.out, fields)
        lock = BatchLock(log.paths.batch).acquire()
    except BaseException:
        with contextlib.suppress(Exception):
            system.close()
        task.close()
        raise
    try:
        if progress:
            progress(0, cases.units)
        todo = cases.todo() if seq is None else seq.order(list(cases))
        return _run(log, task, system, cases, todo, config, progress, warnings, already=0,
                    reporter=reporter, seq=seq)
    finally:
        lock.release()


Notice = Callable[[str], Any]


def resume_run(location: str | Path, *, retry_errors: bool = False, force: bool = False,
               overrides: dict[str, Any] | None = None, progress: Progress | None = None,
               notice: Notice | None = None, reporter: Reporter | None = None) -> RunResult:
    """Continue an interrupted run: cases already in the results file are not repeated.
    ``reporter``: as for :func:`start_run`.

    The batch is locked for the whole resume (a second process gets one line naming the
    holder). Input files pinned at the start must be unchanged (``force``: go on and record
    which changed). ``overrides`` may change only :data:`SAFE_ON_RESUME` settings."""
    first = RunLog.open(location)
    if "derived_from" in first.batch:
        parent = first.paths.folder / f"batch_{first.batch['derived_from']}.json"
        raise ConfigError(f"{first.paths.batch}: derived from {parent}; resume that one")
    with BatchLock(first.paths.batch):
        log = RunLog.open(first.paths.batch)  # read again under the lock: it may have moved on
        return _resume_locked(log, retry_errors=retry_errors, force=force,
                              overrides=overrides or {}, progress=progress, notice=notice,
                              reporter=reporter)


def _resume_locked(log: RunLog, *, retry_errors: bool, force: bool, overrides: dict[str, Any],
                   progress: Progress | None, notice: Notice | None,
                   reporter: Reporter | None) -> RunResult:
    unsafe = sorted(set(overrides) - set(SAFE_ON_RESUME))
    if unsafe:
        raise ConfigError(f"--resume cannot change {', '.join(unsafe)}")
    stored = {k: v for k, v in log.batch.get("evaluation_config", {}).items()
              if k in RunConfig.model_fields}
    try:
        config = RunConfig.model_validate(stored)
    except ValidationError as exc:
        msg = exc.errors(include_url=False)[0]["msg"]
        raise ConfigError(f"{log.paths.batch}: cannot read the run's configuration: {msg}") \
            from None
    if overrides:
        config = make_config(**{**config.model_dump(), **overrides})
    config = resolve_config(config)
    changes = _changed_inputs(log)
    if changes and not force:
        name, _, now = changes[0]
        what = "is gone" if now is None else "changed"
        more = f" (and {len(changes) - 1} more)" if len(changes) > 1 else ""
        raise ConfigError(f"input file {name} {what} since the run started{more}; start a new "
                          "run, or pass --force to resume with the files as they are now")
    complete = log.batch.get("status") == "complete"
    suite, task, system, cases, warnings = _prepare(config)
    pinned = (log.batch.get("inputs") or {}).get("files")
    if isinstance(pinned, dict):  # a file added to a pinned folder (tables, a suite folder)
        added = [str(p) for p in _input_paths(config, suite, task) if str(p) not in pinned]
        if added and not force:
            system.close()
            task.close()
            more = f" (and {len(added) - 1} more)" if len(added) > 1 else ""
            raise ConfigError(f"input file {added[0]} is new since the run started{more}; start "
                              "a new run, or pass --force to resume with the files as they are now")
        changes += [(name, "", "new") for name in added]
    expected = log.batch.get("suite_info", {}).get("hash")
    if expected and expected != suite.hash and not force:
        system.close()
        task.close()
        raise ConfigError(
            f"suite {config.suite} changed since the run started ({expected[:19]}… vs "
            f"{suite.hash[:19]}…); start a new run instead of resuming"
        )
    try:
        seq = _sequencer(config, task)
        if seq is not None:  # the baseline it started with, unchanged (run/sequential.py)
            seq.check_pin(log.batch.get("sequential_baseline"), log.paths.batch)
        records = log.scan_records(repair=True, with_ids=True)
        if retry_errors and any(r.get("status") == "error" for r in records):
            log.rewrite_records(r for r in records if r.get("status") != "error")
            records = log.scan_records(with_ids=True)
        done_ids = records.ids if records.ids is not None else IdIndex.from_ids([])
        already = cases.order.count_common(done_ids)  # cases (or attempts) already done
        entry: dict[str, Any] = {"at": now_iso()}
        if overrides:
            entry["options"] = dict(overrides)
            log.batch.setdefault("evaluation_config", {}).update(overrides)
        if changes:
            entry["inputs_changed"] = _repin(log, changes)
        if expected and expected != suite.hash:  # under --force: pin the suite as it is now
            entry["suite_hash_was"] = expected
            log.batch.setdefault("suite_info", {})["hash"] = suite.hash
        log.batch["status"] = "running"
        log.batch.setdefault("resumed_at", []).append(entry["at"])
        log.batch.setdefault("resumes", []).append(entry)
        log.write_batch()
    except BaseException:
        with contextlib.suppress(Exception):
            system.close()
        task.close()
        raise
    units = cases.units
    if notice:
        if complete and already >= units:
            notice(f"already complete: {log.paths.batch} ({len(cases)} cases); "
                   "re-writing its metrics and reports only")
        else:
            notice(f"resuming: {already} done, {units - already} to go")
    if progress:
        progress(0, units)
        progress(already, 0)
    if seq is not None:  # the sequence so far, in the order its records were written
        seq.replay(log.scan_records())
    todo = None
    if already < units:
        todo = cases.todo(done_ids) if seq is None else seq.order(list(cases), done_ids)
    return _run(log, task, system, cases, todo, config, progress, warnings, already=already,
                reporter=reporter, seq=seq)


def _sequencer(config: RunConfig, task: Task) -> Sequencer | None:
    """``--stop-when-decided``: the sequence against the baseline run (None without it)."""
    if config.sequential is None:
        return None
    return Sequencer(config.sequential, task, on_error=task.options.on_error)


def _changed_inputs(log: RunLog) -> list[tuple[str, str, str | None]]:
    """Pinned input files that changed or went missing, and files new in a pinned folder."""
    inputs = log.batch.get("inputs")
    if not isinstance(inputs, dict) or not isinstance(inputs.get("files"), dict):
        return []  # a batch from before inputs were pinned: only the suite hash is checked
    return run_inputs.changed(inputs["files"])


def _repin(log: RunLog, changes: list[tuple[str, str, str | None]]) -> list[dict]:
    """Record (under ``--force``) which inputs changed, and pin them as they are now."""
    files = log.batch["inputs"]["files"]
    out = []
    for name, was_hash, _ in changes:
        was = was_hash or None
        path = Path(name)
        if path.is_file():
            files[name] = run_inputs.pin([path])[name]
            now = files[name]["hash"]
        else:
            files.pop(name, None)
            now = None
        out.append({"path": name, "was": was, "now": now})
    return out
