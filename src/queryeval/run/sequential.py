"""``--stop-when-decided``: call cases in a seeded random order and stop once an anytime-valid
confidence sequence for the paired difference to a baseline run decides.

Each case the run records is paired by case id with the baseline's value of the same figure
(``--metric``; default ``pass``, the case's pass verdict as 1/0, a pass rate with repeats);
the difference B − A (signed so that positive is better, for a lower-is-better figure too)
is fed, in the order the records were written, to the betting confidence sequence of
:mod:`queryeval.run.confseq`. Once its interval excludes 0 (better, worse) or lies
inside ±margin (equivalent), no new case is started; cases in flight finish and are recorded,
and they enter the sequence (the interval stays valid at any stopping time). A resume feeds
the records already written in the order they were written, then goes on in the same seeded
order. The batch file and the metrics get the ``sequential`` section (:meth:`Sequencer.section`).
docs/compare.md, "Sequential decisions".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from queryeval.errors import ConfigError
from queryeval.run.confseq import ConfidenceSequence, decide, to_unit

PASS = "pass"
"""The default figure: the case's pass verdict (1 or 0; with repeats its share of passes)."""
METHOD = ("betting confidence sequence (Waudby-Smith & Ramdas 2023, hedged capital, "
          "predictable plug-in bets)")


class SequentialConfig(BaseModel):
    """The settings of ``--stop-when-decided`` (stored in the batch file's evaluation_config)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    baseline: str
    """The baseline run (its batch file, made absolute at start)."""
    alpha: float = Field(0.05, gt=0, lt=1)
    margin: float | None = Field(None, gt=0, lt=1)
    metric: str = Field(PASS, min_length=1, max_length=200)
    seed: int = Field(0, ge=0)


def _value(task: Any, record: dict, metric: str, skip_errors: bool) -> float | None:
    """A record's value of ``metric`` as the run model reads it (None: not counted)."""
    from queryeval.run.results import attempt_passed, case_metrics

    if skip_errors and record.get("status") == "error":
        return None
    values = case_metrics(task, record)
    if metric == PASS:
        return 1.0 if attempt_passed(task, record, values) else 0.0
    value = values.get(metric)
    return value if value is not None and math.isfinite(value) else None


