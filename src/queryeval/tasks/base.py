"""What a task kind is: how a case becomes requests, how outputs are scored and aggregated.

Kept apart as in inspect_ai: the suite (cases), the system (solver) and the task's scorer
never reach into one another. A result record holds the targets and the outputs of every
scored turn, so a log can be re-scored and reported without calling the system again.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from queryeval.errors import ConfigError
from queryeval.registry import TASKS
from queryeval.suite.models import Case
from queryeval.tasks.content import Figures, Overall, ReportItem


@dataclass(frozen=True)
class Flag:
    """A task option's ``queryeval run`` flag, declared on the options model's field
    (``k: Annotated[list[int], Flag("Retrieval: ...")] = ...``): the command line is built
    from these declarations (:mod:`queryeval.cli.task_flags`), so adding an option to a
    task needs no CLI edit. Without a Flag a field is still ``--option KEY=VALUE``.

    The flag is ``--`` + the field's name with dashes unless ``name`` says otherwise; its
    value type is the field's (``None`` left out; ``Literal`` lists its choices; numeric
    ``ge``/``le`` become the flag's range) unless ``type`` gives one; ``path`` reads a file
    or folder (stored as its text); ``multiple`` repeats it (a list); ``parse`` turns the
    command-line value into the option's. Unset, a flag sets nothing (the option's default
    holds). Several tasks may declare one flag (``--compat``, ``--model``): one flag, each
    task's help. Several flags on one field are alternatives (give one; a repeated value
    is joined with commas): ``--graph``/``--database``/``--endpoint`` for ``source``."""

    help: str
    name: str | None = None
    type: Any = None
    metavar: str | None = None
    multiple: bool = False
    path: bool = False
    parse: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class FlagGroup:
    """Flags for the fields of a nested options model (``judge``, ``reformat``): each of
    ``flags`` is ``prefix`` + the nested field's name unless its Flag names it. With a
    ``switch`` flag (``--reformat``) the group is on only with it and its flags show the
    nested model's defaults; without, the group is on once one of its flags is given.
    ``needs`` are the nested fields that must then be given (else ``needs_message``)."""

    prefix: str
    flags: dict[str, Flag]
    switch: Flag | None = None
    needs: tuple[str, ...] = ()
    needs_message: str = ""


class TaskOptions(BaseModel):
    """Options every task understands."""

    model_config = ConfigDict(extra="forbid")

    on_error: Annotated[Literal["score", "skip"], Flag(
        "A failed call: score (the worst score on every metric, the default) or skip "
        "(left out of the means).")] = "score"
    """``score``: a turn whose call failed gets the worst score on every metric (it counts
    against the system, and never as correct, even where an empty output would be right);
    ``skip``: cases with an error are left out of the means (counted apart)."""


@dataclass
class TurnOutcome:
    """What one call to the system produced for one scored turn."""

    turn: int
    output: Any = None
    error: dict | None = None
    attempts: int = 0
    latency_ms: float | None = None


class Task(ABC):
    """A task kind. Subclasses set ``name``, ``Options`` and implement the abstract methods."""

    name: ClassVar[str]
    target_key: ClassVar[str | None] = None
    """The target key holding this task's ground truth, when it is not ``name``."""
    target_model: ClassVar[Any] = None
    """A registered task's own ground truth: the type (a pydantic model, or any type pydantic
    validates, e.g. ``list[str]``) of the value under its target key in a case
    (``target: {my_task: ...}``); read it with :meth:`target_of`. The built-in kinds' keys are
    the case schema's (``suite/models.py``)."""
    Options: ClassVar[type[TaskOptions]] = TaskOptions
    figures: ClassVar[Figures] = Figures()
    """What the task's figures are (settings, timings, older names, not on [0, 1]): the
    reports read it instead of guessing (:class:`~queryeval.tasks.content.Figures`)."""

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        if isinstance(options, TaskOptions):
            self.options = options
        else:
            try:
                self.options = self.Options.model_validate(options or {})
            except ValidationError as exc:
                raise option_error(self.name, self.Options, exc) from None

    # --- requests -----------------------------------------------------------------------
    def scored_turns(self, case: Case) -> list[int]:
        """User turns this task scores: those whose target sets this task's key, or sets no
        task key at all (``target: {}`` means "expect nothing")."""
        out = []
        for i in case.scored_turns():
            kinds = case.conversation[i].target.task_kinds()  # type: ignore[union-attr]
            if not kinds or self.name in kinds:
                out.append(i)
        return out

    def target_of(self, case: Case) -> Any:
        """The case's first target under this task's key (for single-turn task kinds)."""
        key = self.target_key or self.name
        for turn in case.conversation:
            value = getattr(turn.target, key, None) if turn.target is not None else None
            if value is not None:
                return value
        raise ConfigError(f"case {case.id!r} has no target.{key}")

    def select_cases(self, cases: Iterable[Case]) -> Iterable[Case]:
        """Cases to run, in run order (tasks may filter or sample). Given a stream, a task
        should return a stream (a run reads it again for each pass); a list (e.g. a random
        sample) is kept as it is for every pass. Checks that must stop a run before it starts
        belong here: the run's first pass over the cases comes before its log is written."""
        return cases

    def default_system(self) -> Any:
        """The built-in system used when neither --system nor --responses is given."""
        raise ConfigError("give --system or --responses")

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release what the task opened (engines, clients)."""

    def input_files(self) -> list[str]:
        """Files the task read for this run beyond its options (e.g. the graphs and databases
        its cases name), pinned with the run's other inputs. Called after the first pass."""
        return []

    def batch_info(self) -> dict:
        """Extra fields for the batch file's ``evaluation_config`` (e.g. seed 002's k_value)."""
        return {}

    def variant_options(self) -> list[dict]:
        """Task options of extra batches derived from this run's records (e.g. other k)."""
        return []

    def requests(self, case: Case) -> list[dict]:
        """One request per scored user turn: the conversation so far (targets stripped)."""
        out = []
        for i in self.scored_turns(case):
            messages = [{"role": t.role, "content": t.content} for t in case.conversation[: i + 1]]
            out.append({"task": self.name, "case_id": case.id, "turn": i, "messages": messages})
        return out

    @abstractmethod
    def parse_output(self, raw: Any) -> Any:
        """Validate a system's raw output; raise ValueError/ValidationError if malformed.
        Returns the canonical JSON-able output stored in the log."""

    @abstractmethod
    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        """One line of a recorded-responses file -> ``(case_id, turn or None, output)``."""

    def recorded_warnings(self) -> list[str]:
        """What the run should say about the recorded-responses lines read so far (called
        once the file is bound to the suite), e.g. lines a compat mode counts as missing."""
        return []

    # --- scoring ------------------------------------------------------------------------
    @abstractmethod
    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        """The case's result record (JSON-able), targets and outputs included."""

    @abstractmethod
    def rescore_record(self, record: dict) -> dict:
        """Recompute a record's scores from the targets and outputs it holds."""

    @abstractmethod
    def aggregate(self, records: Iterable[dict]) -> dict:
        """``{"overall_metrics": {...}, "group_metrics": {...}}`` over result records.

        ``records`` may be a stream read once (a run's results file, in run order): keep no
        record, only compact per-case numbers (:mod:`queryeval.tasks.accum`)."""

    # --- outputs ------------------------------------------------------------------------
    csv_columns: ClassVar[list[str]] = []

    @abstractmethod
    def csv_rows(self, record: dict) -> Iterable[dict]:
        """Flattened rows of one record for ``results_<id>.csv``."""

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        """What the task's report files hold (:mod:`queryeval.tasks.content`: the xlsx in
        one of the report layer's layouts, exports); the report layer writes them."""
        return []

    def write_reports(self, paths: Any, records: list[dict], metrics: dict) -> list[Path]:
        """Files a (user-registered) task writes itself beside the log, after those of
        :meth:`report_content`; returns the files written. Built-in tasks write none."""
        return []

    def summary(self, metrics: dict) -> list[Any]:
        """What the console summary shows (:mod:`queryeval.tasks.content` sections; a rich
        renderable of a custom task passes through): by default every overall figure."""
        return [Overall()]

    # --- repeats (docs/repeats.md) --------------------------------------------------------
    def case_passed(self, record: dict) -> bool:
        """Whether one attempt of a case passed, for the pass rate and pass@k of a run with
        ``--repeats``: the verdict of the HTML report's pass/fail column, i.e. the task's
        ``case_verdict(record) == "pass"`` when it has one, else every finite [0, 1] number
        in ``scores`` equals 1. A failed call never passes. Tasks may override."""
        hook = getattr(self, "case_verdict", None)
        if callable(hook):
            return hook(record) == "pass"
        if record.get("status") == "error":
            return False
        rates = [v for v in self.attempt_metrics(record).values() if 0.0 <= v <= 1.0]
        return all(v == 1.0 for v in rates)

    def attempt_metrics(self, record: dict) -> dict[str, float]:
        """Per-case figures of one attempt, averaged over the repeats: the task's
        ``case_metrics(record)`` when it has one, else every finite number (not bool) in
        ``record["scores"]`` (what the reports and comparisons use)."""
        hook = getattr(self, "case_metrics", None)
        if callable(hook):
            return dict(hook(record))
        scores = record.get("scores") or {}
        return {k: float(v) for k, v in scores.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}

    # --- helpers shared by tasks ----------------------------------------------------------
    @staticmethod
    def base_record(case: Case, outcomes: list[TurnOutcome]) -> dict:
        errors = [o.error for o in outcomes if o.error]
        return {
            "case_id": case.id,
            "name": case.name,
            "tags": list(case.tags),
            **({"cluster": case.cluster} if case.cluster else {}),  # docs/compare.md
            "status": "error" if errors else "ok",
            "error_kinds": sorted({e["kind"] for e in errors}),
        }

    def counted(self, records: list[dict]) -> list[dict]:
        """Records that enter the means under the ``on_error`` option (the rule of
        :class:`~queryeval.tasks.accum.Tally`)."""
        from queryeval.tasks.accum import enters_means

        skip = self.options.on_error == "skip"
        return [r for r in records if enters_means(r, skip)]

    @staticmethod
    def error_summary(records: list[dict]) -> dict:
        kinds: Counter[str] = Counter()
        for r in records:
            kinds.update(r.get("error_kinds", []))
        return {
            "errors": sum(1 for r in records if r.get("status") == "error"),
            "errors_by_kind": dict(sorted(kinds.items())),
        }


