"""One model of a run's per-case results, read by every consumer (both compares, ``qe.Run``,
the viewer, the HTML report): cases × attempts → per-case means, pass verdicts, labels.

An *attempt* is one line of ``results_<id>.jsonl`` (a case and a repeat); a case's *figure*
is the exact mean of its attempts' values (:func:`reduce_cases`, the one grouping and
reduction of attempts). A run without ``--repeats`` has one attempt per case, so its figures
are its records' values unchanged. ``on_error=skip`` has one rule, :func:`skipped_cases`: a
case with any failed attempt is left out of every mean (all its attempts), which the metrics
file (:func:`queryeval.run.repeats.aggregate_attempts`), ``RunResults.counted()`` and so the
intervals, both compares and the viewer read (it lives beside the task's record filter,
:mod:`queryeval.tasks.accum`). The run's label (``--name``, else
a default stable for the same system, :func:`default_label`) is stored once in the batch
record (``label``) and read from there. See docs/compare.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from queryeval.errors import ConfigError
from queryeval.run.log import BATCH_FILE, RunLog, batch_beside
from queryeval.tasks.accum import skipped_cases

_LOWER_IS_BETTER = re.compile(r"(?:^|_)(?:rank|latency|latency_ms|cost|tokens|errors?)$|_ms$")


def lower_is_better(task: Any, metric: str) -> bool:
    """Direction of a metric: the task's ``lower_is_better_metrics`` when set, else by name
    (ranks, latencies, costs, token and error counts are better lower)."""
    declared = getattr(task, "lower_is_better_metrics", None)
    if declared is not None:
        return metric in declared
    return bool(_LOWER_IS_BETTER.search(metric))


#: Record fields (besides ``tags``) whose text value makes a group.
GROUP_FIELDS = ("dataset", "dimension", "category", "group")
Verdict = Literal["pass", "fail", "error", "flaky"]


# --- one attempt, one case --------------------------------------------------------------------
def counted_cases(on_error: str, cases: list[CaseResult]) -> list[CaseResult]:
    """``cases`` less the :func:`skipped_cases` (the list itself when none is skipped)."""
    skipped = skipped_cases(on_error, ((c.case_id, a.status) for c in cases for a in c.attempts))
    return [c for c in cases if c.case_id not in skipped] if skipped else cases


def default_case_metrics(record: dict) -> dict[str, float]:
    """Every finite number (not bool) directly in ``record["scores"]``."""
    scores = record.get("scores") or {}
    return {k: float(v) for k, v in scores.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def case_metrics(task: Any, record: dict) -> dict[str, float]:
    """Per-attempt figures of a record: the task's ``case_metrics(record)`` hook when it has
    one (a task whose figures live elsewhere), else :func:`default_case_metrics`."""
    hook = getattr(task, "case_metrics", None)
    return dict(hook(record)) if callable(hook) else default_case_metrics(record)


def attempt_passed(task: Any, record: dict, values: Mapping[str, float]) -> bool:
    """The task's pass rule for one attempt (``Task.case_passed``); without the task: no
    failed call and every [0, 1] figure equals 1."""
    if task is not None:
        return bool(task.case_passed(record))
    if record.get("status") == "error":
        return False
    return all(v == 1.0 for v in values.values() if 0.0 <= v <= 1.0)


def record_groups(record: dict) -> dict[str, tuple[str, ...]]:
    """Group memberships of a record: ``tag`` (each of its tags) and :data:`GROUP_FIELDS`."""
    out: dict[str, tuple[str, ...]] = {}
    tags = record.get("tags")
    if isinstance(tags, list):
        out["tag"] = tuple(dict.fromkeys(str(t) for t in tags))
    for key in GROUP_FIELDS:
        value = record.get(key)
        if isinstance(value, str) and value:
            out[key] = (value,)
    return out


class Attempt(NamedTuple):
    """One line of the results file, reduced to what the consumers read (a tuple: cheap to
    make and hold for every attempt of a large run)."""

    repeat: int
    """0 without --repeats."""
    status: str
    passed: bool
    values: Mapping[str, float]
    index: int
    """Position of the record in :attr:`RunResults.records` (the record on demand)."""

    @property
    def verdict(self) -> str:
        return "error" if self.status == "error" else ("pass" if self.passed else "fail")


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One case, its attempts reduced once."""

    case_id: str
    name: str | None
    labels: Mapping[str, tuple[str, ...]]
    attempts: tuple[Attempt, ...]
    means: Mapping[str, float]
    """The exact mean over attempts of each figure: THE per-case value."""
    cluster: str | None = None
    """The record's ``cluster`` (cases sharing a file, document, building): None when the
    case is its own cluster (docs/compare.md)."""

    @property
    def passes(self) -> int:
        return sum(1 for a in self.attempts if a.passed)

    @property
    def pass_rate(self) -> float:
        """``passes / attempts``: the share of attempts that passed."""
        return self.passes / len(self.attempts)

    @property
    def outcomes(self) -> str:
        """Each attempt's verdict in repeat order as a letter: ``P`` pass, ``F`` fail,
        ``E`` the call failed (``repeats_<id>.csv``, the flaky list, the viewer)."""
        return "".join(a.verdict[0].upper() for a in self.attempts)

    @property
    def errored(self) -> bool:
        """Any attempt's call failed (what ``on_error=skip`` leaves out, per case)."""
        return any(a.status == "error" for a in self.attempts)

    @property
    def verdict(self) -> Verdict:
        """``pass`` (every attempt passed), ``flaky`` (some did), ``error`` (none did and
        every call failed), else ``fail``."""
        n, c = len(self.attempts), self.passes
        if c == n:
            return "pass"
        if c:
            return "flaky"
        return "error" if all(a.status == "error" for a in self.attempts) else "fail"


