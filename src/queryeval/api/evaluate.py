"""``evaluate``, ``resume`` and ``load``: runs from Python, through the same runner and run log
as ``queryeval run`` (:mod:`queryeval.run.evaluate`), so the metrics are the same."""

from __future__ import annotations

import functools
import os
import tempfile
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.api.run import Run
from queryeval.errors import ConfigError, InputError

PathLike = str | os.PathLike
PATH_OPTIONS = ("corpus", "tables", "data", "tuning", "cache_dir", "store_dir")
"""Task options that name a file or folder: made absolute, as the command line does."""
LIST_OPTIONS = ("export", "dataset")


def _abs(value: Any) -> str:
    return os.path.abspath(Path(value).expanduser())  # as the run itself: symlinks kept


def _source(value: Any) -> str:
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    items = [str(p).strip() for p in parts if str(p).strip()]
    return ",".join(p if "://" in p else _abs(p) for p in items)  # URLs (http, postgresql) kept


def task_options(options: Mapping[str, Any] | None = None, **kwargs: Any) -> dict:
    """Task options from ``options={...}`` and keyword arguments, named as the command-line
    flags (``k``, ``corpus``, ``graph``/``database``/``endpoint`` or ``source``, ``data``,
    ``n``, ``tables``, ``match``, …; dashes or underscores). Paths become absolute;
    ``graph``/``database``/``endpoint`` become the query task's ``source``."""
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(f"options must be a mapping of task options, got {type(options).__name__}")
    merged: dict[str, Any] = {}
    for key, value in {**dict(options or {}), **kwargs}.items():
        if value is not None:
            merged[str(key).strip().replace("-", "_")] = value
    given = [k for k in ("graph", "database", "endpoint") if merged.get(k)]
    if len(given) > 1 or (given and merged.get("source")):
        raise ConfigError("give one of graph, database, endpoint or source")
    if given:
        key = given[0]
        value = merged.pop(key)
        if key == "endpoint":
            merged["source"] = str(value)
        else:
            merged["source"] = _source(value)
    elif "source" in merged:
        merged["source"] = _source(merged["source"])
    for key in PATH_OPTIONS:
        if isinstance(merged.get(key), (str, os.PathLike)):
            merged[key] = _abs(merged[key])
    for key in LIST_OPTIONS:
        if isinstance(merged.get(key), str):
            merged[key] = [merged[key]]
    if isinstance(merged.get("k"), (list, tuple)):
        merged["k"] = ",".join(str(x) for x in merged["k"])
    return merged


def _config_error(exc: ValidationError) -> ConfigError:
    err = exc.errors(include_url=False)[0]
    field = ".".join(str(p) for p in err["loc"])
    msg = err["msg"][:1].lower() + err["msg"][1:]
    return ConfigError(f"{field}: {msg}" if field else msg)


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _one_batch(folder: Path) -> bool:
    return folder.is_dir() and any(folder.rglob("batch_*.json"))


def object_name(system: Any) -> str:
    """The cache name of a Python system: ``python:MODULE:QUALNAME`` for a function defined at
    the top level of a module (or a class's plain function); ConfigError for anything whose
    name does not say what it computes: a lambda, a local function, a ``functools.partial``,
    a bound method, an instance (they would share one name, and so one another's cached
    outputs)."""
    qualname = getattr(system, "__qualname__", None)
    module = getattr(system, "__module__", None)
    if (isinstance(system, types.FunctionType) and isinstance(qualname, str)
            and isinstance(module, str) and "<" not in qualname):
        return f"python:{module}:{qualname}"
    kind = ("a functools.partial" if isinstance(system, functools.partial)
            else "a lambda" if isinstance(system, types.FunctionType) and "<lambda>" in
            str(qualname)
            else "a local function" if isinstance(system, types.FunctionType)
            else "a bound method" if isinstance(system, types.MethodType)
            else f"an instance of {type(system).__qualname__}")
    raise ConfigError(f"cache=True with {kind}: its name does not identify it (others would "
                      "share its cached outputs); give system_name='...' naming it (and its "
                      "settings)")


