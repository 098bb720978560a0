"""GitHub Actions: the job's step summary (Markdown appended to ``$GITHUB_STEP_SUMMARY``) and
workflow commands (``::error``/``::warning`` annotations) for a run and a comparison.

Every figure is read, never recomputed: the overall metrics from the run's metrics file, the
gates from :func:`queryeval.report.gates.evaluate_thresholds`, the per-case verdicts from the
run model (:class:`queryeval.run.results.RunResults`), a comparison's verdicts and
regressions from the comparison object. Untrusted text (case names, labels, messages) is
escaped: Markdown cells by :func:`queryeval.report.markdown.md` (the one Markdown escaper,
also used by ``compare --markdown`` of N runs), workflow commands by GitHub's rules
(:func:`escape_data`, :func:`escape_property`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.report.gates import GateResult, numeric_keys
from queryeval.report.markdown import md
from queryeval.run.results import RunResults

CASE_ROWS = 100
"""At most this many cases that did not pass are listed in a run's summary."""
NAME_CHARS = 200
"""A case id or name is cut to this many characters in the summary: GitHub drops a step
summary over 1 MiB, and one suite's megabyte case id would take the whole summary with it."""


def _cut(text: object) -> str:
    s = str(text)
    return s if len(s) <= NAME_CHARS else s[:NAME_CHARS - 1] + "…"


# --- workflow commands ------------------------------------------------------------------------
def escape_data(text: object) -> str:
    """A command's message: ``%``, ``\\r`` and ``\\n`` as GitHub's runner decodes them."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: object) -> str:
    """A command's property value (``title=``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, title: str | None = None) -> str:
    """``::error title=T::message`` (``level``: error, warning, notice)."""
    props = f" title={escape_property(title)}" if title else ""
    return f"::{level}{props}::{escape_data(message)}"


def gate_commands(gates: Iterable[GateResult]) -> list[str]:
    """One ``::error`` per missed gate."""
    return [command("error", g.describe(), title="queryeval quality gate")
            for g in gates if not g.passed]


def run_commands(run: RunResults, gates: Iterable[GateResult]) -> list[str]:
    """A run's annotations: an ``::error`` per missed gate, a ``::warning`` when calls failed."""
    out = gate_commands(gates)
    calls = (run.metrics or {}).get("calls") or {}
    if calls.get("failed"):
        out.append(command("warning", f"{calls['failed']} of {calls.get('total')} calls failed",
                           title="queryeval run"))
    return out


def regression_commands(comp: Any, *, fail: bool) -> list[str]:
    """One annotation per significant regression (``::error`` when ``--fail-on-regression``
    fails the step on it, else ``::warning``). ``comp``: a raw two-run or N-way comparison."""
    level = "error" if fail else "warning"
    out = []
    if hasattr(comp, "run_a"):
        pairs = [(comp.run_b.get("label"), comp.run_a.get("label"), m, m.p_holm)
                 for m in comp.regressions()]
    else:
        pairs = [(comp.labels[t.j], comp.labels[0], t.result, t.p_adjusted)
                 for t in comp.regressions()]
    for b, a, m, p in pairs:
        out.append(command(level, f"{m.metric}: {b} is significantly worse than {a} "
                           f"(B - A = {_num(m.diff)}, Holm p = {_num(p)}, mean {_num(m.mean_a)} "
                           f"-> {_num(m.mean_b)})", title="queryeval regression"))
    return out


# --- Markdown (cells escaped by the one escaper, report/markdown.py) ---------------------------
def _num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}" if math.isfinite(value) else str(value)


def run_summary(run: RunResults, gates: Sequence[GateResult] = ()) -> str:
    """A run's step summary: label and counts, the overall metrics (metrics file), the gates,
    the verdict counts and every case that did not pass (run model) with its reason."""
    from queryeval.report.junit import case_outcome

    metrics = run.metrics or {}
    overall = metrics.get("overall_metrics") or {}
    cases = run.cases
    counts = Counter(c.verdict for c in cases)
    lines = [f"## queryeval run: {md(run.label)}", "",
             f"task `{md(run.task_name)}` · batch `{md(run.batch_id)}` · {len(cases)} cases"
             + (f" × {run.repeats} repeats" if run.repeats > 1 else "") + " · "
             + ", ".join(f"{counts[v]} {v}" for v in ("pass", "fail", "error", "flaky")
                         if counts[v]), ""]
    lines += ["| metric | value |", "|---|---:|"]
    lines += [f"| {md(k)} | {_num(overall[k])} |" for k in numeric_keys(overall)]
    rep = (metrics.get("repeats") or {}).get("overall") or {}
    lines += [f"| repeats.{md(k)} | {_num(v.get('mean'))} |" for k, v in rep.items()
              if isinstance(v, Mapping)]
    lines.append("")
    if gates:
        ok = all(g.passed for g in gates)
        lines += [f"**Gates: {'passed' if ok else 'FAILED'}**", "",
                  "| gate | value | threshold | result |", "|---|---:|---:|---|"]
        lines += [f"| {md(g.metric)} | {_num(g.value)} | {g.threshold:g} | "
                  f"{'pass' if g.passed else 'FAIL'} |" for g in gates]
        lines.append("")
    bad = [c for c in cases if c.verdict != "pass"]
    if bad:
        lines += ["<details><summary>Cases that did not pass</summary>", "",
                  "| case | name | verdict | pass rate | reason |", "|---|---|---|---:|---|"]
        for c in bad[:CASE_ROWS]:
            _, message, _ = case_outcome(run.records, c)
            lines.append(f"| {md(_cut(c.case_id))} | {md(_cut(c.name or ''))} | {c.verdict} | "
                         f"{c.pass_rate:.4f} | {md(message)} |")
        if len(bad) > CASE_ROWS:
            lines.append(f"\nand {len(bad) - CASE_ROWS} more (see the run's report)")
        lines += ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def comparison_summary(comp: Any) -> str:
    """A comparison's step summary: the verdict, then one row per metric (two runs), or the
    N-run Markdown tables (:func:`queryeval.report.compare_output.to_markdown`)."""
    if not hasattr(comp, "run_a"):
        from queryeval.report.compare_output import to_markdown

        return to_markdown(comp) + "\n"
    a, b = comp.run_a, comp.run_b
    bad = {m.metric for m in comp.regressions()}
    lines = [f"## queryeval compare: {md(b.get('label'))} (B) vs {md(a.get('label'))} (A)", "",
             f"task `{md(comp.task)}` · {comp.paired} paired cases · "
             f"{len(comp.only_a)} only in A · {len(comp.only_b)} only in B", "",
             f"**Verdict.** {md(comp.headline())}", ""]
    lines += [f"- warning: {md(w)}" for w in comp.warnings]
    lines += ["", f"| metric | n | mean A | mean B | B − A | {comp.confidence:.0%} CI | "
              "p Holm | verdict |", "|---|---:|---:|---:|---:|---|---:|---|"]
    for m in comp.metrics:
        verdict = md(m.verdict) + (" **regression**" if m.metric in bad else "")
        lines.append(f"| {md(m.metric)} | {m.n} | {_num(m.mean_a)} | {_num(m.mean_b)} | "
                     f"{_num(m.diff)} | [{_num(m.ci_low)}, {_num(m.ci_high)}] | "
                     f"{_num(m.p_holm)} | {verdict} |")
    return "\n".join(lines) + "\n"


def append_summary(text: str, path: str | Path) -> Path:
    """Append to the step summary file (GitHub creates it; several steps append)."""
    from queryeval.io.writing import writing

    with writing(path), open(path, "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return Path(path)
