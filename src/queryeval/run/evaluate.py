"""Start, resume and finish a run: suite -> system -> outputs -> scores -> run log -> reports."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from queryeval._version import __version__
from queryeval.errors import ConfigError, QueryevalError
from queryeval.io.idindex import IdIndex, KeyBuilder
from queryeval.run import inputs as run_inputs
from queryeval.run.lock import BatchLock
from queryeval.run.log import RunLog, now_iso
from queryeval.run.records import RecordStream, attempt_key
from queryeval.run.runner import Attempt, RetryPolicy, run_cases
from queryeval.suite.loader import Suite, load_suite
from queryeval.suite.models import Case
from queryeval.systems.base import System
from queryeval.systems.factory import make_system
from queryeval.systems.recorded import RecordedSystem
from queryeval.tasks.base import Task, get_task, infer_task

MAX_SECONDS = 7 * 24 * 3600.0
"""Upper bound of --timeout and --backoff (a week): a larger value is a typo, and ``inf``
overflows the clock arithmetic of timeouts."""


class RunConfig(BaseModel):
    """Everything that defines a run; stored in the batch file so a run can be resumed."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    suite: str
    labels: str | None = None
    task: str | None = None
    system: str | None = None
    responses: str | None = None
    out: str = "runs"
    concurrency: int = Field(4, ge=1, le=1024)
    timeout: float | None = Field(60.0, gt=0, le=MAX_SECONDS)
    retries: int = Field(2, ge=0, le=100)
    backoff: float = Field(0.5, ge=0, le=MAX_SECONDS)
    task_options: dict[str, Any] = Field(default_factory=dict)
    reports: bool = True
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    max_error_rate: float = Field(1.0, ge=0, le=1)
    isolate: bool = False
    """A ``python:`` system runs in worker processes (systems/python.py)."""
    repeats: int = Field(1, ge=1, le=10_000)
    """Calls per scored turn (docs/repeats.md); 1: a plain run, nothing added to the log."""
    pass_k: list[int] = Field(default_factory=list)
    """The k of pass@k and pass^k (default with repeats: 1 and N)."""
    cache: bool = False
    """Serve calls from the call cache (run/cache.py) and store new outputs there."""
    cache_dir: str | None = None
    cache_max_mb: float = Field(1024.0, gt=0, le=1e9)
    system_version: str | None = None
    """The system's version, part of the cache key (with --system or the callable's name)."""
    system_name: str | None = None
    """The system's identity for the cache when --system does not name it (a Python object)."""
    name: str | None = Field(None, min_length=1, max_length=200)
    """The run's label (--name); default: run.results.default_label."""


REPEAT_FIELDS = {"repeats": 1, "pass_k": [], "cache": False, "cache_dir": None,
                 "cache_max_mb": 1024.0, "system_version": None, "system_name": None,
                 "name": None}
"""Settings a run without them leaves out of its batch file (so its log is as before)."""


SAFE_ON_RESUME = ("concurrency", "timeout", "retries", "backoff", "reports", "max_error_rate")
"""Settings a resumed run may change: how cases are called and what is written at the end,
never what a case's record holds."""

OPTION_NAMES = {"concurrency": "--concurrency", "timeout": "--timeout", "retries": "--retries",
                "backoff": "--backoff", "out": "--out", "suite": "SUITE", "labels": "--labels",
                "task": "--task", "system": "--system", "responses": "--responses",
                "executor": "--executor", "ray_address": "--ray-address",
                "max_error_rate": "--max-error-rate", "reports": "--no-report",
                "isolate": "--isolate", "repeats": "--repeats", "pass_k": "--pass-k",
                "cache": "--cache", "cache_dir": "--cache-dir", "cache_max_mb": "--cache-max-mb",
                "system_version": "--system-version", "name": "--name"}


