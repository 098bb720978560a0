"""Running the cases of a run on Ray (``queryeval run --executor ray [--ray-address ADDR]``).

The driver (the ``queryeval run`` process) keeps everything that must be single: the suite,
the run log (every record is appended by ``on_record`` on the driver thread, as records come
back, so a killed run resumes exactly as a local one does) and the final aggregation. The
workers do what scales: calling the system under test and scoring each case.

* **A pool of actors.** ``min(concurrency, cases)`` :class:`CaseWorker` actors; each builds
  its system and its task once (not per case) and evaluates one case at a time with the very
  code of the local runner (:func:`queryeval.run.runner.evaluate_case`: timeout, retries with
  backoff, per-case error capture). ``concurrency`` therefore means the same thing as
  locally: cases in flight. Actors reserve no CPU (``num_cpus=0``, like the local threads,
  which wait on I/O) and are spread over the cluster's nodes (``SPREAD``).
* **Bounded in-flight work.** At most ``2 x concurrency`` cases are submitted and not yet
  collected (``ray.wait`` on that window), at most two per actor, so a suite of a million
  cases never creates a million object references.
* **What is shipped.** A system given as a spec string (``--system``) is rebuilt from the
  string on each actor (``make_system``); a relative file path in a ``python:`` or ``cmd:``
  spec is resolved against the driver's working directory, which the actor adopts when it
  exists on its node. Recorded outputs (``--responses``) are put once into the object store
  (the bound :class:`~queryeval.systems.recorded.RecordedSystem`, pickled as a dict of its
  outputs: the driver reads an indexed JSONL into that dict to ship it) and every
  actor reads that one copy, so scoring, the costly part of a recorded run, is spread too. A
  task's built-in system (no ``--system``/``--responses``) is built on each actor by
  ``task.default_system()`` (its embeddings come from the embedding cache when the cache
  folder is shared). The task travels as its name and options (``get_task`` on the worker).
  ``QUERYEVAL_*`` and Hugging Face offline variables of the driver are set on the actors.
* **Failures.** An exception of the system is captured per case by ``call_turn`` exactly as
  locally. When an actor's process dies (a crash in native code, ``os._exit``, a lost node) a
  fresh actor takes its slot and the cases it held are submitted again; a case that has lost
  its worker :data:`MAX_WORKER_LOSSES` times is recorded as an error of kind ``worker`` and
  the run goes on. A bug in a task's scoring raises on the driver, as it would locally.

Without Ray installed, :func:`run_cases_ray` raises a :class:`~queryeval.errors.ConfigError`
that tells how to install it (the CLI prints that one line and exits with 2).
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sized
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.errors import ConfigError
from queryeval.run.runner import Attempt, RetryPolicy, evaluate_case, with_repeat
from queryeval.suite.models import Case
from queryeval.systems.base import System
from queryeval.tasks.base import Task, TurnOutcome

if TYPE_CHECKING:
    from queryeval.run.config import RunConfig

__all__ = ["INSTALL_HINT", "SystemSource", "ensure_ray", "import_ray", "run_cases_ray",
           "system_source"]

INSTALL_HINT = "--executor ray needs Ray: pip install 'queryeval[ray]'"
_ENV_PREFIXES = ("QUERYEVAL_", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME")


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`ConfigError` telling how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


def ensure_ray(address: str | None = None) -> bool:
    """Connect to the cluster at ``address`` (``None``: ``$RAY_ADDRESS`` or a new local
    instance) unless Ray is already initialised; returns whether this call started it."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    ray.init(address=address, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)
    return True


# --- what the workers need to build the system -----------------------------------------------
SystemSource = tuple[str, Any]
"""``("spec", str)``: rebuild with ``make_system``; ``("object", ObjectRef)``: a pickled system
in the object store; ``("default", None)``: ``task.default_system()`` on the worker."""


