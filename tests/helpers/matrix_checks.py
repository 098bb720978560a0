"""The shared half of the cross-feature matrix: every consumer of a run, checked against
hand-computed per-case values. ``tests/matrix/test_matrix.py`` holds the closed-form matrix (every run
kind × every consumer); each later feature (a task kind, a reader, an exporter) adds its own
``tests/test_matrix_<feature>.py`` that builds its runs and calls these checks, so a new
consumer added here is held to every feature at once.

Usage::

    from matrix_checks import check_consumers, check_compare
    check_consumers(run, "recall@5", {"q1": 1.0, "q2": 0.5})
    check_compare(run_a, run_b, "recall@5", per_case_a, per_case_b)

Runs in the shared run kinds come from :func:`build_kind` (plain, repeats, cached, resumed
after a kill, with errors scored or skipped), so every matrix file builds them one way.
"""

from __future__ import annotations

import csv
import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import queryeval as qe
from queryeval.cli.app import app
from queryeval.errors import GateFailure

KINDS_BUILT = ("plain", "repeats", "cached", "resumed", "errors", "skip_errors", "repeats_skip")


def run_file(run: qe.Run, prefix: str, suffix: str) -> Path:
    return run.folder / f"{prefix}_{run.batch_id}{suffix}"


def write_lab(root: Path, bots: str, targets: dict[str, dict]) -> Path:
    """A matrix lab in ``root``: ``bots.py`` and ``cases.jsonl``, where the i-th case (id ->
    target, in order) asks "question i?" in one user turn."""
    (root / "bots.py").write_text(bots)
    with open(root / "cases.jsonl", "w") as fh:
        for i, (cid, target) in enumerate(targets.items()):
            fh.write(json.dumps({"id": cid, "conversation": [{
                "role": "user", "content": f"question {i}?", "target": target}]}) + "\n")
    return root


def built_once(build: Callable[[str], qe.Run]) -> Callable[[str], qe.Run]:
    """``build(kind)`` with each kind built once (a module fixture's runs)."""
    cache: dict[str, qe.Run] = {}

    def get(kind: str) -> qe.Run:
        if kind not in cache:
            cache[kind] = build(kind)
        return cache[kind]

    return get


def simulate_kill(log: Path, keep: int) -> Path:
    """Leave a finished run's log as SIGKILL would: ``keep`` whole results lines and a
    half-written one, no metrics, CSV or reports, the batch still "running". Returns the
    results JSONL."""
    jsonl = log.with_name(log.name.replace("batch_", "results_").replace(".json", ".jsonl"))
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join(lines[:keep]) + '\n{"case_id": "half-wr')
    for p in log.parent.iterdir():
        if p.name.startswith(("metrics_", "report_")) or p.suffix == ".csv":
            p.unlink()
    batch = json.loads(log.read_text())
    batch["status"] = "running"
    log.write_text(json.dumps(batch))
    return jsonl


def resume(log: Path) -> qe.Run:
    """``queryeval run --resume LOG`` (must exit 0), then the run it finished."""
    res = CliRunner().invoke(app, ["run", "--resume", str(log), "-q"])
    assert res.exit_code == 0, res.output
    return qe.load(log)