def make_config(**values: Any) -> RunConfig:
    """A :class:`RunConfig`; an out-of-range value is one :class:`ConfigError` line naming the
    command-line option (``--retries: must be at most 100, got 101``), never a ValidationError."""
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = err["loc"]
        name = OPTION_NAMES.get(str(loc[0]), str(loc[0])) if loc else "option"
        if loc and loc[0] == "task_options" and len(loc) > 1:
            name = "task option " + ".".join(str(x) for x in loc[1:])
        msg = err["msg"]
        msg = msg[:1].lower() + msg[1:]
        msg = msg.replace("input should be", "must be")
        raise ConfigError(f"{name}: {msg}, got {err.get('input')!r:.60}") from None


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run; the batch is marked ``interrupted`` (exit code 130).

    Still a KeyboardInterrupt, so a program that runs queryeval as a library sees Ctrl-C as
    Ctrl-C; ``str()`` is the line to print, with the resume command."""

    exit_code = 130

    def __init__(self, done: int, total: int, batch: Path) -> None:
        self.done, self.total, self.batch = done, total, batch
        super().__init__(f"interrupted: {done} of {total} cases done; resume with: "
                         f"queryeval run --resume {batch}")


class CallsFailed(QueryevalError):
    """Every call failed, or more than ``--max-error-rate`` of them (exit code 3). The run
    log and reports are complete; the error summary was printed before this line."""

    exit_code = 3


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


def check_error_rate(calls: int, failed: int, limit: float = 1.0) -> None:
    """Raise :class:`CallsFailed` when all ``calls`` failed, or more than ``limit`` of them."""
    if not calls or not failed:
        return
    rate = failed / calls
    if failed == calls:
        raise CallsFailed(f"all {calls} calls to the system failed")
    if rate > limit:
        raise CallsFailed(f"{failed} of {calls} calls to the system failed "
                          f"({rate:.1%}), more than --max-error-rate {limit:g}")


class Cases:
    """The cases of a run: re-iterable (each pass reads a lazy suite again), with a count, and
    each case's rank in run order (:attr:`order`, used to put records in that order)."""

    def __init__(self, make: Callable[[], Iterable[Case]], repeats: int = 1) -> None:
        self._make = make
        self.repeats = repeats
        """With repeats (> 1), :attr:`order` ranks each (case, repeat) key
        (:func:`~queryeval.run.records.attempt_key`), case by case."""
        first = make()  # a generator does no work until read
        self._fixed = first if isinstance(first, list) else None  # sampled: keep that sample
        self.count = 0
        self.order = IdIndex.from_ids([])

    def __iter__(self) -> Iterator[Case]:
        return iter(self._fixed if self._fixed is not None else self._make())

    def __len__(self) -> int:
        return self.count

    @property
    def units(self) -> int:
        """Records a complete run holds: one per case, or per (case, repeat)."""
        return self.count * self.repeats

    def todo(self, done: IdIndex | None = None) -> Iterable[Case | Attempt]:
        """What is left to call: cases, or with repeats one :class:`Attempt` per (case,
        repeat); those in ``done`` (keys of records already written) are skipped."""
        if self.repeats == 1:
            return self if done is None else (c for c in self if c.id not in done)
        return (Attempt(c, r) for c in self for r in range(self.repeats)
                if done is None or attempt_key(c.id, r) not in done)

    def scan(self, task: Task) -> Iterator[tuple[str, list[int]]]:
        """One pass: count the cases, rank their ids, and yield ``(case id, scored turns)``."""
        keys = KeyBuilder()
        count = 0
        for case in self:
            if self.repeats == 1:
                keys.add(case.id, len(keys))
            else:
                for r in range(self.repeats):
                    keys.add(attempt_key(case.id, r), len(keys))
            count += 1
            yield case.id, task.scored_turns(case)
        self.count = count
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
        "package_version": __version__,
        "git_commit": _git_commit(Path(__file__).resolve().parents[1]),
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

    cases = Cases(make, config.repeats)
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
        if config.repeats > 1 and not recorded_has_repeats(recorded):
            warnings.append(f"--repeats {config.repeats} with {config.responses}: the file has "
                            "one answer per case and turn (no line has a \"repeat\"), so every "
                            "attempt scores the same answer and the repeats add nothing")
        system = recorded
    elif config.system:
        system = make_system(config.system, isolate=config.isolate)
    elif config.executor == "ray":
        from queryeval.systems.retrievers.ray_embed import index_with_ray

        with index_with_ray(address=config.ray_address):  # corpus embedding on Ray Data
            system = task.default_system()
    else:
        system = task.default_system()
    if config.cache:
        from queryeval.run.cache import CachedSystem, CallCache

        try:
            system = CachedSystem(system, CallCache(config.cache_dir, max_mb=config.cache_max_mb),
                                  system_identity(config), task)
        except BaseException:
            with contextlib.suppress(Exception):
                system.close()
            task.close()
            raise
    return suite, task, system, cases, warnings


def recorded_has_repeats(recorded: RecordedSystem) -> bool:
    """Whether a responses file has a line with ``repeat`` (several answers per case)."""
    from queryeval.systems.recorded import NO_TURN

    reps = getattr(recorded, "repeats", None)
    return reps is not None and bool((reps != NO_TURN).any())