def evaluate(
    suite: Any,
    system: Any = None,
    *,
    responses: PathLike | list[dict] | None = None,
    task: str | None = None,
    labels: PathLike | None = None,
    out: PathLike | None = None,
    options: Mapping[str, Any] | None = None,
    concurrency: int = 4,
    timeout: float | None = 60.0,
    retries: int = 2,
    backoff: float = 0.5,
    reports: bool = False,
    resume: bool = False,
    retry_errors: bool = False,
    executor: str = "local",
    ray_address: str | None = None,
    max_error_rate: float = 1.0,
    isolate: bool = False,
    fail_under: Mapping[str, float] | None = None,
    progress: Callable[[int, int], Any] | bool | None = None,
    repeats: int = 1,
    pass_k: list[int] | tuple[int, ...] | None = None,
    cache: bool = False,
    cache_dir: PathLike | None = None,
    cache_max_mb: float = 1024.0,
    system_version: str | None = None,
    system_name: str | None = None,
    name: str | None = None,
    cluster_by: str | None = None,
    sequential: Mapping[str, Any] | None = None,
    judge: Mapping[str, Any] | Any | None = None,
    **kwargs: Any,
) -> Run:
    """Evaluate ``suite`` against ``system`` (or recorded ``responses``); return the :class:`Run`.

    Args:
        suite: a :class:`~queryeval.run.config.RunConfig`, the run's settings in one object
            (what ``queryeval run`` builds from its options; only ``progress`` and
            ``fail_under`` go with it), or a suite path (YAML file or folder, cases JSONL, questions CSV, BuildingQA JSON,
            fields table; DABench questions JSONL with ``labels``; the foreign formats of
            docs/formats.md), a ``datasets.Dataset`` (its rows read by their fields, as a
            saved dataset), or cases in memory: a list
            of dicts or :class:`~queryeval.suite.models.Case` objects, or a pandas DataFrame
            (one case per row: case fields as columns, or ``id``/``question``/``target``).
        system: a callable ``f(request) -> dict``, an ``async def`` callable, an object with
            ``.call(request)`` (or ``.call(request, timeout)``), or a command-line spec
            (``python:MODULE:FUNC``, ``http(s)://URL``, ``cmd:COMMAND``). Left out with no
            ``responses``: the task's built-in system (retrievers for retrieval and fields).
        responses: recorded outputs, a JSONL/CSV path or a list of dicts (one per line).
        task: the task kind (default: inferred from the targets); custom kinds registered with
            :func:`queryeval.register_task` work too.
        out: the run-log folder. ``None``: a temporary folder that lives as long as the
            returned Run and is removed after it; its path is printed to stderr, saying so
            (give ``out`` to keep the log and to resume it).
        options: task options, named like the command-line flags, e.g. ``k=[1, 5]``,
            ``corpus=...``, ``graph=...``/``database=...``/``endpoint=...``, ``data=...``,
            ``n=5``, ``match="strict"``, ``on_error="skip"``.
        **kwargs: task options as keyword arguments (they win over ``options``).
        concurrency: cases in flight (``--concurrency``). Async callables run on one event
            loop with at most this many calls in flight.
        timeout: per-call limit in seconds (``--timeout``; None: no limit).
        retries: retries of transient failures (``--retries``).
        backoff: first retry wait in seconds, doubling (``--backoff``).
        reports: also write the xlsx/HTML reports (``run.report()`` writes them later).
        resume: with ``out``: continue the run found there instead of starting a new one.
        max_error_rate: the share of failed calls above which :meth:`Run.check_calls` raises
            (``--max-error-rate``; 1.0: only when every call failed). The run itself always
            finishes; failed calls are recorded on their cases.
        isolate: run a ``python:`` spec's callable in worker processes (``--isolate``).
        fail_under: gates ``{metric: minimum}`` on ``overall_metrics`` and, with repeats, on
            ``pass_rate``, ``pass@k``, ``pass^k`` of ``metrics["repeats"]`` (``--fail-under``):
            the names are checked before any call (ConfigError for an unknown one); after the
            run, :meth:`Run.check_gates` raises GateFailure for a missed one.
        progress: ``progress(advance, total)`` callback; ``None``: a progress line in a
            notebook, a progress bar when stderr is a terminal, nothing elsewhere
            (:mod:`queryeval.api.progress`); ``False``: none.
        repeats: call every scored turn this many times (``--repeats``); the metrics get a
            ``repeats`` section (pass rate, pass@k, pass^k, flaky cases; docs/repeats.md).
        pass_k: the k of pass@k / pass^k (``--pass-k``; each at most ``repeats``).
        cache: serve calls from the call cache and store new outputs (``--cache``); needs
            ``system_version``. A module-level function is named by its module and qualified
            name; anything else (a lambda, a local function, a ``functools.partial``, a bound
            method, an instance) needs ``system_name``.
        cache_dir: the cache folder (default ``$QUERYEVAL_CACHE_DIR/calls`` or
            ``~/.cache/queryeval/calls``); ``cache_max_mb``: its size limit (LRU eviction).
        system_version: the system's version, part of the cache key.
        system_name: the system's name in the cache key (with ``cache``), for a Python
            object that has no unambiguous name of its own; give each differently configured
            object its own name. Without ``name``, it is also the run's label.
        name: the run's label in every report and comparison (``--name``); default: the
            system's qualified name, the responses file's name or the built-in system.
        cluster_by: each case's cluster from its metadata field or ``FIELD:value`` tag
            (``--cluster-by``; docs/compare.md).
        sequential: stop once decided against a baseline run (``--stop-when-decided``):
            ``{"baseline": RUN, "alpha": 0.05, "margin": None, "metric": "pass",
            "seed": 0}``; cases are called in a seeded random order until an anytime-valid
            confidence sequence for the paired difference decides better, worse or
            equivalent (docs/compare.md, "Sequential decisions"). No repeats.
        judge: the LLM judge for what no rule decides (task option ``judge``; the CLI's
            ``--judge-*``): ``{"model", "base_url", "api_key_env", "when", ...}`` or a
            :class:`~queryeval.engines.judge.JudgeOptions` (docs/judge.md).

    Raises:
        InputError: a bad suite or case (file/line or ``cases[i]`` and field).
        ConfigError: a bad option or combination.
    """
    from queryeval.run.config import RunConfig
    from queryeval.systems import callable as callable_systems

    if isinstance(suite, RunConfig):
        given = _given_with_config(locals())
        if given:
            raise ConfigError(f"evaluate(RunConfig) takes the run's settings from the config; "
                              f"drop {', '.join(given)} (only progress and fail_under go "
                              "with it)")
        return _evaluate_config(suite, progress=progress, fail_under=fail_under)
    if system is not None and responses is not None:
        raise ConfigError("give one of system or responses, not both")
    if resume and out is None:
        raise ConfigError("resume=True needs out=FOLDER (a temporary run log cannot be resumed)")
    opts = task_options(options, **kwargs)
    if judge is not None:
        if not isinstance(judge, Mapping) and not hasattr(judge, "model_dump"):
            raise ConfigError(f"judge: a mapping of judge options or a JudgeOptions, got "
                              f"{type(judge).__name__}")
        opts["judge"] = dict(judge) if isinstance(judge, Mapping) else judge.model_dump()
    _check_judge_key(opts)
    shown = None
    if progress is None or progress is True:
        from queryeval.api.progress import auto_progress

        progress = shown = auto_progress("attempts" if repeats > 1 else "cases")
    progress = progress or None
    keep = None
    if out is None:
        keep = tempfile.TemporaryDirectory(prefix="queryeval-")
        folder = Path(keep.name)
    else:
        folder = Path(out)
    if resume and _one_batch(folder):
        try:
            return _resume_matching(folder, suite, system, retry_errors=retry_errors,
                                    progress=progress)
        finally:
            if shown is not None:
                shown.close()
    suite_path, responses_path = _inputs(suite, responses, folder / "inputs")
    spec: str | None = None
    if system_name is not None and (not isinstance(system_name, str) or not system_name.strip()):
        raise ConfigError(f"system_name: a non-empty string, got {system_name!r}")
    if system is not None and not isinstance(system, str):
        if cache and system_name is None and system_version is not None:
            system_name = object_name(system)  # (no version: refused first, in one line)
        if executor == "ray":
            raise ConfigError("executor='ray' needs a system spec string (python:…, http…, "
                              "cmd:…); a Python object cannot be shipped to Ray workers")
        built = callable_systems.as_system(system, concurrency=concurrency)
        spec = callable_systems.register(built)
    try:
        try:
            config = RunConfig(
                suite=suite_path, labels=str(labels) if labels is not None else None, task=task,
                system=spec or system, responses=responses_path, out=str(folder),
                concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
                task_options=opts, reports=reports, executor=executor, ray_address=ray_address,
                max_error_rate=max_error_rate, isolate=isolate,
                repeats=repeats, pass_k=list(pass_k or []), cache=cache,
                cache_dir=str(Path(cache_dir).expanduser().resolve()) if cache_dir else None,
                cache_max_mb=cache_max_mb, system_version=system_version,
                system_name=system_name, name=name, cluster_by=cluster_by,
                sequential=_sequential(sequential),
            )
        except ValidationError as exc:
            raise _config_error(exc) from None
        try:
            result = _start(config, progress, fail_under)
        except InputError as err:
            raise _in_memory_error(err, {suite_path: "cases", responses_path: "responses"},
                                   written={k for k, v in ((suite_path, suite),
                                                           (responses_path, responses))
                                            if k and not _is_path(v)}) from None
    finally:
        if shown is not None:
            shown.close()
        if spec is not None:
            callable_systems.unregister(spec)
    if keep is not None:
        from queryeval.api.progress import tell

        tell(f"run log: {folder} (temporary: removed once this Run is no longer referenced; "
             "give out=FOLDER to keep it)")
    return Run(result.log.paths.batch, warnings=result.warnings, keep=keep,
               fail_under=fail_under)


