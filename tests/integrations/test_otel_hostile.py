"""Huge and control-character texts from a suite in the OpenTelemetry export
(integrations/otel.py): a 2 MB case id and name made one span request over
the 4 MiB collectors usually take; each is cut to TEXT_CHARS, control characters kept as
data (protobuf strings), the run log keeps the whole text."""

from __future__ import annotations

import json

import pytest

from helpers.ci_lab import cli
from queryeval.integrations.otel import TEXT_CHARS, export_run

pytest.importorskip("opentelemetry.sdk")


def test_huge_names_are_cut_in_spans_and_kept_in_the_log(tmp_path):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    big = "n\x00\x1b[31m\n::error::x" + "é" * 2_000_000
    (tmp_path / "bots.py").write_text("def bot(request):\n    return {'response': '@n[1]'}\n")
    with open(tmp_path / "cases.jsonl", "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "c" + big, "name": big, "conversation": [{
            "role": "user", "content": "question?",
            "target": {"answers": [{"name": "n", "value": "1"}]}}]}) + "\n")
    res = cli(["run", tmp_path / "cases.jsonl", "-s", f"python:{tmp_path / 'bots.py'}:bot",
               "-o", tmp_path / "out", "-q", "--no-report"])
    assert res.exit_code == 0, res.output[-2000:]
    batch = next((tmp_path / "out").rglob("batch_*.json"))
    exporter = InMemorySpanExporter()
    assert export_run(batch, exporter=exporter) == 3
    spans = exporter.get_finished_spans()
    for span in spans:
        for key, value in span_attrs_of(span).items():
            assert not isinstance(value, str) or len(value) <= TEXT_CHARS, key
    (case,) = [s for s in spans if s.name == "queryeval.case"]
    assert case.attributes["queryeval.case.id"] == ("c" + big)[:TEXT_CHARS - 1] + "…"
    assert case.attributes["queryeval.case.name"].startswith("n\x00\x1b[31m\n::error::x")
    record = json.loads(next((tmp_path / "out").rglob("results_*.jsonl")).read_text())
    assert record["case_id"] == "c" + big  # the log keeps the whole id


def span_attrs_of(span) -> dict:
    return {**dict(span.attributes), **dict(span.resource.attributes)}



@pytest.mark.parametrize("latency", ["x", 1e308, -5, None, [1]])
def test_a_damaged_latency_exports_as_zero_not_a_crash(tmp_path, latency):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    (tmp_path / "bots.py").write_text("def bot(request):\n    return {'response': '@n[1]'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "conversation": [{
        "role": "user", "content": "q?", "target": {"answers": [{"name": "n", "value": "1"}]}}]})
        + "\n")
    res = cli(["run", tmp_path / "cases.jsonl", "-s", f"python:{tmp_path / 'bots.py'}:bot",
               "-o", tmp_path / "out", "-q", "--no-report"])
    assert res.exit_code == 0, res.output[-2000:]
    results = next((tmp_path / "out").rglob("results_*.jsonl"))
    record = json.loads(results.read_text())
    record["latency_ms"] = latency
    results.write_text(json.dumps(record) + "\n")
    exporter = InMemorySpanExporter()
    assert export_run(next((tmp_path / "out").rglob("batch_*.json")), exporter=exporter) == 3
    (call,) = [s for s in exporter.get_finished_spans() if s.name == "queryeval.call"]
    assert call.end_time == call.start_time


def test_mlflow_leaves_out_a_figure_no_float_holds():
    from queryeval.integrations.mlflow import _numbers

    # float(10**400) raised OverflowError out of log_run
    assert _numbers("", {"a": 10**400, "b": 0.5, "c": float("nan"), "d": None, "e": 3}) == {
        "b": 0.5, "e": 3.0}