def _expected(annotation: Any) -> str | None:
    """What an option of this type is written as, in words (None: no simple wording)."""
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is list and args:
        inner = _expected(args[0])
        return f"comma-separated {inner.split(' ', 1)[1]}s" if inner and " " in inner else None
    if len(args) == 1 and typing.get_origin(annotation) is not list:
        return _expected(args[0])
    return {int: "an integer", float: "a number", bool: "true or false",
            str: "a text"}.get(annotation)


_PARSE_FAILURES = ("invalid literal for int()", "could not convert string to float")


def option_error(task: str, options: type[TaskOptions], exc: ValidationError) -> ConfigError:
    """One line for a bad task option: an option of another task names that task, an unknown
    one the closest known name, a value that does not parse what it should be."""
    import difflib

    err = exc.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    name = ".".join(str(p) for p in loc)
    if err["type"] == "extra_forbidden" and len(loc) == 1:
        owners = [other for other in task_names() if other != task
                  and name in getattr(_options_class(other), "model_fields", {})]
        if owners:
            return ConfigError(f"task option {name} applies to the {' and '.join(owners)} "
                               f"task{'s' if len(owners) > 1 else ''} only (this run's task "
                               f"is {task})")
        known = sorted(options.model_fields)
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return ConfigError(f"task option {name}: unknown option{hint} (options of the {task} "
                           f"task: {', '.join(known)})")
    msg = str(err["msg"])
    field = options.model_fields.get(str(loc[0])) if loc else None
    parse_failed = err["type"] in ("int_parsing", "float_parsing", "bool_parsing") or (
        err["type"] == "value_error" and any(p in msg for p in _PARSE_FAILURES))
    what = _expected(field.annotation) if field is not None and len(loc) <= 2 else None
    if parse_failed and what:
        value = err.get("input")
        return ConfigError(f"task option {name}: expected {what}, got {value!r}")
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    # a rule over several options (a model validator) has no option name of its own
    return ConfigError(f"task option {name}: {msg}" if name else f"task options: {msg}")