_WITH_CONFIG = ("suite", "progress", "fail_under", "kwargs")
"""What ``evaluate(config, ...)`` takes besides the RunConfig itself."""


def _given_with_config(values: dict[str, Any]) -> list[str]:
    """The keyword arguments of :func:`evaluate` given with a RunConfig (the config holds
    them; a second value beside it would be silently ignored or silently win)."""
    import inspect

    params = inspect.signature(evaluate).parameters
    given = [name for name, p in params.items() if name not in _WITH_CONFIG
             and values[name] is not p.default and values[name] != p.default]
    return given + sorted(values.get("kwargs") or {})


def _check_judge_key(opts: Mapping[str, Any]) -> None:
    """An unset API key variable of the judge: refused before the run."""
    if isinstance(opts.get("judge"), Mapping):
        from queryeval.engines.judge import check_key

        check_key(opts["judge"].get("api_key_env"))


def _start(config: Any, progress: Callable[[int, int], Any] | None,
           fail_under: Mapping[str, float] | None) -> Any:
    """Start the run of ``config`` as it is: the one call both ways of :func:`evaluate` make."""
    from queryeval.report.run_reports import write_run_reports
    from queryeval.run.evaluate import start_run

    return start_run(config, progress=progress,
                     before=_gate_names(fail_under, config.repeats, config.pass_k),
                     reporter=write_run_reports)