def build_kind(kind: str, cases: Any, bots: Path, runs: Path, *, n: int, keep: int = 3,
               repeats: int = 4, plain: str = "plain", cache_dir: Path | None = None,
               on_warm: Callable[[], Any] | None = None, **options: Any) -> qe.Run:
    """A run of ``cases`` in one of :data:`KINDS_BUILT`, written to ``runs/KIND`` with reports.

    The system is a function of the Python file ``bots``: ``plain`` (default name) for plain,
    cached and resumed, ``repeated`` for repeats (``repeats`` attempts), ``failing`` for
    errors and skip_errors, ``repeated_failing`` for repeats_skip (``repeats`` attempts under
    ``on_error=skip``, some of them failing: their cases are left out of every mean). ``n`` is the number of results lines of a plain run: the cached
    run must take all ``n`` calls from the cache (warmed by a run into ``runs/warm``; then
    ``on_warm()`` is called), the resumed run (cut to ``keep`` lines) must end with ``n``.
    ``options`` go to every ``qe.evaluate`` call (a judge, ``test_suite``, ...)."""
    spec = lambda fn: f"python:{bots}:{fn}"  # noqa: E731
    common = {"out": runs / kind, "reports": True, "retries": 0, "backoff": 0.0, "name": kind,
              **options}
    if kind == "plain":
        return qe.evaluate(cases, system=spec(plain), **common)
    if kind == "repeats":
        return qe.evaluate(cases, system=spec("repeated"), repeats=repeats, **common)
    if kind == "cached":
        opts = {**common, "cache": True, "cache_dir": cache_dir or runs.parent / "cache",
                "system_version": "v1"}
        qe.evaluate(cases, system=spec(plain), **{**opts, "out": runs / "warm"})
        if on_warm is not None:
            on_warm()
        run = qe.evaluate(cases, system=spec(plain), **opts)
        assert run.metrics["cache"]["hits"] == n  # every call served from the cache
        return run
    if kind == "resumed":
        log = qe.evaluate(cases, system=spec(plain), **common).path
        jsonl = simulate_kill(log, keep)
        run = resume(log)
        assert len(jsonl.read_text().splitlines()) == n
        return run
    if kind == "errors":
        return qe.evaluate(cases, system=spec("failing"), **common)
    if kind == "skip_errors":
        return qe.evaluate(cases, system=spec("failing"), on_error="skip", **common)
    if kind == "repeats_skip":
        return qe.evaluate(cases, system=spec("repeated_failing"), repeats=repeats,
                           on_error="skip", **common)
    raise AssertionError(kind)


def per_case_mean(rows) -> dict[str, float]:
    """Mean per case id of (case id, value) rows (attempt rows of a repeated run)."""
    acc: dict[str, list[float]] = {}
    for cid, v in rows:
        acc.setdefault(cid, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in acc.items()}