def reduce_cases(task: Any, records: Iterable[dict]) -> list[CaseResult]:
    """The only grouping and reduction of attempts: cases in order of first appearance, each
    case's attempts in repeat order, its means the exact mean of each figure. Every reader
    (both compares, ``qe.Run``, the viewer, the HTML report, the repeats section and
    ``repeats_<id>.csv`` of :func:`queryeval.run.finish.finish`) gets per-case values, ``n``
    and verdicts from here. ``records`` is read once (a record stream works); what is kept
    per attempt is its floats, not the record."""
    from queryeval.run.repeats import exact_mean

    grouped: dict[str, list[Attempt]] = {}
    heads: dict[str, tuple[str | None, dict[str, tuple[str, ...]], str | None]] = {}
    for k, r in enumerate(records):
        rep = r.get("repeat")
        values = case_metrics(task, r)
        att = Attempt(rep if type(rep) is int else 0, str(r.get("status") or "ok"),
                      attempt_passed(task, r, values), values, k)
        cid = str(r["case_id"])
        if cid not in grouped:
            name = r.get("name")
            cluster = r.get("cluster")
            heads[cid] = (name if isinstance(name, str) else None, record_groups(r),
                          cluster if isinstance(cluster, str) and cluster else None)
            grouped[cid] = []
        grouped[cid].append(att)
    out = []
    for cid, attempts in grouped.items():
        attempts.sort(key=lambda a: a.repeat)
        per: dict[str, list[float]] = {}
        for att in attempts:
            for name, value in att.values.items():
                per.setdefault(name, []).append(value)
        name, labels, cluster = heads[cid]
        out.append(CaseResult(cid, name, labels, tuple(attempts),
                              {m: exact_mean(v) for m, v in per.items()},  # type: ignore[misc]
                              cluster))
    return out


