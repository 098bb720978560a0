"""``--otel``: the run exported over OTLP/HTTP to a loopback receiver started here, which
decodes the protobuf (opentelemetry-proto): a span per case under the run's span, the system
call as its child, a ``gen_ai.evaluation.result`` event per metric per case."""

from __future__ import annotations

import pytest

from helpers.ci_lab import (
    FAILING,
    PLAIN_VALUE,
    REPEATED,
    REPEATED_RATE,
    Receiver,
    by_name,
    evaluation_events,
    make_lab,
    run_cli,
    span_attrs,
)

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return make_lab(tmp_path_factory.mktemp("otel"))


def export(lab, tmp_path, receiver, bot, *extra):
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    res, batch = run_cli(lab, bot, tmp_path / "runs", "--otel", *extra, env=env)
    return res, batch


def test_spans_and_evaluation_events(lab, tmp_path, receiver):
    res, batch = export(lab, tmp_path, receiver, "failing")
    assert res.exit_code == 0, res.output
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}  # the standard variable
    spans = receiver.spans
    (run,) = by_name(spans, "queryeval.run")
    cases, calls = by_name(spans, "queryeval.case"), by_name(spans, "queryeval.call")
    assert len(cases) == 6 and len(calls) == 6 and len(spans) == 13
    assert span_attrs(run.attributes)["queryeval.batch_id"] == batch.stem.removeprefix("batch_")
    assert {s.trace_id for s in spans} == {run.trace_id}
    assert all(c.parent_span_id == run.span_id for c in cases)
    case_ids = {c.span_id: span_attrs(c.attributes)["queryeval.case.id"] for c in cases}
    call_of = {case_ids[c.parent_span_id]: c for c in calls}
    assert set(call_of) == set(FAILING)
    assert call_of["c4"].status.code == 2  # STATUS_CODE_ERROR
    assert "backend down" in call_of["c4"].status.message
    assert span_attrs(call_of["c4"].attributes)["error.type"] == "exception"
    assert call_of["c0"].status.code != 2
    for c in cases:  # the call lies inside its case
        child = call_of[span_attrs(c.attributes)["queryeval.case.id"]]
        assert c.start_time_unix_nano <= child.start_time_unix_nano <= child.end_time_unix_nano \
            <= c.end_time_unix_nano
    events = evaluation_events(spans)
    assert {c: e["all_correct"]["gen_ai.evaluation.score.label"] for c, e in events.items()} \
        == FAILING
    value = {**PLAIN_VALUE}
    assert {c: e["all_correct"]["gen_ai.evaluation.score.value"] for c, e in events.items()} \
        == value
    assert set(events["c0"]) == {"proportion_correct", "all_correct", "correct_subquestions",
                                 "subquestions"}
    assert events["c5"]["all_correct"]["gen_ai.evaluation.explanation"] == \
        'expected {"n": "5"}, got {"n": "x"}'
    assert "gen_ai.evaluation.explanation" not in events["c0"]["all_correct"]
    assert events["c4"]["all_correct"]["error.type"] == "call_failed"


def test_repeats_one_call_span_per_attempt(lab, tmp_path, receiver):
    res, _ = export(lab, tmp_path, receiver, "repeated", "--repeats", "4")
    assert res.exit_code == 0, res.output
    spans = receiver.spans
    assert len(by_name(spans, "queryeval.call")) == 24
    events = evaluation_events(spans)
    assert {c: e["all_correct"]["gen_ai.evaluation.score.label"] for c, e in events.items()} \
        == REPEATED
    assert {c: e["all_correct"]["gen_ai.evaluation.score.value"] for c, e in events.items()} \
        == pytest.approx(REPEATED_RATE)  # all_correct's mean over attempts is the pass rate
    reps = sorted(span_attrs(s.attributes)["queryeval.repeat"] for s in by_name(spans, "queryeval.call"))
    assert reps == sorted(list(range(4)) * 6)


def test_a_collector_that_refuses_is_one_clear_line(lab, tmp_path):
    bad = Receiver(status=400)
    try:
        res, _ = export(lab, tmp_path, bad, "plain")
    finally:
        bad.close()
    assert res.exit_code == 2
    assert "--otel: the collector did not take" in res.output
    assert "Traceback" not in res.output