def check_consumers(run: qe.Run, metric: str, per_case: dict[str, float | None], *,
                    overall: str | None = None, counted: list[str] | None = None,
                    viewer_root: Path | None = None, csv_column: str | None = None,
                    csv_file: bool = True) -> float:
    """Assert that the run model, ``to_pandas``, the metrics JSON, the results CSV, the HTML
    report (when written), the gates and the viewer API all give ``per_case`` for ``metric``
    (None: the case has no value, a blank CSV cell) and its mean over the ``counted`` cases
    (default: every case) as the overall figure
    ``overall`` (default: ``metric``). ``csv_file=False`` for a task whose results CSV keeps a
    seed's own layout (retrieval: one row per retrieved chunk). Returns that mean."""
    counted = list(per_case) if counted is None else counted
    overall = overall or metric
    mean = sum(per_case[c] for c in counted) / len(counted)
    # the run model and pandas
    assert run.results.vector(metric) == pytest.approx({c: per_case[c] for c in counted})
    # a case expected as None has no value on any surface (pandas: NaN)
    assert ({k: None if v != v else v
             for k, v in run.to_pandas().groupby("id")[metric].mean().to_dict().items()}
            == pytest.approx(per_case))
    # metrics JSON and the Run's overall figures
    doc = json.loads(run_file(run, "metrics", ".json").read_text())
    assert doc["overall_metrics"][overall] == pytest.approx(mean)
    assert run.overall[overall] == pytest.approx(mean)
    # the results CSV (one row per attempt)
    if csv_file:
        with open(run_file(run, "results", ".csv"), newline="") as fh:
            rows = [(r["case_id"], r[csv_column or metric])
                    for r in csv.DictReader(fh) if r["case_id"] in per_case]
        assert all(v == "" for c, v in rows if per_case[c] is None)  # a blank cell
        assert per_case_mean([(c, v or 0.0) for c, v in rows if per_case[c] is not None]) \
            == pytest.approx({c: v for c, v in per_case.items() if v is not None})
        check_cluster_column(run)
    # the HTML report, when the run wrote one
    page = run_file(run, "report", ".html")
    if page.exists():
        m = re.search(rf'<td>{re.escape(overall)}</td><td class="num" data-v="([^"]+)">',
                      page.read_text())
        assert m and float(m[1]) == pytest.approx(mean), f"no {overall} row in the HTML"
        # the mean of the per-case values has their interval beside it (a task maps an
        # overall name to its per-case metric in ci_sources)
        ci = re.search(rf'<td>{re.escape(overall)}</td><td class="num" data-v="[^"]+">[^<]*</td>'
                       r'<td class="num ci">([^<]*)</td>', page.read_text())
        if len(set(counted)) >= 2:
            assert ci and ci[1].startswith("["), f"no interval beside {overall} in the HTML"
    # the typed run log: batch, metrics and every record by its task kind's model
    check_typed_log(run, metric, overall, mean)
    # gates
    run.check_gates({overall: mean - 1e-9})
    with pytest.raises(GateFailure, match=re.escape(overall)):
        run.check_gates({overall: mean + 1e-6})
    # the viewer's API
    if viewer_root is not None:
        pytest.importorskip("starlette")
        from starlette.testclient import TestClient

        from queryeval.viewer.server import create_app

        client = TestClient(create_app(viewer_root, resamples=200), base_url="http://127.0.0.1")
        doc = client.get(f"/api/runs/{run.batch_id}").json()
        assert doc["metrics"][overall] == pytest.approx(mean)
        if len(set(counted)) >= 2:  # the same interval as the HTML's
            rows = {r["metric"]: r for r in doc["overall_rows"]}
            assert rows[overall]["low"] is not None, f"no interval beside {overall} in the viewer"
        cases = client.get(f"/api/runs/{run.batch_id}/cases?limit=1000").json()["rows"]
        got = {r["case_id"]: r["metrics"].get(metric) for r in cases if r["case_id"] in per_case}
        assert got == pytest.approx(per_case)
        # the viewer's charts: the per-case distribution draws the counted cases with a
        # value (a case --on-error skip leaves out of the figures is not drawn either)
        dist = next((c["svg"] for c in doc["charts"] if c["id"] == "distribution"), "")
        row = chart_row(dist, metric)
        if row is not None:
            assert f'class="val">n={sum(per_case[c] is not None for c in counted)}<' in row
    return mean


def chart_row(svg: str, label: str) -> str | None:
    """The SVG text of the row of a chart (forest plot, strip chart) whose label or tooltip
    is ``label`` (a tooltip ``label: …`` or ``label (the runs' names): …``); None when the
    chart has no such row."""
    want = html.escape(label, quote=True)
    for row in svg.split('<g class="row"')[1:]:
        title = re.search(r"<title>([^<]*)</title>", row)
        if title and (title[1] == want or title[1].startswith((want + ": ", want + " ("))):
            return row
    return None


