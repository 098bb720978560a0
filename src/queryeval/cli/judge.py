"""``queryeval judge-check LABELS``: measure the LLM judge against human labels (Cohen's
kappa, TPR, TNR, accuracy with bootstrap intervals, the confusion matrix, every
disagreement), record the figures for the judge's model and prompt version, and write the
report as JSON (``qe.judge_agreement`` does the work; docs/judge.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def command(
    labels: Path = typer.Argument(..., help="Labelled cases (JSONL: id, question, reference, response, label pass|fail)."),
    judge_model: str = typer.Option(..., "--judge-model", help="The judge's chat model."),
    judge_base_url: str = typer.Option(..., "--judge-base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1."),
    judge_api_key_env: str | None = typer.Option(
        None, "--judge-api-key-env", help="Environment variable holding the API key (default: none, for local servers)."),
    repeats: int = typer.Option(1, "--repeats", min=1, help="Judge each case N times, cache bypassed, and report self-consistency."),
    out: Path = typer.Option(Path("judge_check.json"), "--out", "-o", help="The report as JSON."),
    checks_dir: Path | None = typer.Option(
        None, "--checks-dir", help="Where the check is recorded for runs to find (default $QUERYEVAL_CACHE_DIR/judge-checks or ~/.cache/queryeval/judge-checks)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="The judge's reply cache (default $QUERYEVAL_CACHE_DIR/judge)."),
    no_record: bool = typer.Option(False, "--no-record", help="Do not record the check."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", min=1, help="Requests in flight."),
    timeout: float = typer.Option(60.0, "--timeout", help="Per-request timeout, seconds."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence of the intervals."),
    resamples: int = typer.Option(2000, "--resamples", min=1, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No tables on the console."),
) -> None:
    """Run the judge on human-labelled cases and report how far it agrees with them."""
    from rich.table import Table

    from queryeval.api.judge import judge_agreement
    from queryeval.errors import ConfigError
    from queryeval.io.safetext import console_line, console_text

    if not 0 < confidence < 1:
        raise ConfigError(f"--confidence must be between 0 and 1 (exclusive), got {confidence}")
    report = judge_agreement(
        labels, model=judge_model, base_url=judge_base_url, api_key_env=judge_api_key_env or None,
        repeats=repeats, confidence=confidence, resamples=resamples, seed=seed, out=out,
        record=not no_record, checks_dir=checks_dir,
        cache_dir=str(cache_dir) if cache_dir else None, concurrency=concurrency,
        timeout_s=timeout)
    if not quiet:
        f = report.figures
        pct = f"{confidence:.0%}"
        table = Table(title=console_text(
            f"judge {report.model} (prompt {report.prompt_version}) on {report.n} labelled case(s)"))
        for col in ("figure", "value", f"{pct} CI low", f"{pct} CI high"):
            table.add_column(col, justify="left" if col == "figure" else "right")
        for key, name in (("kappa", "Cohen's kappa"), ("tpr", "TPR (human pass -> judge pass)"),
                          ("tnr", "TNR (human fail -> judge fail)"), ("accuracy", "accuracy")):
            table.add_row(name, _fmt(f[key]["value"]), _fmt(f[key]["ci_low"]),
                          _fmt(f[key]["ci_high"]))
        console.print(table)
        (tn, fp), (fn, tp) = f["confusion"]
        cm = Table(title="confusion (rows: human, columns: judge)")
        for col in ("", "judge fail", "judge pass"):
            cm.add_column(col, justify="right")
        cm.add_row("human fail", str(tn), str(fp))
        cm.add_row("human pass", str(fn), str(tp))
        console.print(cm)
        if report.disagreements:
            dis = Table(title=f"{len(report.disagreements)} disagreement(s)")
            for col in ("id", "human", "judge", "reason"):
                dis.add_column(col)
            for d in report.disagreements:
                # one line each: the judge's reason and the ids are untrusted text
                dis.add_row(console_line(d["id"]), console_line(d["label"]),
                            console_line(d["verdict"]), console_line(d["reason"]))
            console.print(dis)
        if report.self_consistency is not None:
            s = report.self_consistency
            console.print(
                f"self-consistency over {report.repeats} rounds on {s['cases']} case(s): "
                f"unanimous {_fmt(s['unanimous'])}, pairwise agreement {_fmt(s['pairwise'])}, "
                f"Fleiss' kappa {_fmt(s['fleiss_kappa'])}", markup=False, highlight=False)
        for u in report.undecided:
            console.print(console_line(f"undecided {u['id']}: {u['error']['kind']}: "
                                       f"{u['error']['message']}"))
    console.print(f"report: {out}", markup=False, highlight=False)
    if report.recorded:
        console.print(f"recorded: {report.recorded}", markup=False, highlight=False)
    if not report.n and report.undecided:
        from queryeval.run.finish import CallsFailed

        first = report.undecided[0]["error"]
        raise CallsFailed(
            f"the judge decided none of the {len(report.undecided)} labelled case(s) "
            f"(first: {first['kind']}: {first['message']}); nothing measured, nothing recorded")
