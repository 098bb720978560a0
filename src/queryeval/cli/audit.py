"""``queryeval audit SUITE``: run every gold query of a text-to-query suite as if it were a
prediction, twice, and report the golds that cannot be matched reliably.

A gold is **broken** when it fails (syntax, refused, engine error), times out, returns no
rows, returns different rows on its two executions (nondeterministic: e.g. ``LIMIT``
without ``ORDER BY`` on an engine that does not keep order), or reaches the row limit
(``truncated``: the comparison would see only part of it), or sorts and cuts where rows
tie (``tie_order``: ``ORDER BY … LIMIT`` whose rows at the cut share the sort key, found by
running it uncut; :mod:`queryeval.tasks.query.audit`). A top-level ``LIMIT``/``OFFSET``
without a top-level ``ORDER BY`` is reported as a warning even when both runs agreed, and
so is a gold close to the deadline (``near_deadline``: its slower run took over half of
``--query-timeout``), and with ``--test-suite N`` a SQL gold that neither the database nor
any of N neighbour databases tells apart from one of its near-miss mutants
(``under_constrained``: an under-constrained question or a redundant clause; docs/test-suite.md).

For each gold the **ceiling** is the figures the second run scores against the first: what
a perfect prediction could reach under the case's comparison options (1.0 everywhere for a
sound gold; below 1 for a nondeterministic one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from queryeval.cli.console import console
from queryeval.errors import ConfigError, OutputError
from queryeval.io.safetext import console_line
from queryeval.tasks.query.audit import BROKEN


def command(
    suite: Path = typer.Argument(..., help="Suite to audit (any task kind)."),
    graph: list[Path] = typer.Option([], "--graph", help="RDF file(s) to run queries on."),
    database: str | None = typer.Option(
        None, "--database", help="A sqlite (.sqlite/.db) or DuckDB file, or a postgresql:// URL."),
    endpoint: str | None = typer.Option(None, "--endpoint", help="A SPARQL 1.1 endpoint URL."),
    labels: Path | None = typer.Option(None, "--labels",
                                       help="DABench labels for a questions .jsonl suite."),
    corpus: Path | None = typer.Option(
        None, "--corpus", help="The retrieval corpus: relevant chunks it lacks, and relevant "
        "chunks equal or nearly equal to chunks not marked relevant."),
    timeout_s: float = typer.Option(30.0, "--query-timeout", min=0.001,
                                    help="Seconds each execution may take."),
    max_rows: int = typer.Option(100_000, "--max-rows", min=1,
                                 help="Row limit of each execution."),
    store_dir: Path | None = typer.Option(
        None, "--store-dir", help="Where embedded SPARQL stores persist (default $QUERYEVAL_CACHE_DIR/oxigraph, else "
        "~/.cache/queryeval/oxigraph)."),
    json_out: Path | None = typer.Option(
        None, "--json", help='Write {"findings": [...], "summary": {...}, "golds": [...]} here.'),
    html_out: Path | None = typer.Option(
        None, "--html", help="Write the suite health summary and every finding as a page."),
    runs: list[Path] = typer.Option(
        [], "--runs", help="Runs of this suite (two or more; repeat the option): cases every "
        "run gets wrong the same way, and cases every run gets right."),
    pin: bool = typer.Option(False, "--pin", help="Write each query gold's result fingerprint "
                             "to <suite>.pins.json; later audits report gold_drift."),
    platinum: Path | None = typer.Option(
        None, "--write-platinum", help="Write the cases with no finding here as a suite "
        "(.jsonl: cases JSONL, else YAML)."),
    fail_on_broken: bool = typer.Option(False, "--fail-on-broken",
                                        help="Exit 1 when a case has a defect."),
    test_suite: int = typer.Option(
        0, "--test-suite", min=0, max=1000,
        help="Also build N neighbour databases per SQL gold (sqlite/DuckDB) and warn about "
        "golds no database tells apart from a near-miss mutant (e.g. 20)."),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Execute every gold now (times measured now, for "
        "near_deadline) instead of reusing earlier audits' results; refreshes the cache."),
) -> int:
    """Check a suite's health: golds that fail, time out, return nothing or are not perfect
    against themselves, results drifted from their pins, duplicated and conflicting cases,
    ambiguous relevance, consensus failures of several runs; a summary by kind."""
    from queryeval.api.evaluate import load
    from queryeval.tasks.audit import audit_suite

    if sum(bool(x) for x in (graph, database, endpoint)) > 1:
        raise ConfigError("give one of --graph, --database or --endpoint")
    sources = [str(p) for p in graph] + ([str(database)] if database else []) \
        + ([endpoint] if endpoint else [])
    options: dict[str, Any] = {"timeout_s": timeout_s, "max_rows": max_rows}
    if sources:
        options["source"] = ",".join(sources)
    if store_dir is not None:
        options["store_dir"] = str(store_dir)
    report = audit_suite(suite, labels=labels, corpus=corpus, query_options=options,
                         neighbours=test_suite, runs=[load(r) for r in runs], pin=pin,
                         platinum=platinum, cache=not no_cache)
    if report.summary["cases"] == 0:
        raise ConfigError(f"{suite}: no case to audit")
    if report.golds:
        _print(report.golds)
    print_summary(report)
    if json_out is not None:
        try:
            json_out.write_text(json.dumps(report.to_dict(), indent=1, ensure_ascii=False)
                                + "\n", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"{json_out}: cannot write ({exc.strerror})") from exc
    if html_out is not None:
        from queryeval.io.atomic import write_text_atomic
        from queryeval.report.audit_html import audit_page

        try:
            write_text_atomic(html_out, audit_page(report, str(suite)))
        except OSError as exc:
            raise OutputError(f"{html_out}: cannot write ({exc.strerror})") from exc
    return 1 if fail_on_broken and report.summary["cases_with_defect"] else 0


def print_summary(report: Any) -> None:
    """The suite health summary: the share of cases with a finding, by kind, then each
    finding (case, kind, fix)."""
    from rich.table import Table

    from queryeval.tasks.audit_model import KINDS

    s = report.summary
    console.print(f"Suite health: {s['cases_with_finding']} of {s['cases']} cases "
                  f"({s['share']:.1%}) have a finding, {s['cases_with_defect']} a defect",
                  markup=False, highlight=False)
    if s["by_kind"] or s["notes"]:
        table = Table(title="Findings by kind", title_justify="left")
        for name in ("kind", "severity", "cases", "share", "meaning"):
            table.add_column(name)
        for kind, v in s["by_kind"].items():
            table.add_row(kind, v["severity"], str(v["cases"]), f"{v['share']:.1%}",
                          KINDS.get(kind, ("", ""))[1])
        for kind, n in s["notes"].items():
            table.add_row(kind, "note", str(n), f"{n / s['cases']:.1%}" if s["cases"] else "-",
                          KINDS.get(kind, ("", ""))[1])
        console.print(table)
    if "platinum" in s:
        console.print(f"platinum: {s['platinum']['cases']} case(s) with no finding written "
                      f"to {console_line(s['platinum']['path'])}", markup=False,
                      highlight=False)
    cached = [g for g in report.golds if g.get("timing") == "cached"]
    if cached:  # their near_deadline was decided on an earlier audit's times
        when = sorted(str(g["measured_at"]) for g in cached if g.get("measured_at"))
        since = f" (the earliest measured at {when[0]})" if when else ""
        console.print(f"the times of {len(cached)} gold(s) are cached from earlier audits"
                      f"{since}, near_deadline included; --no-cache measures them now",
                      markup=False, highlight=False)
    if "pinned" in s:
        console.print(f"pinned result fingerprints to {console_line(s['pinned'])}",
                      markup=False, highlight=False)


def _print(results: list[dict]) -> None:
    from rich.table import Table

    table = Table(title="Gold audit", title_justify="left")
    for name in ("case", "gold", "status", "rows", "ms (1st, 2nd)", "ceiling row/exact",
                 "notes"):
        table.add_column(name)
    for r in results:
        ceiling = r.get("ceiling")
        ms = ", ".join("-" if x is None else f"{x:.1f}" for x in r["elapsed_ms"])
        notes = "; ".join([*(r["warnings"]), *([r["reason"]] if r.get("reason") else [])])
        style = "bold red" if r["status"] in BROKEN else None
        table.add_row(console_line(r["case_id"]), str(r["gold"]), r["status"],
                      "-" if r.get("rows") is None else str(r["rows"]), ms,
                      "-" if ceiling is None else
                      f"{ceiling['row_matching_f1']:.3f}/{ceiling['exact_match_f1']:.3f}",
                      console_line(notes), style=style)
    console.print(table)
    broken = sum(r["status"] in BROKEN for r in results)
    console.print(f"{len(results)} gold {'query' if len(results) == 1 else 'queries'}, "
                  f"{broken} broken, "
                  f"{sum(bool(r['warnings']) for r in results)} with warnings",
                  markup=False, highlight=False)