def _evaluate_config(config: Any, *, progress: Callable[[int, int], Any] | bool | None,
                     fail_under: Mapping[str, float] | None) -> Run:
    """``evaluate(config)``: the run of one :class:`~queryeval.run.config.RunConfig` (what
    ``queryeval run`` builds from its options), passed on as it is, never rebuilt."""
    _check_judge_key(config.task_options)
    shown = None
    if progress is None or progress is True:
        from queryeval.api.progress import auto_progress

        progress = shown = auto_progress("attempts" if config.repeats > 1 else "cases")
    try:
        result = _start(config, progress or None, fail_under)
    finally:
        if shown is not None:
            shown.close()
    return Run(result.log.paths.batch, warnings=result.warnings, fail_under=fail_under)


def _sequential(value: Mapping[str, Any] | None) -> dict | None:
    """``sequential=`` as the run's settings: the baseline's path absolute (None: off)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"sequential: a mapping (baseline, alpha, margin, metric, seed), got "
                          f"{type(value).__name__}")
    out = {k: v for k, v in value.items() if v is not None}
    if isinstance(out.get("baseline"), os.PathLike):
        out["baseline"] = str(out["baseline"])
    if isinstance(out.get("baseline"), str):
        out["baseline"] = _abs(out["baseline"])
    return out


def _gate_names(fail_under: Mapping[str, float] | None, repeats: int,
                pass_k: Any) -> Callable[[Any], None] | None:
    if not fail_under:
        return None
    from queryeval.report.gates import check_threshold_names

    return lambda task: check_threshold_names(task, fail_under, repeats=repeats,
                                              pass_k=list(pass_k or []))


def _in_memory_error(err: InputError, names: dict, written: set) -> InputError:
    """An error in a file written from in-memory cases or responses (one per line) named as
    the caller knows it: ``responses[4].indicator_selection: ...`` instead of a temporary
    file's line 5."""
    if err.path is None or err.path not in written or err.line is None:
        return err
    where = f"{names[err.path]}[{err.line - 1}]"
    return InputError(err.message, field=f"{where}.{err.field}" if err.field else where)


def _inputs(suite: Any, responses: Any, folder: Path) -> tuple[str, str | None]:
    """The suite and responses as paths; in-memory ones are written under ``folder``."""
    from queryeval.api.cases import check_cases, is_hf_dataset, write_cases, write_dataset

    if _is_path(suite):
        suite_path = str(suite)
    elif is_hf_dataset(suite):  # a datasets.Dataset: its rows, read by their fields
        suite_path = str(write_dataset(suite, folder))
    else:
        suite_path = str(write_cases(check_cases(suite), folder))
    if responses is None or _is_path(responses):
        return suite_path, str(responses) if responses is not None else None
    return suite_path, str(_write_responses(responses, folder))