def _absolute_spec(spec: str, cwd: Path) -> str:
    """``spec`` with a relative file path made absolute (against the driver's ``cwd``), so an
    actor whose working directory differs builds the same system."""
    if spec.startswith("python:"):
        target, sep, func = spec[len("python:"):].rpartition(":")
        if sep and (target.endswith(".py") or "/" in target or os.sep in target):
            path = Path(target)
            if not path.is_absolute() and (cwd / path).is_file():
                return f"python:{cwd / path}:{func}"
        return spec
    if spec.startswith("cmd:"):
        try:
            parts = shlex.split(spec[len("cmd:"):])
        except ValueError:
            return spec
        fixed = [str(cwd / p) if not Path(p).is_absolute() and "/" in p and (cwd / p).exists()
                 else p for p in parts]
        return "cmd:" + shlex.join(fixed) if fixed != parts else spec
    return spec


def system_source(system: System, config: RunConfig | None, ray: Any) -> SystemSource:
    """Decide how the actors get the system (see the module docstring)."""
    if config is not None and config.system:
        return "spec", _absolute_spec(config.system, Path.cwd())
    if config is not None and not config.responses:
        return "default", None
    try:
        return "object", ray.put(system)
    except Exception as exc:  # noqa: BLE001 - pickling errors come in many types
        raise ConfigError(
            f"cannot ship the system {getattr(system, 'name', system)!r} to Ray workers "
            f"({type(exc).__name__}: {exc}); give it as a --system spec"
        ) from None


class CaseWorker:
    """One Ray actor: one system and one task, evaluating the cases it is given in turn."""

    def __init__(self, kind: str, value: Any, task_name: str, task_options: dict,
                 timeout: float | None, policy: RetryPolicy, cwd: str, env: dict[str, str]) -> None:
        os.environ.update(env)
        if os.path.isdir(cwd):
            os.chdir(cwd)  # an actor owns its process: relative paths resolve as on the driver
        from queryeval.systems.factory import make_system
        from queryeval.tasks.base import get_task

        self.task = get_task(task_name, task_options)
        if kind == "spec":
            self.system = make_system(value)
        elif kind == "object":
            self.system = value  # a top-level ObjectRef argument arrives as its value
        else:
            self.system = self.task.default_system()
        self.timeout = timeout
        self.policy = policy

    def ready(self) -> str:
        """Answered once the constructor has run (so a system that cannot be built on the
        workers fails the run once, at the start, instead of every case)."""
        return getattr(self.system, "name", type(self.system).__name__)

    def evaluate(self, case: Case) -> dict:
        return evaluate_case(case, self.system, self.task, timeout=self.timeout, policy=self.policy)

    def close(self) -> None:
        self.system.close()
        self.task.close()


def _worker_error_record(task: Task, case: Case, exc: BaseException) -> dict:
    """The record of a case whose worker died :data:`MAX_WORKER_LOSSES` times: every scored
    turn failed with kind ``worker``, scored by the task like any failed call."""
    message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    real = case.case if isinstance(case, Attempt) else case  # one attempt of --repeats
    outcomes = [TurnOutcome(turn=req["turn"], error={"kind": "worker", "message": message})
                for req in task.requests(real)]
    record = task.score_case(real, outcomes)
    return with_repeat(record, case.repeat) if isinstance(case, Attempt) else record


def _actor_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}


MAX_WORKER_LOSSES = 3
"""A case whose actor died this many times is recorded as an error of kind ``worker``."""


class _Pool:
    """The actors of a run; a dead actor is replaced by a fresh one in its slot."""

    def __init__(self, n: int, make: Callable[[], Any]) -> None:
        self.make = make
        self.actors = [make() for _ in range(n)]
        self.load = [0] * n
        self.dead: list[Any] = []

    def submit(self, case: Case) -> tuple[Any, tuple[int, Any, Case]]:
        slot = min(range(len(self.actors)), key=self.load.__getitem__)
        self.load[slot] += 1
        actor = self.actors[slot]
        return actor.evaluate.remote(case), (slot, actor, case)

    def finished(self, slot: int) -> None:
        self.load[slot] -= 1

    def replace(self, slot: int, actor: Any) -> None:
        """The actor of ``slot`` died: start a new one there (once per dead actor)."""
        if self.actors[slot] is actor:
            self.dead.append(actor)
            self.actors[slot] = self.make()


