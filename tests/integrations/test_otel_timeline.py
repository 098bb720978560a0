"""``--otel`` on the real timeline: each record ends with ``started_at`` (when its first call
started, epoch seconds to the microsecond) and the export places its spans there, so cases run
concurrently overlap in the trace; a log without it (or with a damaged one) keeps the old
layout (every case at the run's start, its calls one after another)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from helpers.ci_lab import Receiver, by_name, cli, make_lab, run_cli, span_attrs
from queryeval.integrations.otel import export_run

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

SLEEPY = '''
import re, time

def sleepy(request):
    time.sleep(0.2)
    i = int(re.search(r"question (\\d+)\\?", str(request)).group(1))
    return {"response": f"@n[{i}]"}

def plain(request):
    i = int(re.search(r"question (\\d+)\\?", str(request)).group(1))
    return {"response": f"@n[{i}]"}
'''


def _lab(tmp_path, n):
    lab = make_lab(tmp_path / "lab", n)
    (lab / "bots.py").write_text(SLEEPY, encoding="utf-8")
    return lab


def _records(batch) -> list[dict]:
    results = batch.with_name(batch.name.replace("batch_", "results_")).with_suffix(".jsonl")
    return [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]


def _epoch_ns(seconds: float) -> int:
    """The JSON number, exactly, in nanoseconds (independent of the exporter's float maths)."""
    return int(Decimal(repr(seconds)) * 10**9)


def _most_in_flight(intervals: list[tuple[int, int]]) -> int:
    """How many intervals [start, end) hold one instant at most (an end before a start)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals],
                    key=lambda ev: (ev[0], ev[1]))
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def test_concurrent_cases_overlap_and_start_at_their_records_start(tmp_path):
    lab = _lab(tmp_path, 8)
    receiver = Receiver()
    try:
        res, batch = run_cli(lab, "sleepy", tmp_path / "runs", "--otel", "-c", "4",
                             env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        spans = receiver.spans
    finally:
        receiver.close()
    assert res.exit_code == 0, res.output
    records = {r["case_id"]: r for r in _records(batch)}
    assert len(records) == 8
    for r in records.values():  # the new field, last, a wall-clock time to the microsecond
        assert list(r)[-1] == "started_at"
        assert isinstance(r["started_at"], float)
        assert round(r["started_at"], 6) == r["started_at"]
    (run,) = by_name(spans, "queryeval.run")
    cases = by_name(spans, "queryeval.case")
    calls = {c.parent_span_id: c for c in by_name(spans, "queryeval.call")}
    assert len(cases) == 8 and len(calls) == 8
    durations = 0
    intervals = []
    for case in cases:
        rec = records[span_attrs(case.attributes)["queryeval.case.id"]]
        start = _epoch_ns(rec["started_at"])
        assert case.start_time_unix_nano == start  # to the nanosecond
        call = calls[case.span_id]
        assert call.start_time_unix_nano == start
        assert call.end_time_unix_nano == case.end_time_unix_nano == start + int(
            rec["latency_ms"] * 1e6)
        assert rec["latency_ms"] >= 200  # the bot sleeps 0.2 s
        assert run.start_time_unix_nano <= start and case.end_time_unix_nano <= run.end_time_unix_nano
        durations += case.end_time_unix_nano - start
        intervals.append((start, case.end_time_unix_nano))
    starts = [s for s, _ in intervals]
    assert max(starts) - min(starts) < durations  # they overlap: not one after another
    # four workers: cases 5..8 wait for one of the first four (>= 0.2 s each), and never
    # more than four calls are in flight (the old export put all eight at the run's start)
    assert max(starts) - min(starts) >= 200_000_000
    assert 2 <= _most_in_flight(intervals) <= 4
    assert run.start_time_unix_nano == min(min(starts), run.start_time_unix_nano)
    assert run.end_time_unix_nano >= max(e for _, e in intervals)


def test_repeats_each_call_at_its_attempts_start(tmp_path):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    lab = _lab(tmp_path, 3)
    res, batch = run_cli(lab, "plain", tmp_path / "runs", "--repeats", "3")
    assert res.exit_code == 0, res.output
    records = {(r["case_id"], r["repeat"]): r for r in _records(batch)}
    assert len(records) == 9 and all(list(r)[-1] == "started_at" for r in records.values())
    exporter = InMemorySpanExporter()
    assert export_run(batch, exporter=exporter) == 1 + 3 + 9
    spans = exporter.get_finished_spans()
    cases = {s.context.span_id: s for s in spans if s.name == "queryeval.case"}
    for call in (s for s in spans if s.name == "queryeval.call"):
        case = cases[call.parent.span_id]
        rec = records[(case.attributes["queryeval.case.id"], call.attributes["queryeval.repeat"])]
        assert call.start_time == _epoch_ns(rec["started_at"])
        assert call.end_time == call.start_time + int(rec["latency_ms"] * 1e6)
        assert case.start_time <= call.start_time <= call.end_time <= case.end_time
    for case in cases.values():  # the case: first attempt's start .. last attempt's end
        mine = [r for (cid, _), r in records.items() if cid == case.attributes["queryeval.case.id"]]
        assert case.start_time == min(_epoch_ns(r["started_at"]) for r in mine)


@pytest.mark.parametrize("started_at", ["drop", "x", None, True, -5, 1e300, "nan", [1]])
def test_a_log_without_a_usable_start_keeps_the_run_start_layout(tmp_path, started_at):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    lab = _lab(tmp_path, 3)
    res, batch = run_cli(lab, "plain", tmp_path / "runs", "--repeats", "2")
    assert res.exit_code == 0, res.output
    results = batch.with_name(batch.name.replace("batch_", "results_")).with_suffix(".jsonl")
    lines = []
    for rec in _records(batch):  # an old log (no field) or a damaged one
        if started_at == "drop":
            rec.pop("started_at", None)
        else:
            rec["started_at"] = float("nan") if started_at == "nan" else started_at
        lines.append(json.dumps(rec))
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    exporter = InMemorySpanExporter()
    assert export_run(batch, exporter=exporter) == 1 + 3 + 6
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "queryeval.run"]
    latency = {(r["case_id"], r["repeat"]): int(r["latency_ms"] * 1e6) for r in _records(batch)}
    cases = {s.context.span_id: s for s in spans if s.name == "queryeval.case"}
    assert all(c.start_time == run.start_time for c in cases.values())
    for case in cases.values():  # its attempts one after another from the run's start
        cid = case.attributes["queryeval.case.id"]
        calls = sorted((s for s in spans if s.name == "queryeval.call"
                        and s.parent.span_id == case.context.span_id),
                       key=lambda s: s.attributes["queryeval.repeat"])
        at = run.start_time
        for call in calls:
            assert call.start_time == at
            at += latency[(cid, call.attributes["queryeval.repeat"])]
            assert call.end_time == at
        assert case.end_time == at


def test_a_resumed_run_keeps_the_start_of_the_cases_it_did_not_run_again(tmp_path):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    lab = _lab(tmp_path, 3)
    state = tmp_path / "up"
    (lab / "bots.py").write_text(SLEEPY + (
        "\ndef flaky(request):\n"
        "    if 'question 1?' in str(request) and not __import__('pathlib').Path(%r).exists():\n"
        "        raise RuntimeError('down')\n"
        "    return plain(request)\n" % str(state)), encoding="utf-8")
    res, batch = run_cli(lab, "flaky", tmp_path / "runs")
    assert res.exit_code == 0, res.output
    before = {r["case_id"]: r for r in _records(batch)}
    assert before["c1"]["error"] is not None
    state.touch()
    res = cli(["run", "--resume", batch, "--retry-errors", "-q"])
    assert res.exit_code == 0, res.output
    after = {r["case_id"]: r for r in _records(batch)}  # the last line of a case wins
    assert after["c1"]["error"] is None and after["c1"]["started_at"] > before["c1"]["started_at"]
    assert [after[c]["started_at"] for c in ("c0", "c2")] == [
        before[c]["started_at"] for c in ("c0", "c2")]
    exporter = InMemorySpanExporter()
    assert export_run(batch, exporter=exporter) == 1 + 3 + 3
    for case in (s for s in exporter.get_finished_spans() if s.name == "queryeval.case"):
        assert case.start_time == _epoch_ns(after[case.attributes["queryeval.case.id"]]["started_at"])
