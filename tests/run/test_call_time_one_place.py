"""A case's call time is read in one place (run.results.record_latency_ms) by JUnit's
testcase time and OTel's call span: the one-turn tasks keep it on the record, selection and
fields per turn, retrieval as ``evaluation_result.retrieval_time_ms`` — before, the last
three gave a 0 s testcase and a 0 ns span whatever the calls took."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.ci_lab import cli
from queryeval.run.results import RunResults, record_latency_ms

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_record_latency_ms_reads_each_task_shape():
    assert record_latency_ms({"latency_ms": 12.5}) == 12.5
    assert record_latency_ms({"turns": [{"latency_ms": 250.0}, {"latency_ms": 500.0}]}) == 750.0
    assert record_latency_ms({"evaluation_result": {"retrieval_time_ms": 40.0}}) == 40.0
    assert record_latency_ms({"turns": [{"latency_ms": "x"}]}) == 0.0  # a damaged log
    assert record_latency_ms({"latency_ms": float("nan")}) == 0.0
    assert record_latency_ms({"latency_ms": -5}) == 0.0
    assert record_latency_ms({"case_id": "c"}) == 0.0


def _run(tmp_path: Path, args: list) -> tuple[Path, Path]:
    res = cli(["run", *args, "-o", tmp_path / "out", "-q", "--no-report"])
    assert res.exit_code == 0, res.output[-2000:]
    batch = next((tmp_path / "out").rglob("batch_*.json"))
    return batch, next((tmp_path / "out").rglob("results_*.jsonl"))


def _set_times(results: Path, edit) -> list[dict]:
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    for i, rec in enumerate(records):
        edit(rec, i)
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return records


def _turns(rec, i):
    for j, turn in enumerate(rec["turns"]):
        turn["latency_ms"] = 100.0 * (i + 1) + 10.0 * j


def _retrieval(rec, i):
    rec["evaluation_result"]["retrieval_time_ms"] = 100.0 * (i + 1)


@pytest.mark.parametrize("args, edit", [
    ([EXAMPLES / "sdmx" / "suite", "--responses", EXAMPLES / "sdmx" / "responses.jsonl"], _turns),
    ([EXAMPLES / "retrieval" / "questions.csv", "--responses",
      EXAMPLES / "retrieval" / "responses.jsonl", "--k", "3"], _retrieval),
], ids=["selection", "retrieval"])
def test_junit_and_otel_read_the_case_time_the_record_holds(tmp_path, args, edit):
    batch, results = _run(tmp_path, args)
    records = _set_times(results, edit)
    want = {}
    for i, rec in enumerate(records):
        turns = rec.get("turns")
        ms = (sum(100.0 * (i + 1) + 10.0 * j for j in range(len(turns))) if turns
              else 100.0 * (i + 1))
        want[rec["case_id"]] = ms
    assert all(v > 0 for v in want.values())

    from queryeval.report.junit import run_junit

    run = RunResults.open(batch)
    suite = run_junit(run)
    times = {}
    for tc in suite.iter("testcase"):
        times[tc.get("name").split(" ")[0]] = float(tc.get("time"))
    assert times == {cid: round(ms / 1000, 3) for cid, ms in want.items()}
    ET.tostring(suite)

    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from queryeval.integrations.otel import export_run

    exporter = InMemorySpanExporter()
    export_run(batch, exporter=exporter)
    calls = [s for s in exporter.get_finished_spans() if s.name == "queryeval.call"]
    cases = {s.context.span_id: s.attributes["queryeval.case.id"]
             for s in exporter.get_finished_spans() if s.name == "queryeval.case"}
    got = {cases[s.parent.span_id]: (s.end_time - s.start_time) / 1e6 for s in calls}
    assert got == pytest.approx(want, abs=1e-3)
