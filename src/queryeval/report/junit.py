"""JUnit XML of a run and of a comparison (``--junit FILE`` on ``run`` and ``compare``), for the
test reports of CI systems (GitHub, GitLab, Jenkins, Azure DevOps).

A run: one ``<testsuite>`` (the suite and task), one ``<testcase>`` per case: ``classname``
``SUITE.TASK``, ``name`` ``CASE_ID`` (and `` NAME`` when the case has one). The verdict is the
run model's (:attr:`queryeval.run.results.CaseResult.verdict`, the task's one pass rule), never
re-derived here: ``pass`` no child; ``fail`` a ``<failure>`` with expected vs got; ``error`` an
``<error>`` with the failed call's message; ``flaky`` (repeats: some attempts passed) a
``<failure>`` naming the pass rate. Each testcase's ``<system-out>`` is one JSON object:
``case_id``, ``verdict``, ``attempts``, ``passes``, ``pass_rate`` and ``metrics`` (the case's
figures, the run model's means). ``time`` is the sum of the case's call latencies.

The document keeps to the common (Jenkins/surefire, pytest's ``xunit2``) JUnit schema:
``testsuite`` with ``name``, ``tests``, ``failures``, ``errors``; ``properties`` only on the
suite (the schema has none on a testcase); times with at most three decimals; the
timestamp without fractions or zone.

A comparison: one ``<testcase>`` per metric (per run against the baseline with three or more
runs): ``<failure>`` when the run is significantly worse after Holm (the regressions that
``--fail-on-regression`` fails on); a metric that is better, not different or not tested
passes; its figures are the ``<system-out>`` JSON.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from queryeval.run.results import RunResults, record_latency_ms

REASON_CHARS = 400
"""Each of "expected" and "got" is cut to this many characters in a message."""

# characters XML 1.0 cannot hold (escaping cannot help): dropped
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: Any) -> str:
    return _NOT_XML.sub("", str(value))


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def expected_got(record: dict) -> tuple[str, str]:
    """What the case wanted and what the system gave, in the record's own terms (JSON text,
    each cut to :data:`REASON_CHARS`): the JUnit failures and ``queryeval.testing``'s."""
    turns = record.get("turns")
    if isinstance(turns, list) and turns:
        if len(turns) == 1:
            return _short(turns[0].get("target")), _short(turns[0].get("output"))
        return (_short({t.get("turn"): t.get("target") for t in turns}),
                _short({t.get("turn"): t.get("output") for t in turns}))
    if isinstance(record.get("reference"), dict) and "response" in record:  # free-form
        return _short(record["reference"].get("answer")), _short(record.get("response"))
    pairs = (("gold_query", "predicted_query"), ("expected", "extracted"),
             ("expected_chunk", "retrieved_chunks"), ("gold_rows", "predicted_rows"))
    for want, have in pairs:
        if want in record:
            got = record.get(have)
            if have == "retrieved_chunks" and isinstance(got, list):
                got = [c.get("chunk_id") for c in got if isinstance(c, dict)]
            wanted = record[want]
            if want == "expected_chunk" and isinstance(wanted, dict):
                wanted = wanted.get("chunk_id")
            if want == "expected" and isinstance(wanted, list):
                wanted = dict(tuple(p) for p in wanted)
            return _short(wanted), _short(got)
    return _short(record.get("target")), _short(record.get("output"))


def error_text(record: dict) -> str:
    """A failed call's message as the record holds it (cut to twice :data:`REASON_CHARS`)."""
    err = record.get("error")
    if isinstance(err, dict):
        text = str(err.get("message") or err.get("kind") or "error")
    else:
        text = str(err or ", ".join(record.get("error_kinds") or []) or "error")
    return text if len(text) <= 2 * REASON_CHARS else text[:2 * REASON_CHARS - 1] + "…"


def error_line(record: dict) -> str:
    """Why a case is an error: the failed call's message, or — the call having answered —
    the gold query that failed (the engine's reason, on the record's ``gold_execution``)."""
    gold = record.get("gold_execution")
    if (record.get("error") is None and "gold_query" in (record.get("error_kinds") or [])
            and isinstance(gold, dict)):
        why = str(gold.get("reason") or "no reason recorded")
        why = why if len(why) <= 2 * REASON_CHARS else why[:2 * REASON_CHARS - 1] + "…"
        return f"the gold query failed ({gold.get('status')}): {why}"
    return f"call failed: {error_text(record)}"


def _first_unmatched(side: dict) -> str | None:
    """The first sampled row that the other side lacks, as JSON text (escaped, one line)."""
    rows, matched = side.get("rows"), side.get("matched")
    if not isinstance(rows, list) or not isinstance(matched, list):
        return None
    row = next((r for r, m in zip(rows, matched, strict=False) if m is False), None)
    return None if row is None else json.dumps(row, default=str)