def system_identity(config: RunConfig) -> tuple[str, str]:
    """The cache's name for the system, a (name, version) pair kept apart in the key:
    ``--system`` as written (or the Python object's name) and ``--system-version``, e.g.
    ``("python:bot:answer", "v3")`` (docs/repeats.md)."""
    return (str(config.system_name or config.system), str(config.system_version))


def check_repeats(config: RunConfig) -> None:
    """One line for a bad combination of --repeats, --pass-k and --cache."""
    for k in config.pass_k:
        if k < 1:
            raise ConfigError(f"--pass-k: every k must be at least 1, got {k}")
        if k > config.repeats:
            raise ConfigError(f"--pass-k {k}: k must be at most --repeats ({config.repeats}); "
                              "pass@k needs n >= k attempts")
    if config.repeats > 1 and config.responses and config.executor == "ray":
        raise ConfigError("--repeats with --responses runs with --executor local only")
    if config.pass_k and config.repeats == 1:
        raise ConfigError("--pass-k needs --repeats N (N >= 2)")
    if config.cache:
        if config.responses:
            raise ConfigError("--cache applies to a live --system, not to --responses")
        if not config.system:
            raise ConfigError("--cache needs --system (a built-in system is not cached)")
        if not config.system_version:
            raise ConfigError("--cache needs --system-version (the cache key names the system "
                              "and its version; see docs/repeats.md)")
        if config.executor == "ray":
            raise ConfigError("--cache works with --executor local only")


def _batch_fields(config: RunConfig, suite: Suite, task: Task, n_cases: int) -> dict:
    cfg = config.model_dump()
    for key, default in REPEAT_FIELDS.items():
        if cfg.get(key) == default:
            del cfg[key]
    cfg["suite"] = str(Path(config.suite).resolve())
    for key in ("responses", "labels"):
        if cfg[key]:
            cfg[key] = str(Path(cfg[key]).resolve())
    cfg["out"] = str(Path(config.out).resolve())
    cfg["task"] = task.name
    cfg["task_options"] = task.options.model_dump()
    from queryeval.run.results import default_label

    return {
        "task": task.name,
        "label": default_label(cfg, task),
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
             progress: Progress | None, counter: list[int] | None = None) -> int:
    """Call the system for ``todo``; ``counter[0]`` counts the records appended (read when
    Ctrl-C stops the run part-way)."""
    counter = counter if counter is not None else [0]

    def on_record(record: dict) -> None:
        log.append(record)
        counter[0] += 1
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


def resolve_config(config: RunConfig) -> RunConfig:
    """The config with every path absolute, taken at start: a system that calls ``os.chdir``
    (a Python callable runs in this process) cannot move the run log or the inputs read again
    on later passes. Output folders that exist as files are refused here, before any work."""

    def absolute(value: str | None) -> str | None:  # symlinks kept: errors name the user's path
        return os.path.abspath(Path(value).expanduser()) if value else value

    opts = dict(config.task_options)
    for key in run_inputs.PATH_OPTIONS:
        value = opts.get(key)
        if isinstance(value, str) and value:
            opts[key] = ",".join(part if "://" in part else str(absolute(part))
                                 for part in value.split(","))
    for key in run_inputs.DIR_OPTIONS:
        value = opts.get(key)
        if isinstance(value, str) and value:
            opts[key] = absolute(value)
            if Path(opts[key]).exists() and not Path(opts[key]).is_dir():
                raise ConfigError(f"task option {key}: {opts[key]} is a file, not a folder")
    reformat = opts.get("reformat")
    if isinstance(reformat, dict):
        cache = reformat.get("cache_dir", ".queryeval-cache/reformat")
        opts["reformat"] = {**reformat, "cache_dir": absolute(cache)}
    out = Path(str(absolute(config.out)))
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise ConfigError(f"--out {config.out}: {folder} is a file, not a folder")
            break
    return config.model_copy(update={
        "suite": absolute(config.suite), "labels": absolute(config.labels),
        "responses": absolute(config.responses), "out": str(out), "task_options": opts,
    })