def _options_class(name: str) -> type[TaskOptions] | None:
    try:
        return task_class(name).Options
    except ConfigError:  # a plug-in that does not load: it owns no option we can name
        return None


BUILTIN_TASKS = TASKS.builtins
"""The built-in task kinds (:data:`queryeval.registry.TASKS`, entry-point group
``queryeval.tasks``: ``name = "pkg.mod:Class"``)."""


def register_task(cls: type[Task], name: str | None = None, *, replace: bool = False) -> type[Task]:
    """Make a :class:`Task` subclass available by name (``--task NAME``, ``evaluate(task=…)``).

    ``name`` defaults to ``cls.name``. A built-in task cannot be replaced; another registered
    name only with ``replace=True``. Usable as a class decorator; returns ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise ConfigError(f"register_task expects a Task subclass, got {cls!r:.80}")
    return TASKS.register(name or getattr(cls, "name", None), cls, replace=replace)


def task_names() -> list[str]:
    return TASKS.names()


def get_task(name: str, options: dict | None = None) -> Task:
    cls = task_class(name)
    return cls(options)


def task_class(name: str) -> type[Task]:
    """The Task subclass registered as ``name`` (imported on first use)."""
    return TASKS.get(name)


def infer_task(kinds: set[str], requested: str | None) -> str:
    """The task of a run: the one asked for, or the only kind the suite's targets hold."""
    if requested:
        if requested not in TASKS:
            raise TASKS.unknown(requested)
        return requested
    if len(kinds) == 1:
        return next(iter(kinds))
    if not kinds:
        raise ConfigError("the suite's targets name no task; pass --task "
                          f"({', '.join(task_names())})")
    raise ConfigError(f"the suite holds several tasks ({', '.join(sorted(kinds))}); pick one with --task")