def _refutation(suite: dict) -> str:
    """A test-suite refutation in one line: the reason (which neighbour, its size) and how
    many rows gold and prediction gave on that neighbour."""
    why = str(suite.get("reason"))
    sample = (suite.get("refuted_by") or {}).get("result_sample") or {}
    gold, pred = sample.get("gold") or {}, sample.get("predicted") or {}
    if isinstance(gold.get("total"), int) and isinstance(pred.get("total"), int):
        why += f"; there the gold gives {gold['total']} row(s), the prediction {pred['total']}"
        if gold["total"] == pred["total"]:  # as many rows: which ones differ
            pair = [_first_unmatched(side) for side in (gold, pred)]
            if None not in pair:
                why += f": gold row {pair[0]} vs prediction row {pair[1]}"
    return why if len(why) <= 2 * REASON_CHARS else why[:2 * REASON_CHARS - 1] + "…"


def decision_reason(record: dict) -> str:
    """`` (RULE: WHY)`` for a record that says which rule decided it and why (the free-form
    ladder's ``decided_by`` and ``detail``, or the judge's reason); for a prediction the test
    suite refuted, `` (test suite: refuted by neighbour N (R rows): ...)``; else empty."""
    suite = record.get("test_suite")
    if isinstance(suite, dict) and suite.get("match") == 0.0 and suite.get("reason"):
        return f" (test suite: {_refutation(suite)})"
    by = record.get("decided_by")
    if not isinstance(by, str):
        return ""
    judge = record.get("judge")
    why = judge.get("reason") if by == "judge" and isinstance(judge, dict) else record.get("detail")
    if not why:
        return ""
    why = str(why)
    why = why if len(why) <= REASON_CHARS else why[:REASON_CHARS - 1] + "…"
    return f" ({by}: {why})"


def deciding(record: dict) -> dict | None:
    """What decided a case, for the surfaces that show it beside the verdict (the viewer's
    cases table): ``{"figure", "value", "reason"}`` from the record's own fields, never
    re-derived: a judged or laddered case's ``decided_by`` (``judge: pass`` when the judge
    decided) and its reason; a query case under ``--test-suite`` its
    ``test_suite_match`` (None: inconclusive) and the test suite's reason; else None (the
    task's scores decide)."""
    by = record.get("decided_by")
    if isinstance(by, str):
        judge = record.get("judge") if isinstance(record.get("judge"), dict) else {}
        why = judge.get("reason") if by == "judge" else record.get("detail")
        value = f"judge: {judge.get('verdict') or 'no verdict'}" if by == "judge" else by
        return {"figure": "decided_by", "value": value[:200], "reason": _cut(why)}
    ts = record.get("test_suite")
    if isinstance(ts, dict):
        match = (record.get("scores") or {}).get("test_suite_match", ts.get("match"))
        return {"figure": "test_suite_match",
                "value": match if isinstance(match, (int, float))
                and not isinstance(match, bool) else None,
                "reason": _cut(ts.get("reason"))}
    return None


def _cut(why: Any) -> str | None:
    if why is None or why == "":
        return None
    why = str(why)
    return why if len(why) <= REASON_CHARS else why[:REASON_CHARS - 1] + "…"


def suite_name(run: RunResults) -> str:
    """The suite's file (or folder) name without its extension, else ``suite``."""
    path = (run.batch.get("suite_info") or {}).get("path") or run.config.get("suite")
    return Path(str(path)).stem if path else "suite"


def case_outcome(records: Any, case: Any) -> tuple[str, str, str]:
    """``(verdict, message, detail)`` of a case for a CI surface: the run model's verdict, and
    for a case that is not ``pass`` one line (expected vs got, the call's error, the pass
    rate) and the detail (every attempt that did not pass). ``records``: the run's records
    (:attr:`RunResults.records`; an attempt's ``index`` is its position there)."""
    verdict = case.verdict
    if verdict == "pass":
        return verdict, "", ""
    bad = [a for a in case.attempts if not a.passed]
    lines = []
    for a in bad:
        rec = records[a.index]
        head = f"repeat {a.repeat}: " if len(case.attempts) > 1 else ""
        if a.status == "error":
            lines.append(f"{head}{error_line(rec)}")
        else:
            want, got = expected_got(rec)
            lines.append(f"{head}expected {want}, got {got}{decision_reason(rec)}")
    first = lines[0] if lines else verdict
    if verdict == "flaky":
        message = (f"flaky: passed {case.passes} of {len(case.attempts)} attempts "
                   f"(pass rate {case.pass_rate:.4g}); first miss: {first}")
    elif len(case.attempts) > 1:
        message = f"passed 0 of {len(case.attempts)} attempts; first: {first}"
    else:
        message = first
    return verdict, message, "\n".join(lines)


def _out(testcase: ET.Element, info: dict[str, Any]) -> None:
    """A testcase's figures as one JSON object in its ``<system-out>``."""
    ET.SubElement(testcase, "system-out").text = xml_text(json.dumps(info, ensure_ascii=False))


def _props(parent: ET.Element, items: dict[str, Any]) -> None:
    props = ET.SubElement(parent, "properties")
    for key, value in items.items():
        ET.SubElement(props, "property", name=xml_text(key),
                      value="" if value is None else xml_text(value))