def check_cluster_column(run: qe.Run) -> None:
    """The results CSV's last column is ``cluster``: on every row (each attempt, each of a
    case's rows) the cluster its record carries, blank for a case that is its own."""
    want = {str(r["case_id"]): r.get("cluster") or "" for r in run.records}
    with open(run_file(run, "results", ".csv"), newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames and reader.fieldnames[-1] == "cluster", reader.fieldnames
        rows = [(r["case_id"], r["cluster"]) for r in reader]
    assert rows and {c for c, _ in rows} == set(want)
    assert [v for _, v in rows] == [want[c] for c, _ in rows]


def check_typed_log(run: qe.Run, metric: str, overall: str, mean: float) -> None:
    """The run's files read through the typed run log (queryeval.run.logmodel): the batch
    and metrics validate, the metrics' ``overall`` figure is ``mean``, and every record
    validates by its task kind's model with the scores the file holds (``metric`` where a
    record's scores have it)."""
    from queryeval.run import logmodel
    from queryeval.run.log import RunLog, read_metrics_file

    log = RunLog.open(run_file(run, "batch", ".json"))
    assert log.typed_batch.status == "complete" and log.typed_batch.batch_id == run.batch_id
    metrics = read_metrics_file(run_file(run, "metrics", ".json"))
    assert metrics.overall_metrics[overall] == pytest.approx(mean)
    assert metrics.calls is not None and metrics.calls.total >= metrics.calls.failed >= 0
    raw = log.read_records()
    typed = log.typed_records()
    model = logmodel.record_model(log.typed_batch.task)
    assert [type(r) for r in typed] == [model] * len(raw)
    assert [(r.case_id, r.repeat, r.status, r.scores) for r in typed] == [
        (d["case_id"], d.get("repeat"), d["status"], d.get("scores")) for d in raw]
    assert [(r.scores or {}).get(metric) for r in typed] == [(d.get("scores") or {}).get(metric)
                                                           for d in raw]


def check_one_population(run: qe.Run, metric: str, *, overall: str | None = None) -> float:
    """The run's counted per-case values of ``metric`` (the run model's population: every case
    but those ``on_error=skip`` leaves out) are the population of every surface: the metrics
    JSON's overall figure (``overall``, default ``metric``) is their mean, the HTML report's
    Overall row shows that mean WITH its interval over as many cases, and a run with repeats
    has its ``<metric>_mean`` over the same cases. Returns the mean."""
    values = run.results.vector(metric)
    assert values, f"no counted case has {metric}"
    mean = sum(values.values()) / len(values)
    overall = overall or metric
    doc = json.loads(run_file(run, "metrics", ".json").read_text())
    assert doc["overall_metrics"][overall] == pytest.approx(mean)
    rep = doc.get("repeats")
    if rep is not None:
        assert rep["cases"] == len(run.results.counted())
        assert rep["overall"][f"{metric}_mean"]["mean"] == pytest.approx(mean)
        assert rep["overall"][f"{metric}_mean"]["n"] == len(values)
    page = run_file(run, "report", ".html")
    if page.exists():
        m = re.search(rf'<td>{re.escape(overall)}</td><td class="num" data-v="([^"]+)">[^<]*</td>'
                      r'<td class="num ci">([^<]*)</td><td class="num">(\d*)</td>', page.read_text())
        assert m, f"no {overall} row in the HTML"
        assert float(m[1]) == pytest.approx(mean)
        if len(set(values.values())) > 1:  # a constant column's interval is its value
            low, high = (float(x) for x in m[2].strip("[]").split(", "))
            assert low <= mean <= high and int(m[3]) == len(values)
    return mean


def check_corrected(run: qe.Run, figure: str, want: float, *, raw: float,
                    viewer_root: Path | None = None) -> None:
    """A judged run's ``figure`` corrected for the judge's known errors (tasks/judging.py:
    ``<figure>_judge_corrected``) is ``want`` beside the raw ``raw`` on every surface that
    shows it: the metrics JSON and the Run's overall figures (right after ``figure``, with an
    interval around it), the HTML report's Overall row with that interval, the viewer's
    overall rows and API, and the console summary's line."""
    from queryeval.report.html import render_report
    from queryeval.run.results import RunResults
    from queryeval.tasks.judging import corrected_key
    from queryeval.viewer.results import run_figures

    key = corrected_key(figure)
    doc = json.loads(run_file(run, "metrics", ".json").read_text())["overall_metrics"]
    for overall in (doc, run.overall):
        assert (overall[figure], overall[key]) == (pytest.approx(raw), pytest.approx(want))
        assert overall[f"{key}_ci_low"] <= overall[key] <= overall[f"{key}_ci_high"]
        assert list(overall).index(key) == list(overall).index(figure) + 1
    low, high = doc[f"{key}_ci_low"], doc[f"{key}_ci_high"]
    m = re.search(rf'<td>{re.escape(key)}</td><td class="num" data-v="([^"]+)">[^<]*</td>'
                  r'<td class="num ci">([^<]*)</td>', render_report(run.path, resamples=200))
    assert m and float(m[1]) == pytest.approx(want), f"no {key} row in the HTML"
    assert m[2] == f"[{low:.4f}, {high:.4f}]"
    rows = {r["metric"]: r for r in run_figures(RunResults.open(run.path), resamples=200)["overall_rows"]}
    assert (rows[key]["low"], rows[key]["high"]) == (pytest.approx(low), pytest.approx(high))
    assert f"{key}_ci_low" not in rows
    if viewer_root is not None:
        pytest.importorskip("starlette")
        from starlette.testclient import TestClient

        from queryeval.viewer.server import create_app

        client = TestClient(create_app(viewer_root, resamples=200), base_url="http://127.0.0.1")
        assert client.get(f"/api/runs/{run.batch_id}").json()["metrics"][key] \
            == pytest.approx(want)
    lines = [getattr(x, "plain", "") for x in run.summary()]
    what = "pass rate" if figure == "pass_rate" else figure
    assert any(line.startswith(f"{what} corrected for the judge's known errors (Rogan-Gladen, "
                               f"from its judge-check): {want:.4f} [{low:.4f}, {high:.4f}] "
                               f"(raw {raw:.4f})") for line in lines), lines


def check_compare(run_a: qe.Run, run_b: qe.Run, metric: str, per_case_a: dict[str, float],
                  per_case_b: dict[str, float], tmp_path: Path) -> None:
    """The two-run compare (object, JSON, console) and the N-way compare (JSON) give the
    means of both runs over their common cases."""
    ids = [c for c in per_case_a if c in per_case_b]
    mean_a = sum(per_case_a[c] for c in ids) / len(ids)
    mean_b = sum(per_case_b[c] for c in ids) / len(ids)
    comp = qe.compare(run_a, run_b, metrics=[metric], resamples=200)
    m = comp.metric(metric)
    assert (m.n, m.mean_a, m.mean_b) == (len(ids), pytest.approx(mean_a), pytest.approx(mean_b))
    doc = json.loads(comp.to_json(tmp_path / "compare.json").read_text())
    row = next(r for r in doc["metrics"] if r["metric"] == metric)
    assert (row["n"], row["mean_a"], row["mean_b"]) == (len(ids), pytest.approx(mean_a),
                                                       pytest.approx(mean_b))
    multi = qe.compare(run_a, run_b, pairs="all", resamples=200)
    assert multi.overall.n[metric] == len(ids)
    assert multi.overall.means[metric] == pytest.approx([mean_a, mean_b])
    doc = json.loads(multi.write(tmp_path / "nway.json").read_text())
    row = next(r for r in doc["overall"]["metrics"] if r["metric"] == metric)
    assert row["means"] == pytest.approx([mean_a, mean_b])
    # the forest plots (compare HTML, N-way page, notebook, viewer) draw these means' B − A
    from queryeval.report.html_charts import compare_charts, nway_charts

    rates = 0 <= mean_a <= 1 and 0 <= mean_b <= 1  # drawn when tested (not a count or twin)
    in_nway = next(r for r in multi.pair(0, 1) if r.metric == metric)
    for charts, label, tested in ((compare_charts(comp.raw), metric, m.tested),
                                  (nway_charts(multi.raw), f"{metric}: b − a", in_nway.tested)):
        forest = next((c["svg"] for c in charts if c["id"] == "forest"), "")
        row = chart_row(forest, label)
        assert (row is not None) == (tested and rates), (label, forest[:300])
        if row is not None:
            assert f"{mean_a:.4f} → {mean_b:.4f}, difference {mean_b - mean_a:+.4f}" in row
    # on a subset (compare --cases, the platinum suite): each run's mean on all shared
    # cases and on the subset, and the shift, in the object and the JSON
    keep = ids[: max(1, len(ids) // 2)]
    sub_a = sum(per_case_a[c] for c in keep) / len(keep)
    sub_b = sum(per_case_b[c] for c in keep) / len(keep)
    part = qe.compare(run_a, run_b, metrics=[metric], resamples=200, cases=keep)
    assert [(r["full"], r["subset"], r["shift"]) for r in part.platinum["runs"]] == [
        (pytest.approx(mean_a), pytest.approx(sub_a), pytest.approx(sub_a - mean_a)),
        (pytest.approx(mean_b), pytest.approx(sub_b), pytest.approx(sub_b - mean_b))]
    doc = json.loads(part.to_json(tmp_path / "platinum.json").read_text())
    assert doc["platinum_shift"] == part.platinum


def check_ci(run: qe.Run, metric: str, per_case: dict[str, float], verdicts: dict[str, str],
             tmp_path: Path) -> None:
    """The CI and observability consumers (docs/ci.md) give the run model's per-case
    ``verdicts`` and ``per_case`` values of ``metric``: JUnit XML read by junitparser, the
    GitHub step summary read by markdown-it, the OTel ``gen_ai.evaluation.result`` events
    decoded by a loopback OTLP receiver, MLflow's cases.json read by MLflow's client."""
    from helpers.ci_lab import Receiver, evaluation_events
    from queryeval.report.github import run_summary
    from queryeval.report.junit import run_junit, write_junit

    assert {c.case_id: c.verdict for c in run.results.cases} == verdicts  # the run model
    # JUnit
    junitparser = pytest.importorskip("junitparser")
    path = write_junit(run_junit(run.results), tmp_path / "junit.xml")
    got, values = {}, {}
    for suite in junitparser.JUnitXml.fromfile(str(path)):
        for case in suite:
            props = json.loads(case.system_out)
            kind = type(case.result[0]).__name__ if case.result else "pass"
            assert kind == {"pass": "pass", "fail": "Failure", "flaky": "Failure",
                            "error": "Error"}[props["verdict"]]
            got[props["case_id"]] = props["verdict"]
            values[props["case_id"]] = props["metrics"][metric]
    assert got == verdicts and values == pytest.approx(per_case)
    # the step summary: every case that did not pass, with its verdict
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(run_summary(run.results))
    cells = [t.content for t in tokens if t.type == "inline"]
    rows = {}
    if "reason" in cells:
        body = cells[cells.index("reason") + 1:]
        rows = {body[i]: body[i + 2] for i in range(0, len(body) - 4, 5)}
    assert rows == {c: v for c, v in verdicts.items() if v != "pass"}
    # OTel
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from queryeval.integrations.otel import export_run

    receiver = Receiver()
    try:
        export_run(run, endpoint=f"{receiver.endpoint}/v1/traces")
    finally:
        receiver.close()
    events = evaluation_events(receiver.spans)
    assert {c: e[metric]["gen_ai.evaluation.score.label"] for c, e in events.items()} == verdicts
    assert {c: e[metric]["gen_ai.evaluation.score.value"] for c, e in events.items()} \
        == pytest.approx(per_case)
    # MLflow
    pytest.importorskip("mlflow")
    import os

    from mlflow.tracking import MlflowClient

    from queryeval.integrations.mlflow import log_run, metric_name

    old = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        uri = (tmp_path / "mlruns").as_uri()
        rid = log_run(run, tracking_uri=uri)
        client = MlflowClient(tracking_uri=uri)
        local = client.download_artifacts(rid, "queryeval/cases.json", str(tmp_path))
        cases = json.loads(Path(local).read_text(encoding="utf-8"))["cases"]
        overall = client.get_run(rid).data.metrics
    finally:
        if old is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = old
    assert {c["case_id"]: c["verdict"] for c in cases} == verdicts
    assert {c["case_id"]: c["metrics"][metric] for c in cases} == pytest.approx(per_case)
    for key, value in run.overall.items():  # recall@5 is logged as recall_at_5
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert overall[metric_name(key)] == pytest.approx(value)
