"""Getting a run ready: the suite, the task, the system and the cases to call (one pass
counts and ranks them), the batch file's fields and the input files to pin."""

from __future__ import annotations

import contextlib
import platform
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from queryeval._version import __version__
from queryeval.errors import ConfigError
from queryeval.io.idindex import IdIndex, KeyBuilder
from queryeval.run import inputs as run_inputs
from queryeval.run.config import REPEAT_FIELDS, RunConfig, system_identity
from queryeval.run.records import attempt_key
from queryeval.run.runner import Attempt
from queryeval.suite.common import Suite
from queryeval.suite.loader import load_suite
from queryeval.suite.models import Case
from queryeval.systems.base import System
from queryeval.systems.factory import make_system
from queryeval.systems.recorded import RecordedSystem
from queryeval.tasks.base import Task, get_task, infer_task


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
    suite = load_suite(config.suite, labels=config.labels,
                       corpus=(config.task_options or {}).get("corpus"))
    task = get_task(infer_task(suite.task_kinds(), config.task), config.task_options)

    by = config.cluster_by
    if by and not any(c.with_cluster_by(by) is not c for c in suite.iter_cases()):
        raise ConfigError(f"--cluster-by {by}: no case has a metadata field {by!r} or a tag "
                          f"'{by}:VALUE' (a case's cluster comes from one of them)")

    def make() -> Iterable[Case]:
        return task.select_cases((c.with_cluster_by(by) if by else c)
                                 for c in suite.iter_cases() if task.scored_turns(c))

    cases = Cases(make, config.repeats)
    warnings: list[str] = []
    system: System
    recorded = RecordedSystem.load(config.responses, task) if config.responses else None
    try:  # the first pass over the cases: count, rank, bind recorded answers, task checks
        if recorded is not None:
            warnings += recorded.bind(cases.scan(task))
            warnings += task.recorded_warnings()
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
        system = make_system(config.system, isolate=config.isolate,
                             concurrency=config.concurrency)
    elif config.executor == "ray":
        from queryeval.engines.retrievers.ray_embed import index_with_ray

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


def _input_paths(config: RunConfig, suite: Suite, task: Task) -> list[Path]:
    return run_inputs.input_paths(suite.sources, config.responses, config.labels,
                                  config.task_options, task.input_files())
