"""A run's settings: :class:`RunConfig` (stored in the batch file, so a run can be resumed),
its checks (one line naming the command-line option) and its paths made absolute at start."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from queryeval.errors import ConfigError
from queryeval.run import inputs as run_inputs
from queryeval.run.sequential import SequentialConfig

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
    cluster_by: str | None = Field(None, min_length=1, max_length=200)
    """--cluster-by FIELD: each case's cluster from its metadata field or ``FIELD:value`` tag."""
    sequential: SequentialConfig | None = None
    """--stop-when-decided against --baseline RUN (run/sequential.py): cases in a seeded
    random order until an anytime-valid confidence sequence decides."""


REPEAT_FIELDS = {"repeats": 1, "pass_k": [], "cache": False, "cache_dir": None,
                 "cache_max_mb": 1024.0, "system_version": None, "system_name": None,
                 "name": None, "cluster_by": None, "sequential": None}
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
                "system_version": "--system-version", "name": "--name",
                "cluster_by": "--cluster-by", "sequential": "--stop-when-decided"}


def make_config(**values: Any) -> RunConfig:
    """A :class:`RunConfig`; an out-of-range value is one :class:`ConfigError` line naming the
    command-line option (``--retries: must be at most 100, got 101``), never a ValidationError."""
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = err["loc"]
        name = OPTION_NAMES.get(str(loc[0]), str(loc[0])) if loc else "option"
        if loc and loc[0] == "sequential" and len(loc) > 1:
            name = "--" + str(loc[1])
        if loc and loc[0] == "task_options" and len(loc) > 1:
            name = "task option " + ".".join(str(x) for x in loc[1:])
        msg = err["msg"]
        msg = msg[:1].lower() + msg[1:]
        msg = msg.replace("input should be", "must be")
        raise ConfigError(f"{name}: {msg}, got {err.get('input')!r:.60}") from None


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
    if config.sequential is not None:
        if config.repeats > 1:
            raise ConfigError("--stop-when-decided with --repeats: a sequential decision pairs "
                              "one attempt per case; drop --repeats")
        if config.executor == "ray":
            raise ConfigError("--stop-when-decided works with --executor local only")


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
        from queryeval.io.caches import cache_dir

        cache = reformat.get("cache_dir") or str(cache_dir("reformat"))
        opts["reformat"] = {**reformat, "cache_dir": absolute(cache)}
    judge = opts.get("judge")
    if isinstance(judge, dict):  # the judge's folders, fixed at start (as the reformat cache)
        from queryeval.io.caches import cache_dir

        opts["judge"] = {**judge,
                         "cache_dir": absolute(judge.get("cache_dir") or str(cache_dir("judge"))),
                         "checks_dir": absolute(judge.get("checks_dir")
                                                or str(cache_dir("judge-checks")))}
    out = Path(str(absolute(config.out)))
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise ConfigError(f"--out {config.out}: {folder} is a file, not a folder")
            break
    seq = config.sequential
    if seq is not None:
        seq = seq.model_copy(update={"baseline": absolute(seq.baseline)})
    return config.model_copy(update={
        "sequential": seq, "suite": absolute(config.suite), "labels": absolute(config.labels),
        "responses": absolute(config.responses), "out": str(out), "task_options": opts,
    })
