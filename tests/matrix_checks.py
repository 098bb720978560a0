"""The shared half of the cross-feature matrix: every consumer of a run, checked against
hand-computed per-case values. ``tests/test_matrix.py`` holds the closed-form matrix (every run
kind × every consumer); each later feature (a task kind, a reader, an exporter) adds its own
``tests/test_matrix_<feature>.py`` that builds its runs and calls these checks, so a new
consumer added here is held to every feature at once.

Usage::

    from matrix_checks import check_consumers, check_compare
    check_consumers(run, "recall@5", {"q1": 1.0, "q2": 0.5})
    check_compare(run_a, run_b, "recall@5", per_case_a, per_case_b)
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.errors import GateFailure


def run_file(run: qe.Run, prefix: str, suffix: str) -> Path:
    return run.folder / f"{prefix}_{run.batch_id}{suffix}"


def per_case_mean(rows) -> dict[str, float]:
    """Mean per case id of (case id, value) rows (attempt rows of a repeated run)."""
    acc: dict[str, list[float]] = {}
    for cid, v in rows:
        acc.setdefault(cid, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in acc.items()}


def check_consumers(run: qe.Run, metric: str, per_case: dict[str, float], *,
                    overall: str | None = None, counted: list[str] | None = None,
                    viewer_root: Path | None = None, csv_column: str | None = None,
                    csv_file: bool = True) -> float:
    """Assert that the run model, ``to_pandas``, the metrics JSON, the results CSV, the HTML
    report (when written), the gates and the viewer API all give ``per_case`` for ``metric``
    and its mean over the ``counted`` cases (default: every case) as the overall figure
    ``overall`` (default: ``metric``). ``csv_file=False`` for a task whose results CSV keeps a
    seed's own layout (retrieval: one row per retrieved chunk). Returns that mean."""
    counted = list(per_case) if counted is None else counted
    overall = overall or metric
    mean = sum(per_case[c] for c in counted) / len(counted)
    # the run model and pandas
    assert run.results.vector(metric) == pytest.approx({c: per_case[c] for c in counted})
    assert (run.to_pandas().groupby("id")[metric].mean().to_dict()
            == pytest.approx(per_case))
    # metrics JSON and the Run's overall figures
    doc = json.loads(run_file(run, "metrics", ".json").read_text())
    assert doc["overall_metrics"][overall] == pytest.approx(mean)
    assert run.overall[overall] == pytest.approx(mean)
    # the results CSV (one row per attempt)
    if csv_file:
        with open(run_file(run, "results", ".csv"), newline="") as fh:
            rows = [(r["case_id"], r[csv_column or metric] or 0.0)
                    for r in csv.DictReader(fh) if r["case_id"] in per_case]
        assert per_case_mean(rows) == pytest.approx(per_case)
    # the HTML report, when the run wrote one
    page = run_file(run, "report", ".html")
    if page.exists():
        m = re.search(rf'<td>{re.escape(overall)}</td><td class="num" data-v="([^"]+)">',
                      page.read_text())
        assert m and float(m[1]) == pytest.approx(mean), f"no {overall} row in the HTML"
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
        cases = client.get(f"/api/runs/{run.batch_id}/cases?limit=1000").json()["rows"]
        got = {r["case_id"]: r["metrics"][metric] for r in cases if r["case_id"] in per_case}
        assert got == pytest.approx(per_case)
    return mean


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