def _input_paths(config: RunConfig, suite: Suite, task: Task) -> list[Path]:
    return run_inputs.input_paths(suite.sources, config.responses, config.labels,
                                  config.task_options, task.input_files())


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
        self.kinds: dict[str, dict] = {}

    def add(self, record: dict) -> dict:
        turns = record.get("turns")
        if isinstance(turns, list):
            errors = [t.get("error") for t in turns]
        else:
            errors = [record.get("error")]
        self.calls += len(errors)
        for err in errors:
            if not isinstance(err, dict):
                continue
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
    """One line per error kind: ``12 × connection: ConnectError: ... (case abc)``."""
    return [f"{e['count']} × {e['kind']}: {e['first_message']} (case {e['case']})"
            for e in summary]


Reporter = Callable[[RunLog, Task, RecordStream, dict, "list[str] | None"], Any]
"""Writes the reports of a finished run: ``(log, task, records, metrics, warnings)``; the
report layer's ``write_run_reports``. The run layer calls it and never imports it."""


def finish(log: RunLog, task: Task, order: IdIndex | Sequence[str] | None = None, *,
           reporter: Reporter | None = None, warnings: list[str] | None = None,
           extra: dict | None = None) -> tuple[dict, RecordStream]:
    """Aggregate the records of a log and write the CSV and metrics atomically, mark the
    batch complete, then call ``reporter`` (None: no reports).

    The records are streamed from the results file in ``order`` (case ids, or an IdIndex of
    ranks): one pass aggregates, one writes the CSV, one per derived batch re-scores.
    ``extra`` goes into the metrics (e.g. the call cache's counts). A run with repeats (its
    batch's ``repeats`` > 1) also gets the ``repeats`` section of the metrics and
    ``repeats_<id>.csv`` (docs/repeats.md)."""
    try:
        records = log.scan_records(order)
        add = {**(extra or {}), **_repeat_section(log, task, records)}
        metrics = _write_tables(log, task, records, extra=add, repeat_column=_repeats(log) > 1)
        _write_variants(log, task, records)
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
    from queryeval.run.repeats import repeat_stats, write_cases_csv

    ks = (log.batch.get("evaluation_config") or {}).get("pass_k") or sorted({1, repeats})
    stats = repeat_stats(records, repeats, ks, task.case_passed, task.attempt_metrics)
    write_cases_csv(log.paths.repeats_csv, stats)
    return {"repeats": stats.result()}


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
    columns = list(task.csv_columns)
    if repeat_column:
        columns = [*columns[:1], "repeat", *[c for c in columns[1:] if c != "repeat"]]
        rows = ({**row, "repeat": r.get("repeat")}
                for r in records for row in task.csv_rows(errors.add(r)))
    else:
        rows = (row for r in records for row in task.csv_rows(errors.add(r)))
    log.write_csv(columns, rows)
    metrics["calls"] = {"total": errors.calls, "failed": errors.failed}
    metrics["error_summary"] = errors.summary()
    metrics.update(extra or {})
    log.write_metrics(metrics)
    return metrics


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
        _write_tables(vlog, vtask, vrecords, extra=_repeat_section(vlog, vtask, vrecords),
                      repeat_column=_repeats(vlog) > 1)
        vlog.mark_complete()
        known[key] = vlog.paths.batch_id
    log.batch["derived_batches"] = known


def _mark_interrupted(log: RunLog) -> None:
    log.close(quiet=True)
    log.batch["status"] = "interrupted"
    log.batch.setdefault("interrupted_at", []).append(now_iso())
    with contextlib.suppress(QueryevalError):
        log.write_batch()


def _run(log: RunLog, task: Task, system: System, cases: Cases, todo: Iterable[Case] | None,
         config: RunConfig, progress: Progress | None, warnings: list[str],
         already: int, reporter: Reporter | None) -> RunResult:
    """Call the system for ``todo`` (None: nothing to do), then finish. Ctrl-C marks the
    batch ``interrupted`` and raises :class:`RunInterrupted` with the count of cases done."""
    counter = [0]
    try:
        if todo is not None:
            done = _execute(log, task, system, todo, config, progress, counter)
        else:
            done = 0
            system.close()
        extra = None
        from queryeval.run.cache import CachedSystem

        cache = system.cache if isinstance(system, CachedSystem) else None
        if cache is not None:
            extra = {"cache": {"hits": cache.hits, "calls": cache.misses, "stored": cache.stored,
                               "folder": str(cache.folder)}}
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
        fields = _batch_fields(config, suite, task, len(cases))
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
        return _run(log, task, system, cases, cases.todo(), config, progress, warnings, already=0,
                    reporter=reporter)
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
    todo = cases.todo(done_ids) if already < units else None
    return _run(log, task, system, cases, todo, config, progress, warnings, already=already,
                reporter=reporter)


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