class Sequencer:
    """The sequence of one run: the baseline's values, the confidence sequence so far and
    the decision. ``feed`` takes each record as it is written; ``order`` yields the cases
    left to call, in the seeded order, until the sequence is decided."""

    def __init__(self, config: SequentialConfig, task: Any, *, on_error: str = "score") -> None:
        from queryeval.run.results import RunResults, lower_is_better

        self.config = config
        self.task = task
        self.skip_errors = on_error == "skip"
        try:
            base = RunResults.open(config.baseline)
        except (ConfigError, OSError) as exc:
            raise ConfigError(f"--baseline {config.baseline}: {exc}") from None
        if base.task_name != task.name:
            raise ConfigError(f"--baseline {config.baseline} is a run of task "
                              f"{base.task_name!r}, not {task.name!r}")
        if config.metric == PASS:
            values = {c.case_id: c.pass_rate for c in base.counted()}
        else:
            values = base.vector(config.metric)
            if not values:
                raise ConfigError(f"--metric {config.metric}: the baseline run "
                                  f"{config.baseline} has no per-case value of it")
        for case_id, value in values.items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"--metric {config.metric}: the baseline's case {case_id!r} "
                                  f"has {value:g}, outside [0, 1] (a sequential decision "
                                  "needs a figure bounded in [0, 1])")
        self.baseline = values
        self.baseline_batch_id = base.batch_id
        self.baseline_fingerprint = _fingerprint(values)
        self.sign = -1.0 if config.metric != PASS and lower_is_better(task, config.metric) else 1.0
        self.cs = ConfidenceSequence(config.alpha)
        self.recorded = 0
        self.unpaired = 0
        self.decided_at: int | None = None
        self.decision = "undecided"
        self.low, self.high = -1.0, 1.0

    def pin(self) -> dict:
        """What the batch file keeps at start (``sequential_baseline``) so that a resume
        decides against the same baseline: its batch id and a fingerprint of the per-case
        values the sequence pairs with."""
        return {"batch_id": self.baseline_batch_id, "path": str(Path(self.config.baseline)),
                "metric": self.config.metric, "fingerprint": self.baseline_fingerprint}

    def check_pin(self, pinned: Any, batch: Any) -> None:
        """A resume of ``batch``: the baseline must be the run it started with, unchanged
        (:meth:`pin`); else one :class:`ConfigError` line. A sequence that changed its
        baseline part-way would pair its first cases with one run and the rest with another,
        and its interval would hold for neither. A batch without a pin (started before the
        pin was kept) is not checked."""
        if not isinstance(pinned, dict):
            return
        was = f"baseline run {pinned.get('batch_id')} ({pinned.get('path')})"
        if pinned.get("batch_id") != self.baseline_batch_id:
            raise ConfigError(
                f"{batch}: the sequence started against {was}; {self.config.baseline} is now "
                f"run {self.baseline_batch_id}: a resume decides against the baseline it "
                "started with (start a new run to decide against another)")
        if pinned.get("fingerprint") != self.baseline_fingerprint:
            raise ConfigError(
                f"{batch}: {was} changed since the sequence started (its per-case "
                f"{self.config.metric} values differ): a resume decides against the baseline "
                "it started with (start a new run to decide against the changed one)")

    @property
    def decided(self) -> bool:
        return self.decided_at is not None

    def feed(self, record: dict) -> None:
        """One record as written (the case's only attempt: sequential runs have no repeats)."""
        self.recorded += 1
        case_id = str(record.get("case_id"))
        a = self.baseline.get(case_id)
        b = _value(self.task, record, self.config.metric, self.skip_errors)
        if a is None or b is None:
            self.unpaired += 1
            return
        if not 0.0 <= b <= 1.0:
            raise ConfigError(f"--metric {self.config.metric}: case {case_id!r} scored {b:g}, "
                              "outside [0, 1] (a sequential decision needs a figure bounded "
                              "in [0, 1])")
        self.cs.update(to_unit(self.sign * (b - a)))
        low, high = self.cs.difference_bounds()
        self.low, self.high = float(low), float(high)
        if not self.decided:
            verdict = decide(self.low, self.high, self.config.margin)
            if verdict != "undecided":
                self.decision, self.decided_at = verdict, self.cs.t

    def replay(self, records: Iterable[dict]) -> None:
        """The records already written (a resume), in the order they were written."""
        for record in records:
            self.feed(record)

    def order(self, cases: list, done: Any = None) -> Iterator:
        """The cases not yet called, in the seeded order, while the sequence is undecided.
        ``cases`` is the run's cases in suite order (the order is a permutation of them, so a
        resume goes on where the run stopped)."""
        perm = np.random.default_rng(self.config.seed).permutation(len(cases))
        for i in perm:
            if self.decided:
                return
            case = cases[int(i)]
            if done is not None and case.id in done:
                continue
            yield case

    def section(self, total: int) -> dict:
        """The ``sequential`` section of the batch file and the metrics."""
        return {
            "decision": self.decision,
            "cases_used": self.recorded,
            "calls_saved": max(total - self.recorded, 0),
            "interval": [round(self.low, 6), round(self.high, 6)],
            "alpha": self.config.alpha,
            "margin": self.config.margin,
            "metric": self.config.metric,
            "paired": self.cs.t,
            "decided_at": self.decided_at,
            "cases": total,
            "baseline": str(Path(self.config.baseline)),
            "baseline_batch_id": self.baseline_batch_id,
            "seed": self.config.seed,
            "method": METHOD,
        }


def _fingerprint(values: dict[str, float]) -> str:
    """SHA-256 of the baseline's per-case values (case id and value, sorted by id)."""
    import hashlib
    import json

    text = json.dumps(sorted(values.items()), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def summary_line(section: dict, difference: str = "B − A") -> str:
    """One line for the console and the reports: the decision and the interval (for
    ``difference``: the run minus its baseline; a compare names them by its letters)."""
    low, high = section["interval"]
    margin = section.get("margin")
    extra = f", margin ±{margin:g}" if margin else ""
    return (f"sequential: {section['decision']} vs baseline on {section['metric']} — "
            f"anytime-valid {1 - section['alpha']:.0%} interval for {difference} "
            f"[{low:+.3f}, {high:+.3f}]{extra}; {section['cases_used']} of {section['cases']} "
            f"cases called, {section['calls_saved']} saved")
