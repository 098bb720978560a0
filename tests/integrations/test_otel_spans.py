"""A newcomer's audit of ``--otel``: the run was exported span by span (a
SimpleSpanProcessor: one OTLP request per span, each retried with backoff by the SDK), so a
collector that is down held the step for minutes (8 free-form cases, port closed: 2 min 3 s,
17 requests each retried, ~40 SDK log lines before the one error line the docs promise).
The spans now go in batches, and an unreachable collector stops the export after the first
failed batch. Failed before the fix (14 requests, SDK lines on stderr)."""

from __future__ import annotations

import pytest

from helpers.ci_lab import N, Receiver, make_lab, run_cli

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return make_lab(tmp_path_factory.mktemp("otel_nc"))


def test_spans_go_in_one_request(lab, tmp_path):
    ok = Receiver()
    try:
        res, _ = run_cli(lab, "plain", tmp_path / "runs", "--otel",
                         env={"OTEL_EXPORTER_OTLP_ENDPOINT": ok.endpoint})
    finally:
        ok.close()
    assert res.exit_code == 0, res.output
    assert len(ok.spans) == 1 + 2 * N  # the run, a case and a call per case
    assert ok.paths == ["/v1/traces"]


def test_a_refusing_collector_gets_one_request_and_one_line(lab, tmp_path):
    bad = Receiver(status=400)
    try:
        res, _ = run_cli(lab, "plain", tmp_path / "runs", "--otel",
                         env={"OTEL_EXPORTER_OTLP_ENDPOINT": bad.endpoint})
    finally:
        bad.close()
    assert res.exit_code == 2
    assert bad.paths == ["/v1/traces"]
    assert res.stderr.strip().splitlines() == [
        f"error: --otel: the collector did not take {1 + 2 * N} of {1 + 2 * N} spans "
        "(check OTEL_EXPORTER_OTLP_ENDPOINT)"]