def run_cases_ray(cases: Iterable[Case], system: System, task: Task, *,
                  on_record: Callable[[dict], Any], concurrency: int = 4,
                  timeout: float | None = 60.0, policy: RetryPolicy | None = None,
                  stop: threading.Event | None = None, config: RunConfig | None = None) -> int:
    """Evaluate ``cases`` on Ray actors, ``concurrency`` in flight; returns the number done.

    Same contract as :func:`queryeval.run.runner.run_cases`: ``on_record`` is called on the
    calling thread once per finished case, in completion order; once ``stop`` is set no new
    case is submitted and those in flight are collected. ``config`` says where the cluster is
    (``ray_address``) and how the system was given (spec, recorded outputs or built-in);
    without it the ``system`` object itself is shipped through the object store.
    """
    ray = import_ray()
    from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

    policy = policy or RetryPolicy()
    stop = stop or threading.Event()
    concurrency = max(1, concurrency)
    known = len(cases) if isinstance(cases, Sized) else None  # a list, or a run's Cases
    if known == 0:
        return 0
    it: Iterator[Case] = iter(cases)
    started = ensure_ray(config.ray_address if config is not None else None)
    kind, value = system_source(system, config, ray)
    remote_cls = ray.remote(CaseWorker).options(num_cpus=0, scheduling_strategy="SPREAD")
    args = (kind, value, task.name, task.options.model_dump(), timeout, policy, str(Path.cwd()),
            _actor_env())
    n_actors = min(concurrency, known) if known is not None else concurrency
    pool = _Pool(n_actors, lambda: remote_cls.remote(*args))
    pending: dict[Any, tuple[int, Any, Case]] = {}
    again: deque[Case] = deque()  # cases whose actor died, submitted before new ones
    losses: dict[str, int] = {}
    done = 0
    clean = False
    try:
        _check_started(ray, pool.actors)
        exhausted = False
        while True:
            while len(pending) < 2 * concurrency and not stop.is_set():
                case = again.popleft() if again else (None if exhausted else next(it, None))
                if case is None:
                    exhausted = True
                    break
                ref, where = pool.submit(case)
                pending[ref] = where
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                slot, actor, case = pending.pop(ref)
                pool.finished(slot)
                try:
                    record = ray.get(ref)
                except RayTaskError as exc:  # the task's own code raised: as locally, stop
                    cause = exc.cause if isinstance(exc.cause, BaseException) else None
                    raise (cause or exc) from None
                except (RayActorError, WorkerCrashedError) as exc:
                    pool.replace(slot, actor)
                    losses[case.id] = losses.get(case.id, 0) + 1
                    if losses[case.id] < MAX_WORKER_LOSSES:
                        again.append(case)
                        continue
                    record = _worker_error_record(task, case, exc)
                on_record(record)
                done += 1
        clean = True
    finally:
        stop.set()
        _shutdown_actors(ray, pool.actors, graceful=clean)
        _shutdown_actors(ray, pool.dead, graceful=False)
        if started:
            ray.shutdown()
    return done


def _check_started(ray: Any, actors: list[Any]) -> None:
    """Wait until every actor has built its system and task; a failure there (a file missing on
    a node, a module not installed on the workers) is one :class:`ConfigError` for the run."""
    from ray.exceptions import RayActorError, RayTaskError

    try:
        ray.get([a.ready.remote() for a in actors])
    except (RayActorError, RayTaskError) as exc:
        raise ConfigError(f"Ray workers could not build the system or task: {_creation_error(exc)}") from None


def _creation_error(exc: BaseException) -> str:
    """The user-facing line of an actor's constructor failure (the last line of the remote
    traceback, e.g. ``ConfigError: python system file not found: x.py``)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith(("queryeval.errors.", "ConfigError", "ModuleNotFoundError", "ImportError",
                          "FileNotFoundError", "RuntimeError", "OSError", "ValueError")):
            return ln.removeprefix("queryeval.errors.")
    return lines[0] if lines else type(exc).__name__


def _shutdown_actors(ray: Any, actors: list[Any], *, graceful: bool) -> None:
    """Kill the actors; after a normal end, first let each close its system (briefly). After
    an interruption the actors are killed at once, with whatever they were running."""
    closing = []
    for actor in actors if graceful else []:
        try:
            closing.append(actor.close.remote())
        except Exception:  # noqa: BLE001,S112 - an actor already dead needs no closing
            continue
    if closing:
        ray.wait(closing, num_returns=len(closing), timeout=5)
    for actor in actors:
        try:
            ray.kill(actor)
        except Exception:  # noqa: BLE001,S112 - already gone
            continue