# --- labels -----------------------------------------------------------------------------------
def default_label(cfg: Mapping[str, Any], task: Any = None) -> str:
    """The run's label: ``name`` (``--name`` / ``name=``), else ``system_name``, else one that
    stays the same for the same system: a callable's qualified name, a ``python:`` file's
    name and function, a URL or command as given, the recorded responses file's name, or
    the task's built-in system (``bm25``, ``dense:<model>``)."""
    for key in ("name", "system_name"):
        if isinstance(cfg.get(key), str) and cfg[key].strip():
            return str(cfg[key]).strip()
    system = cfg.get("system")
    if isinstance(system, dict):
        system = system.get("name") or system.get("kind")
    if isinstance(system, str) and system:
        if system.startswith("object:"):
            return system[len("object:"):].split("#", 1)[0]
        if system.startswith("python:"):
            path, _, func = system[len("python:"):].rpartition(":")
            return f"{Path(path).name}:{func}" if path else func
        return system
    if cfg.get("responses"):
        return Path(str(cfg["responses"])).name
    hook = getattr(task, "system_label", None)
    label = hook() if callable(hook) else None
    return str(label).replace(": ", ":") if label else "built-in"


# --- a run ------------------------------------------------------------------------------------
def resolve_batch(location: str | Path) -> Path:
    """The ``batch_<id>.json`` for a batch file, any file of the batch (results, metrics,
    report), or a folder holding exactly one batch (searched recursively)."""
    path = Path(location)
    if path.is_dir():
        found = sorted(path.rglob("batch_*.json"))
        if len(found) != 1:
            names = ", ".join(str(p.relative_to(path)) for p in found[:6]) or "none"
            more = f" and {len(found) - 6} more" if len(found) > 6 else ""
            raise ConfigError(f"{path}: expected one run (batch_<id>.json), found {len(found)} "
                              f"({names}{more}); pass the batch_<id>.json file")
        return found[0]
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    if path.name.startswith("batch_") and path.suffix == ".json":
        return path
    batch = batch_beside(path)  # the run log's one rule for the files of a batch
    if batch == path:
        if BATCH_FILE.match(path.name):
            raise ConfigError(f"{path}: no batch_<id>.json beside it")
        raise ConfigError(f"{path}: not a run log (a batch_<id>.json, a file of the batch, or a run folder)")
    return batch