def _write_responses(lines: Any, folder: Path) -> Path:
    import hashlib

    from queryeval.io.atomic import write_text_atomic
    from queryeval.io.writing import writing
    from queryeval.run.log import dumps

    if isinstance(lines, (str, bytes, Mapping)) or not hasattr(lines, "__iter__"):
        raise InputError(f"expected a path or a list of dicts, got {type(lines).__name__}",
                         field="responses")
    out = []
    for i, line in enumerate(lines):
        if not isinstance(line, Mapping):
            raise InputError(f"expected a mapping, got {type(line).__name__}",
                             field=f"responses[{i}]")
        try:
            out.append(dumps(dict(line)) + "\n")
        except (TypeError, ValueError) as exc:
            raise InputError(f"not JSON: {exc}", field=f"responses[{i}]") from None
    text = "".join(out)
    path = folder / f"responses-{hashlib.sha256(text.encode()).hexdigest()[:16]}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    with writing(path):
        write_text_atomic(path, text)
    return path


def _resume_matching(folder: Path, suite: Any, system: Any, *, retry_errors: bool,
                     progress: Callable[[int, int], Any] | None) -> Run:
    """``evaluate(..., out=folder, resume=True)`` when ``folder`` holds a run: resume it, after
    checking that it is a run of the same suite."""
    from queryeval.run.log import RunLog

    log = RunLog.open(folder)
    stored = str(log.batch.get("evaluation_config", {}).get("suite", ""))
    if _is_path(suite):
        if Path(_abs(suite)) != Path(stored) and Path(suite).resolve() != Path(stored):
            raise ConfigError(f"{log.paths.batch} is a run of {stored}, not of {suite}; "
                              "use another out folder")
    else:
        from queryeval.api.cases import check_cases, is_hf_dataset, write_cases, write_dataset

        expected = (write_dataset(suite, folder / "inputs") if is_hf_dataset(suite)
                    else write_cases(check_cases(suite), folder / "inputs")).resolve()
        if expected != Path(stored):
            raise ConfigError(f"{log.paths.batch} is a run of other cases ({stored}); "
                              "use another out folder")
    return resume(log.paths.batch, system=system, retry_errors=retry_errors, progress=progress)


def resume(run: PathLike | Run, *, system: Any = None, retry_errors: bool = False,
           force: bool = False, overrides: Mapping[str, Any] | None = None,
           progress: Callable[[int, int], Any] | None = None,
           notice: Callable[[str], Any] | None = None) -> Run:
    """Continue an interrupted run (its ``batch_<id>.json`` or run folder); cases already in
    the results file are not repeated. A run of a Python object needs the object again:
    ``system=obj``. ``retry_errors``: redo the cases whose call failed. Input files pinned at
    the start must be unchanged (``force``: go on and record which changed); ``overrides``
    may change how cases are called and what is written (``concurrency``, ``timeout``,
    ``retries``, ``backoff``, ``reports``, ``max_error_rate``), never what a record holds.
    ``notice(line)`` receives progress lines such as ``resuming: N done, M to go``."""
    from queryeval.report.run_reports import write_run_reports
    from queryeval.run.evaluate import resume_run
    from queryeval.run.log import RunLog
    from queryeval.systems import callable as callable_systems

    location = run.path if isinstance(run, Run) else Path(run)
    log = RunLog.open(location)
    cfg = log.batch.get("evaluation_config", {})
    stored = cfg.get("system")
    spec = None
    if system is not None:
        if isinstance(system, str):
            if system != stored:
                raise ConfigError(f"{log.paths.batch}: the run's system is {stored!r}, "
                                  f"not {system!r}")
        elif not (isinstance(stored, str) and stored.startswith(callable_systems.OBJECT_PREFIX)):
            raise ConfigError(f"{log.paths.batch}: the run's system is {stored!r}; system= takes "
                              "a Python object only for runs of a Python object")
        else:
            concurrency = cfg.get("concurrency") if isinstance(cfg.get("concurrency"), int) else 4
            spec = callable_systems.register(
                callable_systems.as_system(system, concurrency=concurrency), spec=stored)
    try:
        result = resume_run(log.paths.batch, retry_errors=retry_errors, force=force,
                            overrides=dict(overrides or {}), progress=progress, notice=notice,
                            reporter=write_run_reports)
    finally:
        if spec is not None:
            callable_systems.unregister(spec)
    keep = run._keep if isinstance(run, Run) else None
    return Run(result.log.paths.batch, warnings=result.warnings, keep=keep)


def load(run: PathLike) -> Run:
    """Open a finished (or interrupted) run for reading: its ``batch_<id>.json``, any file of
    the batch, or a folder holding one run. Never modifies the log."""
    from queryeval.run.results import resolve_batch

    return Run(resolve_batch(run))
