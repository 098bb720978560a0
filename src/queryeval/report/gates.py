"""Quality gates on a run's figures: ``--fail-under METRIC=VALUE``.

:func:`parse_thresholds` reads the repeatable CLI option; :func:`check_thresholds` checks a
metrics document (or its ``overall_metrics``) and raises :class:`GateFailure` naming every
threshold that was missed. Every figure the run reports can be gated, the repeats figures
(``pass_rate``, ``pass@k``, ``pass^k``) included: :func:`gate_values`. A metric passes when ``value >= threshold``; an undefined value
(None: e.g. no case could be scored) fails, because a gate must not pass on missing evidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
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


REPEATS_PREFIX = "repeats."
"""``repeats.NAME`` always names a figure of the repeats section (``repeats.pass_rate``), also
where the task's ``overall_metrics`` has a figure of the same name (the fields task's
``pass_rate`` counts questions, the repeats one cases)."""


def gate_values(metrics: Mapping) -> dict[str, Any]:
    """Every figure a gate can name, read from the run's metrics (never recomputed): the
    numbers of ``overall_metrics``, and for a run with repeats each figure of
    ``repeats.overall`` (``pass_rate``, ``pass@k``, ``pass^k``, ``<metric>_mean``,
    ``mean_<metric>_std``: its ``mean``, the mean over cases) and ``flaky_share``, under the
    name the metrics JSON gives it and as ``repeats.NAME``. A name in both keeps the
    ``overall_metrics`` figure. ``metrics`` may also be the overall dict itself."""
    overall = metrics.get("overall_metrics", metrics)
    values: dict[str, Any] = {k: overall[k] for k in numeric_keys(overall)}
    rep = metrics.get("repeats") if "overall_metrics" in metrics else None
    if isinstance(rep, Mapping):
        figures = {name: fig.get("mean") for name, fig in (rep.get("overall") or {}).items()
                   if isinstance(fig, Mapping)}
        figures["flaky_share"] = rep.get("flaky_share")
        for name, value in figures.items():
            values.setdefault(name, value)
            values[REPEATS_PREFIX + name] = value
    return values


def _listed(values: Mapping[str, Any]) -> list[str]:
    """The names to list as available: ``repeats.NAME`` only where NAME alone means another
    figure."""
    return [k for k in values if not k.startswith(REPEATS_PREFIX)
            or values.get(k[len(REPEATS_PREFIX):]) is not values[k]]


def evaluate_thresholds(metrics: Mapping, thresholds: Mapping[str, float]) -> list[GateResult]:
    """One result per threshold. ``metrics`` is a metrics document (with ``overall_metrics``,
    and ``repeats`` for a run with repeats: :func:`gate_values`) or the overall dict itself.
    Unknown metric names raise ConfigError listing the names there are."""
    values = gate_values(metrics)
    unknown = [k for k in thresholds if k not in values]
    if unknown:
        raise ConfigError(f"unknown metric(s) for --fail-under: {', '.join(unknown)}; "
                          f"available: {', '.join(_listed(values)) or 'none'}")
    out = []
    for key, threshold in thresholds.items():
        value = values[key]
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


_PER_CASE_FIGURE = re.compile(r"^(?:repeats\.)?(?:.+_mean|mean_.+_std)$")


def check_threshold_names(task: Any, thresholds: Mapping[str, float], *, repeats: int = 1,
                          pass_k: Sequence[int] = ()) -> None:
    """Before a run: every gated name must be one the run will report, so a typo stops the
    run before any call is paid for: the task's overall metrics (those its aggregate of no
    records holds) and, with ``repeats`` > 1, the repeats figures (``pass_rate``, ``pass@k``
    and ``pass^k`` for the run's k, ``flaky_share``). ``<metric>_mean`` and
    ``mean_<metric>_std`` depend on the per-case metrics the records carry: they are checked
    after the run."""
    if not thresholds:
        return
    expected: dict[str, Any] = dict(task.aggregate([]))
    names = dict(thresholds)
    if repeats > 1:
        from queryeval.run.repeats import pass_ks

        keys = ["pass_rate"] + [f"pass{sep}{k}" for k in pass_ks(repeats, pass_k)
                                for sep in ("@", "^")]
        expected["repeats"] = {"overall": {k: {"mean": None} for k in keys}, "flaky_share": None}
        names = {k: v for k, v in names.items() if not _PER_CASE_FIGURE.match(k)}
    evaluate_thresholds(expected, {k: 0.0 for k in names})