@dataclass
class RunResults:
    """A run log read back: batch metadata, metrics (None if not finished), task, its records
    (read on first use, in the suite's order) and their per-case reduction."""

    log: RunLog
    metrics: dict | None
    task: Any  # queryeval.tasks.base.Task, or None when the task kind is not installed
    _records: list[dict] | None = field(default=None, repr=False)
    _cases: list[CaseResult] | None = field(default=None, repr=False)

    @classmethod
    def open(cls, location: str | Path | RunResults) -> RunResults:
        """Open a run log for reading (never modifies it)."""
        if isinstance(location, RunResults):
            return location
        from queryeval.tasks.base import get_task

        log = RunLog.open(resolve_batch(location))
        metrics = log.read_metrics()  # the run log's one reader (numbers: queryeval.io.numbers)
        opts = log.batch.get("evaluation_config", {}).get("task_options") or {}
        try:
            task = get_task(log.batch.get("task") or "", opts)
        except ConfigError:
            task = None
        return cls(log, metrics, task)

    @property
    def records(self) -> list[dict]:
        """Every attempt's record in the order of ``results_<id>.csv`` (the suite's order)."""
        if self._records is None:
            from queryeval.run.records import csv_order

            records = self.log.read_records()
            order = csv_order(self.log.paths.results_csv)
            if order is not None:
                last = len(order)
                records = sorted(records, key=lambda r: order.get(str(r["case_id"]), last))
            self._records = records
        return self._records

    @property
    def cases(self) -> list[CaseResult]:
        """Every case, attempts reduced (suite order)."""
        if self._cases is None:
            self._cases = reduce_cases(self.task, self.records)
        return self._cases

    def attempts(self) -> list[Attempt]:
        """Every attempt in the order of :attr:`records` (``attempts()[i]`` is record i's)."""
        out: list[Attempt | None] = [None] * len(self.records)
        for c in self.cases:
            for a in c.attempts:
                out[a.index] = a
        return out  # type: ignore[return-value]

    def case(self, case_id: str) -> CaseResult:
        for c in self.cases:
            if c.case_id == case_id:
                return c
        raise KeyError(case_id)

    @property
    def batch(self) -> dict:
        return self.log.batch

    @property
    def batch_id(self) -> str:
        return self.log.paths.batch_id

    @property
    def task_name(self) -> str | None:
        return self.batch.get("task")

    @property
    def config(self) -> dict:
        return dict(self.batch.get("evaluation_config") or {})

    @property
    def task_options(self) -> dict:
        return dict(self.config.get("task_options") or {})

    @property
    def on_error(self) -> str:
        return str(self.task_options.get("on_error") or "score")

    @property
    def repeats(self) -> int:
        value = self.config.get("repeats", 1)
        return value if type(value) is int and value > 0 else 1

    @property
    def label(self) -> str:
        """The run's label as stored in the batch record (older runs: computed the same way)."""
        stored = self.batch.get("label")
        if isinstance(stored, str) and stored:
            return stored
        return default_label(self.config, self.task)

    def counted(self) -> list[CaseResult]:
        """The cases that enter the means: all but the :func:`skipped_cases` (with
        ``on_error=skip``, those with a failed attempt)."""
        return counted_cases(self.on_error, self.cases)

    def vector(self, figure: str, cases: Iterable[str] | None = None) -> dict[str, float]:
        """``{case_id: mean}`` of one figure over the counted cases (those in ``cases``)."""
        keep = None if cases is None else set(cases)
        return {c.case_id: c.means[figure] for c in self.counted()
                if figure in c.means and (keep is None or c.case_id in keep)}

    def rows(self, level: Literal["case", "attempt"] = "case") -> Iterator[dict]:
        """One dict per case (its means, attempts, passes, verdict) or per attempt (with its
        ``repeat``, status, verdict and values)."""
        for c in self.cases:
            base = {"case_id": c.case_id, "name": c.name}
            if level == "attempt":
                for a in c.attempts:
                    yield {**base, "repeat": a.repeat, "status": a.status,
                           "verdict": a.verdict, **a.values}
            else:
                yield {**base, "attempts": len(c.attempts), "passes": c.passes,
                       "verdict": c.verdict, "errored": c.errored, **c.means}

    def describe(self) -> dict:
        """What a comparison shows of the run."""
        cfg = self.config
        return {
            "batch_id": self.batch_id, "label": self.label, "path": str(self.log.paths.batch),
            "status": self.batch.get("status"), "timestamp": self.batch.get("timestamp"),
            "system": cfg.get("system"), "responses": cfg.get("responses"),
            "task_options": self.task_options, "cases": len(self.cases),
            "attempts": len(self.records), "repeats": self.repeats,
        }


def record_latency_ms(record: dict) -> float:
    """The time a case's calls took, in ms, as its record holds it (one place for every
    reader: JUnit's case time, OTel's span length): ``latency_ms`` on the record (one-turn
    tasks), else the sum of its turns' ``latency_ms`` (selection, fields), else
    ``evaluation_result.retrieval_time_ms`` (retrieval). 0.0 when the record holds none, or
    no finite number >= 0 there (a damaged or hand-edited run file: ``"x"``, ``1e999``)."""
    value = _stored_latency_ms(record)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else 0.0


def _stored_latency_ms(record: dict) -> Any:
    if "latency_ms" in record:
        return record["latency_ms"]
    turns = record.get("turns")
    if isinstance(turns, list) and turns:
        values = [t.get("latency_ms") for t in turns if isinstance(t, dict)]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers and len(numbers) == len(values):
            return sum(numbers)
        return next((v for v in values if v is not None), None)
    ev = record.get("evaluation_result")
    if isinstance(ev, dict):
        return ev.get("retrieval_time_ms")
    return None
