"""``--otel``: a finished run exported as OpenTelemetry traces through opentelemetry-sdk's
OTLP/HTTP exporter (endpoint, headers, timeout from the standard ``OTEL_EXPORTER_OTLP_*``
variables, e.g. ``OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318``).

One trace per run: a ``queryeval.run`` span, under it one ``queryeval.case`` span per case,
under that one ``queryeval.call`` span per attempt (the system call; status ERROR with the
record's error for a failed call). The case span carries one ``gen_ai.evaluation.result``
event per metric, attributes per the GenAI semantic conventions:
``gen_ai.evaluation.name`` (the metric), ``gen_ai.evaluation.score.value`` (the case's
figure: the run model's mean over its attempts), ``gen_ai.evaluation.score.label`` (the
case's verdict under the task's pass rule: pass, fail, error, flaky),
``gen_ai.evaluation.explanation`` (for a case that did not pass: expected vs got, the call's
error or the pass rate) and ``error.type`` for a failed call.

The export reads the run log after the run (one source of truth): each record ends with
``started_at``, the wall clock (epoch seconds, to the microsecond) when its first call
started, and holds ``latency_ms``, its calls' duration. A call span starts at its record's
``started_at`` and lasts ``latency_ms``; a case span runs from its first attempt's start to
its last attempt's end (one attempt per case without ``--repeats``), so concurrent cases
overlap as they did; the run span covers them all (and the batch's timestamp .. completed_at).
A record without a usable ``started_at`` (a log written before it was recorded, a damaged
file) falls back to the old layout: its call starts at the run's start, or right after the
case's previous attempt.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

from queryeval.errors import ConfigError
from queryeval.run.results import RunResults, record_latency_ms

EVENT = "gen_ai.evaluation.result"
TEXT_CHARS = 1024
"""A label, case id or case name is cut to this many characters in an attribute (a suite's
2 MB case name made a request collectors refuse: 4 MiB is the usual cap; the run log keeps
the whole text)."""


def _cut(text: object) -> str:
    s = str(text)
    return s if len(s) <= TEXT_CHARS else s[:TEXT_CHARS - 1] + "…"


def _ns(iso: str | None, default: Any) -> Any:
    if not iso:
        return default
    try:
        return int(dt.datetime.fromisoformat(iso).timestamp() * 1e9)
    except ValueError:
        return default


def _latency_ns(record: dict) -> int:
    """A call's ``latency_ms`` in nanoseconds; 0 when the log holds no finite number >= 0
    (below 2**62 ns) there (a damaged or hand-edited run file: ``"x"``, ``1e999``)."""
    ns = record_latency_ms(record) * 1e6  # finite and >= 0, or 0.0
    return int(ns) if ns < _MAX_NS else 0


_MAX_NS = 2**62
"""Times past this (year 2116) are damage: an OTLP time is a 64-bit count of nanoseconds."""


def _started_ns(record: dict) -> int | None:
    """A record's ``started_at`` in nanoseconds since the epoch, exact to the microsecond it
    was rounded to (``round(v * 1e6)`` is exact below 2**53 µs; ``v * 1e9`` is not), or None
    when the log holds no finite number in range there (an old log, a damaged file)."""
    value = record.get("started_at")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or not 0 <= value * 1e9 < _MAX_NS:
        return None
    return round(value * 1e6) * 1000


def _timeline(records: Any, attempts: Sequence[Any], origin: int) -> list[tuple[int, int]]:
    """(start, end) in nanoseconds of each attempt's calls: from its record's ``started_at``
    for its ``latency_ms``; without a usable ``started_at``, right after the previous attempt
    (the first at ``origin``, the run's start)."""
    out, at = [], origin
    for a in attempts:
        record = records[a.index]
        start = _started_ns(record)
        start = at if start is None else start
        at = start + _latency_ns(record)
        out.append((start, at))
    return out


BATCH = 512
"""Spans per export request (the SDK's BatchSpanProcessor default batch size)."""


def _send(exporter: Any, spans: Sequence[Any]) -> int:
    """Export ``spans`` in batches of :data:`BATCH`; return how many the collector did not
    take. The first failed batch stops the export (the exporter already retried it with
    backoff: a collector that is down must not hold the step once per batch), and the SDK's
    own log lines are held back: the caller reports the failure in one line."""
    import logging

    from opentelemetry.sdk.trace.export import SpanExportResult

    log = logging.getLogger("opentelemetry")
    level, log.level = log.level, logging.CRITICAL + 1
    try:
        for i in range(0, len(spans), BATCH):
            if exporter.export(spans[i:i + BATCH]) != SpanExportResult.SUCCESS:
                return len(spans) - i
        return 0
    finally:
        log.setLevel(level)
        exporter.shutdown()


def export_run(run: RunResults | Any, *, exporter: Any = None, endpoint: str | None = None) -> int:
    """Export ``run`` (a :class:`RunResults`, a ``qe.Run`` or a path) as one trace; return the
    number of spans sent. ``exporter``: any SpanExporter (default: OTLP/HTTP, configured by
    the ``OTEL_EXPORTER_OTLP_*`` variables, or ``endpoint`` for the traces URL). Raises
    ConfigError (one line) when the collector did not take the spans."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.trace import Status, StatusCode, set_span_in_context
    except ImportError:
        raise ConfigError("--otel needs the otel extra: pip install 'queryeval[otel]'") from None
    from queryeval.report.junit import case_outcome, error_text

    results = RunResults.open(getattr(run, "results", run))
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    finished = InMemorySpanExporter()  # spans are built first, then sent in batches
    provider = TracerProvider(resource=Resource.create({
        "service.name": "queryeval", "queryeval.run.label": _cut(results.label)}))
    provider.add_span_processor(SimpleSpanProcessor(finished))
    tracer = provider.get_tracer("queryeval")
    records = results.records
    stamp = _ns(results.batch.get("timestamp"), None)
    origin = stamp if stamp is not None else 0
    timelines = [_timeline(records, case.attempts, origin) for case in results.cases]
    firsts = [min(t[0] for t in line) for line in timelines if line]
    start = min(firsts + ([stamp] if stamp is not None else []), default=origin)
    task = results.task_name or ""
    spans = 0
    root = tracer.start_span("queryeval.run", start_time=start, attributes={
        "queryeval.batch_id": results.batch_id, "queryeval.task": task,
        "queryeval.label": _cut(results.label), "queryeval.cases": len(results.cases),
        "queryeval.repeats": results.repeats})
    end_all = start
    for case, line in zip(results.cases, timelines, strict=True):
        case_start = min((t[0] for t in line), default=origin)
        end = max((t[1] for t in line), default=case_start)
        verdict, message, _ = case_outcome(records, case)
        span = tracer.start_span("queryeval.case", context=set_span_in_context(root),
                                 start_time=case_start, attributes={
                                     "queryeval.case.id": _cut(case.case_id),
                                     "queryeval.case.name": _cut(case.name or ""),
                                     "queryeval.case.verdict": verdict,
                                     "queryeval.case.attempts": len(case.attempts),
                                     "queryeval.case.passes": case.passes,
                                     "queryeval.case.pass_rate": case.pass_rate})
        for a, (at, call_end) in zip(case.attempts, line, strict=True):
            rec = records[a.index]
            call = tracer.start_span("queryeval.call", context=set_span_in_context(span),
                                     start_time=at, attributes={
                                         "queryeval.repeat": a.repeat,
                                         "queryeval.call.status": a.status,
                                         "queryeval.call.attempts": int(rec.get("attempts") or 1)})
            if a.status == "error":
                kinds = rec.get("error_kinds") or ["error"]
                call.set_attribute("error.type", str(kinds[0]))
                call.set_status(Status(StatusCode.ERROR, error_text(rec)))
            call.end(end_time=call_end)
            spans += 1
        for metric, value in case.means.items():
            attrs: dict[str, Any] = {"gen_ai.evaluation.name": metric,
                                     "gen_ai.evaluation.score.value": float(value),
                                     "gen_ai.evaluation.score.label": verdict}
            if message:
                attrs["gen_ai.evaluation.explanation"] = message
            if case.errored:
                attrs["error.type"] = "call_failed"
            span.add_event(EVENT, attributes=attrs, timestamp=end)
        if verdict in ("fail", "error", "flaky"):
            span.set_status(Status(StatusCode.ERROR, message))
        span.end(end_time=end)
        spans += 1
        end_all = max(end_all, end)
    root.end(end_time=max(end_all, _ns(results.batch.get("completed_at"), end_all)))
    spans += 1
    provider.force_flush()
    failed = _send(exporter, list(finished.get_finished_spans()))
    provider.shutdown()
    if failed:
        raise ConfigError(f"--otel: the collector did not take {failed} of {spans} "
                          "spans (check OTEL_EXPORTER_OTLP_ENDPOINT)")
    return spans
