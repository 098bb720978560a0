"""``queryeval plan --baseline P --effect D``: how many cases (and clusters) a comparison needs
to detect a difference D from a baseline pass rate P (report/planning.py, docs/compare.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from queryeval.cli.console import console


def command(
    baseline: float = typer.Option(..., "--baseline", help="The baseline's pass rate P, in [0, 1]."),
    effect: float = typer.Option(..., "--effect", help="The difference D to detect (B − A, e.g. 0.05)."),
    power: float = typer.Option(0.8, "--power", help="Chance of detecting D when it is real."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level (two-sided)."),
    discordance: float | None = typer.Option(
        None, "--discordance", help="Paired runs (both systems on the same cases): the share of "
        "cases they decide differently (McNemar's sample size)."),
    pilot: list[Path] = typer.Option(
        [], "--pilot", metavar="RUN_A RUN_B", help="Two pilot runs (give --pilot twice) whose "
        "paired cases give the discordance."),
    icc: float | None = typer.Option(None, "--icc", help="Intra-cluster correlation (with --cluster-size)."),
    cluster_size: int | None = typer.Option(None, "--cluster-size", help="Cases per cluster M (with --icc)."),
    repeats: int = typer.Option(1, "--repeats", help="Calls per case (the plan counts the calls)."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
) -> None:
    """Cases (and clusters) needed to detect --effect from --baseline: independent outcomes by
    the two-proportion normal approximation; with --discordance or --pilot, paired cases by
    McNemar; with --icc and --cluster-size, times the design effect 1 + (M − 1)·ICC."""
    from queryeval.errors import ConfigError
    from queryeval.report import planning

    if pilot:
        if discordance is not None:
            raise ConfigError("give one of --discordance or --pilot, not both")
        if len(pilot) != 2:
            raise ConfigError(f"--pilot takes two runs (--pilot RUN_A --pilot RUN_B), got {len(pilot)}")
        discordance = _pilot_discordance(pilot[0], pilot[1])
    result = planning.plan(baseline, effect, alpha=alpha, power=power, discordance=discordance,
                           icc=icc, cluster_size=cluster_size, repeats=repeats)
    if json_out:
        console.print(json.dumps(result.to_dict()), markup=False, highlight=False, soft_wrap=True)
        return
    for line in result.lines():
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _pilot_discordance(run_a: Path, run_b: Path) -> float:
    """The share of the two runs' paired cases whose verdicts differ (pass or not)."""
    from queryeval.report import planning
    from queryeval.report.compare import pair_runs
    from queryeval.run.results import RunResults

    a, b = RunResults.open(run_a), RunResults.open(run_b)
    pair = pair_runs(a, b)
    by_a = {c.case_id: c for c in a.cases}
    by_b = {c.case_id: c for c in b.cases}
    return planning.pilot_discordance([(by_a[c].verdict == "pass", by_b[c].verdict == "pass")
                                       for c in pair.paired])
