"""Quality gates on a run's figures: ``--fail-under METRIC=VALUE``.

:func:`parse_thresholds` reads the repeatable CLI option; :func:`check_thresholds` checks a
metrics document (or its ``overall_metrics``) and raises :class:`GateFailure` naming every
threshold that was missed. A metric passes when ``value >= threshold``; an undefined value
(None: e.g. no case could be scored) fails, because a gate must not pass on missing evidence.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from queryeval.errors import ConfigError, GateFailure


def parse_thresholds(items: Iterable[str]) -> dict[str, float]:
    """``["macro_recall=0.8", "micro_precision=0.9"]`` -> ``{"macro_recall": 0.8, ...}``.

    Raises ConfigError for a malformed item, a non-finite number, or a metric given twice with
    different values.
    """
    out: dict[str, float] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise ConfigError(f"--fail-under expects METRIC=VALUE, got {item!r}")
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"--fail-under {key}: {value.strip()!r} is not a number") from None
        if not math.isfinite(number):
            raise ConfigError(f"--fail-under {key}: threshold must be a finite number")
        if key in out and out[key] != number:
            raise ConfigError(f"--fail-under {key} given twice ({out[key]:g} and {number:g})")
        out[key] = number
    return out


@dataclass(frozen=True)
class GateResult:
    metric: str
    value: float | None
    threshold: float

    @property
    def passed(self) -> bool:
        return self.value is not None and self.value >= self.threshold

    def describe(self) -> str:
        if self.value is None:
            return f"{self.metric} = undefined (threshold {self.threshold:g})"
        return f"{self.metric} = {self.value:.4f} {'>=' if self.passed else '<'} {self.threshold:g}"


def numeric_keys(overall: Mapping) -> list[str]:
    """Keys of ``overall_metrics`` that can be gated: numbers (or None), not bools/dicts."""
    return [k for k, v in overall.items()
            if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))]


def evaluate_thresholds(metrics: Mapping, thresholds: Mapping[str, float]) -> list[GateResult]:
    """One result per threshold. ``metrics`` is a metrics document (with ``overall_metrics``)
    or the overall dict itself. Unknown metric names raise ConfigError listing the keys."""
    overall = metrics.get("overall_metrics", metrics)
    available = numeric_keys(overall)
    unknown = [k for k in thresholds if k not in available]
    if unknown:
        raise ConfigError(f"unknown metric(s) for --fail-under: {', '.join(unknown)}; "
                          f"available: {', '.join(available) or 'none'}")
    out = []
    for key, threshold in thresholds.items():
        value = overall[key]
        if value is not None and not math.isfinite(float(value)):
            value = None
        out.append(GateResult(key, None if value is None else float(value), float(threshold)))
    return out


def check_thresholds(metrics: Mapping, thresholds: Mapping[str, float]) -> list[GateResult]:
    """Raise GateFailure naming every missed threshold; return the (all passed) results."""
    results = evaluate_thresholds(metrics, thresholds)
    failed = [r for r in results if not r.passed]
    if failed:
        raise GateFailure("quality gate failed: " + "; ".join(r.describe() for r in failed))
    return results


def check_threshold_names(task: Any, thresholds: Mapping[str, float]) -> None:
    """Before a run: every gated name must be one of the task's overall metrics (those its
    aggregate of no records holds), so a typo stops the run before any call is paid for."""
    if thresholds:
        evaluate_thresholds(task.aggregate([]), {k: 0.0 for k in thresholds})