def run_junit(run: RunResults) -> ET.Element:
    """The ``<testsuites>`` element of a run (see the module's doc)."""
    task = run.task_name or "task"
    classname = f"{suite_name(run)}.{task}"
    root = ET.Element("testsuites", name=xml_text(f"queryeval {run.label}"))
    suite = ET.SubElement(root, "testsuite", name=xml_text(classname))
    stamp = str(run.batch.get("timestamp") or "")
    if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?", stamp):
        suite.set("timestamp", stamp[:19])
    _props(suite, {"batch_id": run.batch_id, "label": run.label, "task": task,
                   "repeats": run.repeats, "on_error": run.on_error})
    counts = {"tests": 0, "failures": 0, "errors": 0}
    total = 0.0
    records = run.records
    for case in run.cases:
        seconds = sum(record_latency_ms(records[a.index]) for a in case.attempts) / 1000
        total += seconds
        name = case.case_id + (f" {case.name}" if case.name else "")
        tc = ET.SubElement(suite, "testcase", classname=xml_text(classname), name=xml_text(name),
                           time=f"{seconds:.3f}")
        counts["tests"] += 1
        verdict, message, detail = case_outcome(records, case)
        if verdict != "pass":
            tag = "error" if verdict == "error" else "failure"
            counts["errors" if tag == "error" else "failures"] += 1
            child = ET.SubElement(tc, tag, message=xml_text(message), type=verdict)
            child.text = xml_text(detail)
        _out(tc, {"case_id": case.case_id, "verdict": case.verdict,
                  "attempts": len(case.attempts), "passes": case.passes,
                  "pass_rate": case.pass_rate, "metrics": dict(case.means)})
    for el in (root, suite):
        el.set("tests", str(counts["tests"]))
        el.set("failures", str(counts["failures"]))
        el.set("errors", str(counts["errors"]))
        el.set("time", f"{total:.3f}")
    suite.set("skipped", "0")
    return root


def _metric_case(suite: ET.Element, classname: str, name: str, m: Any, worse: bool,
                 alpha: float, extra: dict) -> bool:
    tc = ET.SubElement(suite, "testcase", classname=xml_text(classname), name=xml_text(name),
                       time="0")
    if worse:
        p = extra.get("p_holm")
        diff = f"{m.diff:+.4g}" if m.diff is not None else "undefined"
        ET.SubElement(tc, "failure", type="regression", message=xml_text(
            f"{m.metric}: significant regression, B - A = {diff} "
            f"(mean {m.mean_a} -> {m.mean_b}, Holm p = {p} < alpha {alpha})"))
    _out(tc, {"metric": m.metric, "n": m.n, "mean_a": m.mean_a, "mean_b": m.mean_b,
              "diff": m.diff, "ci_low": m.ci_low, "ci_high": m.ci_high, **extra,
              "verdict": m.verdict, "regression": worse})
    return worse


def comparison_junit(comp: Any) -> ET.Element:
    """The ``<testsuites>`` of a comparison: ``comp`` is a two-run
    :class:`queryeval.report.compare.Comparison` or an N-way
    :class:`queryeval.report.compare.NWayComparison` (the raw objects)."""
    task = comp.task or "task"
    root = ET.Element("testsuites", name=xml_text(f"queryeval compare {task}"))
    suite = ET.SubElement(root, "testsuite", name=xml_text(f"compare.{task}"))
    tests = failures = 0
    if hasattr(comp, "run_a"):  # two runs
        bad = {m.metric for m in comp.regressions()}
        label = f"{comp.run_b.get('label')} vs {comp.run_a.get('label')}"
        for m in comp.metrics:
            tests += 1
            failures += _metric_case(suite, f"compare.{task}", f"{m.metric} ({label})", m,
                                     m.metric in bad, comp.alpha, {"p_holm": m.p_holm})
    else:  # N runs: each run against the baseline
        bad_n = {(t.j, t.result.metric) for t in comp.regressions()}
        for t in comp.overall.tests:
            if t.i != 0:
                continue
            m = t.result
            label = f"{comp.labels[t.j]} vs {comp.labels[0]}"
            tests += 1
            failures += _metric_case(suite, f"compare.{task}", f"{m.metric} ({label})", m,
                                     (t.j, m.metric) in bad_n, comp.alpha,
                                     {"p_holm": t.p_adjusted})
    for el in (root, suite):
        el.set("tests", str(tests))
        el.set("failures", str(failures))
        el.set("errors", "0")
        el.set("time", "0")
    suite.set("skipped", "0")
    return root


def write_junit(element: ET.Element, path: str | Path) -> Path:
    """Write a ``<testsuites>`` element as a UTF-8 XML file (atomically)."""
    from queryeval.io.atomic import write_text_atomic
    from queryeval.io.writing import writing

    ET.indent(element)
    text = ET.tostring(element, encoding="unicode", xml_declaration=False)
    with writing(path):  # an OSError: one line naming the file
        write_text_atomic(path, '<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n")
    return Path(path)
