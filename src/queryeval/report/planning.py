"""How many cases a comparison needs, and the smallest difference a comparison could detect.

* :func:`independent_cases` — two independent proportions (a baseline pass rate ``P`` and
  ``P + D``), the normal approximation with the pooled variance under H0 and the unpooled one
  under H1 (Fleiss, without continuity correction; statsmodels'
  ``samplesize_proportions_2indep_onetail`` with ``alternative="two-sided"``): cases per run,
  ``n = (z_{1-α/2}·sqrt(2·p̄·q̄) + z_{power}·sqrt(p1·q1 + p2·q2))² / D²``.
* :func:`paired_cases` — the same two systems on the same cases, McNemar's test (Connor
  1987): with discordance ``ψ`` (the share of cases where the two disagree),
  ``n = (z_{1-α/2}·sqrt(ψ) + z_{power}·sqrt(ψ − D²))² / D²``.
* :func:`plan` — either of them, times the design effect ``1 + (M − 1)·ICC`` of clusters of
  M cases (and the clusters that makes), with the calls ``--repeats K`` takes.
* :func:`minimum_detectable_effect` — ``(z_{1-α/2} + z_{power}) · SE``: the difference a
  compare with this standard error detects with that power (printed beside "no detectable
  difference").

Pure functions (no I/O); ``queryeval plan`` (cli/plan.py) prints them. See docs/compare.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

from queryeval.errors import ConfigError

POWER = 0.8


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha must be between 0 and 1, got {alpha}")
    if not 0 < power < 1:
        raise ConfigError(f"--power must be between 0 and 1, got {power}")
    return NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)


def independent_cases(baseline: float, effect: float, *, alpha: float = 0.05,
                      power: float = POWER) -> float:
    """Cases per run (not rounded) to detect ``baseline → baseline + effect`` between two
    independent samples of pass/fail outcomes."""
    p1, p2 = baseline, baseline + effect
    if not 0 <= p1 <= 1 or not 0 <= p2 <= 1:
        raise ConfigError(f"--baseline {baseline} and --effect {effect}: both rates must be "
                          f"in [0, 1], got {p1:g} and {p2:g}")
    if effect == 0:
        raise ConfigError("--effect must not be 0 (no number of cases detects no difference)")
    za, zb = _z(alpha, power)
    pbar = (p1 + p2) / 2
    return (za * math.sqrt(2 * pbar * (1 - pbar))
            + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 / effect**2


def paired_cases(effect: float, discordance: float, *, alpha: float = 0.05,
                 power: float = POWER) -> float:
    """Paired cases (not rounded) for McNemar's test to detect ``effect = p01 − p10`` when
    the systems disagree on a share ``discordance = p01 + p10`` of the cases."""
    if not 0 < discordance <= 1:
        raise ConfigError(f"--discordance must be in (0, 1], got {discordance}")
    if effect == 0:
        raise ConfigError("--effect must not be 0 (no number of cases detects no difference)")
    if abs(effect) > discordance:
        raise ConfigError(f"--effect {effect:g} cannot exceed the discordance {discordance:g}: "
                          "a difference needs at least that share of cases to disagree")
    za, zb = _z(alpha, power)
    return (za * math.sqrt(discordance)
            + zb * math.sqrt(discordance - effect**2)) ** 2 / effect**2


@dataclass(frozen=True)
class Plan:
    cases: int
    """Cases per run (independent) or paired cases, after the design effect."""
    method: str
    baseline: float
    effect: float
    alpha: float
    power: float
    discordance: float | None = None
    icc: float | None = None
    cluster_size: int | None = None
    design_effect: float = 1.0
    clusters: int | None = None
    repeats: int = 1
    calls: int | None = None
    """Calls per run: cases × repeats."""

    def to_dict(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        what = ("paired cases (both systems on the same cases; McNemar)"
                if self.method == "paired" else
                "cases per run (independent outcomes; two proportions)")
        out = [f"cases: {self.cases} {what} to detect {self.baseline:g} → "
               f"{self.baseline + self.effect:g} ({self.effect:+g}) with {self.power:.0%} power "
               f"at alpha {self.alpha:g} (two-sided)"]
        if self.discordance is not None:
            out.append(f"discordance: {self.discordance:g} of the cases decided differently")
        if self.clusters is not None:
            out.append(f"clusters: {self.clusters} of {self.cluster_size} cases (ICC "
                       f"{self.icc:g}, design effect {self.design_effect:.4g})")
        if self.repeats > 1:
            out.append(f"calls: {self.calls} per run ({self.repeats} repeats of each case; "
                       "repeats narrow only the attempts' own spread, so the cases stay as "
                       "many)")
        return out


def plan(baseline: float, effect: float, *, alpha: float = 0.05, power: float = POWER,
         discordance: float | None = None, icc: float | None = None,
         cluster_size: int | None = None, repeats: int = 1) -> Plan:
    """The cases (and clusters) a comparison needs; see the module docstring."""
    if (icc is None) != (cluster_size is None):
        raise ConfigError("--icc and --cluster-size go together (the design effect is "
                          "1 + (M − 1)·ICC for clusters of M cases)")
    if icc is not None and not 0 <= icc <= 1:
        raise ConfigError(f"--icc must be in [0, 1], got {icc}")
    if cluster_size is not None and cluster_size < 1:
        raise ConfigError(f"--cluster-size must be at least 1, got {cluster_size}")
    if repeats < 1:
        raise ConfigError(f"--repeats must be at least 1, got {repeats}")
    if not 0 <= baseline <= 1:
        raise ConfigError(f"--baseline must be a rate in [0, 1], got {baseline}")
    if discordance is None:
        n = independent_cases(baseline, effect, alpha=alpha, power=power)
        method = "independent"
    else:
        if not 0 <= baseline + effect <= 1:
            raise ConfigError(f"--baseline {baseline} plus --effect {effect} leaves [0, 1]")
        n = paired_cases(effect, discordance, alpha=alpha, power=power)
        method = "paired"
    deff = 1.0 + (cluster_size - 1) * icc if icc is not None and cluster_size else 1.0
    cases = math.ceil(n * deff - 1e-9)
    clusters = math.ceil(cases / cluster_size) if cluster_size else None
    if clusters is not None:
        cases = clusters * cluster_size  # whole clusters
    return Plan(cases, method, baseline, effect, alpha, power, discordance, icc, cluster_size,
                deff, clusters, repeats, cases * repeats)


def pilot_discordance(passes: list[tuple[bool, bool]]) -> float:
    """The share of paired cases whose pass verdicts differ between two pilot runs."""
    if not passes:
        raise ConfigError("--pilot: the two runs share no case")
    return sum(1 for a, b in passes if a != b) / len(passes)


def minimum_detectable_effect(se: float | None, *, alpha: float, power: float = POWER
                              ) -> float | None:
    """The smallest |difference| a two-sided test at ``alpha`` with standard error ``se``
    detects with ``power``: ``(z_{1-α/2} + z_power) · se``; None without a spread."""
    if se is None or not se > 0 or not math.isfinite(se):
        return None
    za, zb = _z(alpha, power)
    return (za + zb) * se
