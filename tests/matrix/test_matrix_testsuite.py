"""The cross-feature matrix for --test-suite (docs/test-suite.md): ``test_suite_match`` per case
and ``test_suite_accuracy`` overall, in the run kinds that apply (plain, cached, resumed after
a kill, with a failing call), read back by every consumer (run model, pandas, metrics JSON,
results CSV, HTML, gates, viewer API) and by both compares; the values are hand-computed
from examples/testsuite (two predictions right by accident on the shipped database)."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import queryeval as qe
from helpers.matrix_checks import build_kind, check_compare, check_consumers
from helpers.matrix_testsuite import BOTS, FAILING, PLAIN  # noqa: E402,F401
from helpers.testsuite_sql import build_example
from queryeval.cli.app import app

N = 5
FIXED = dict.fromkeys(PLAIN, 1.0)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("tsmatrix")
    build_example(root)
    (root / "bots.py").write_text(BOTS)
    return root


def _spec(lab: Path, fn: str) -> str:
    return f"python:{lab / 'bots.py'}:{fn}"


def _run(lab: Path, kind: str, fn: str = "right", **more) -> qe.Run:
    return qe.evaluate(lab / "suite.yaml", system=_spec(lab, fn), out=lab / "runs" / kind,
                       reports=True, retries=0, backoff=0.0, name=kind, test_suite=N, **more)


@pytest.fixture(scope="module")
def built(lab):
    runs: dict[str, qe.Run] = {}

    def get(kind: str) -> qe.Run:
        if kind in runs:
            return runs[kind]
        if kind == "fixed":
            run = _run(lab, kind, "fixed")
        else:
            run = build_kind(kind, lab / "suite.yaml", lab / "bots.py", lab / "runs", n=len(PLAIN),
                             keep=2, plain="right", cache_dir=lab / "callcache", test_suite=N)
        runs[kind] = run
        return run

    return get


@pytest.mark.parametrize(("kind", "expected"), [("plain", PLAIN), ("cached", PLAIN),
                                                ("resumed", PLAIN), ("errors", FAILING),
                                                ("fixed", FIXED)])
def test_every_consumer_reads_test_suite_match(built, lab, kind, expected):
    run = built(kind)
    known = [c for c, v in expected.items() if v is not None]
    mean = check_consumers(run, "test_suite_match", expected, overall="test_suite_accuracy",
                           counted=known, viewer_root=lab / "runs" / kind)
    assert mean == pytest.approx(sum(expected[c] for c in known) / len(known))
    refuted = sum(v == 0.0 for v in expected.values())
    unknown = sum(v is None for v in expected.values())
    assert run.overall["test_suite_refuted"] == refuted
    assert run.overall["test_suite_unknown"] == unknown
    # every surface lists as many refuted and unknown cases as the counts say
    assert f"{refuted} case(s) refuted, {unknown} unknown" in " ".join(str(run).split())
    page = (run.folder / f"report_{run.batch_id}.html").read_text()
    assert page.count("<b>test suite (refuted)</b>") == refuted
    assert page.count("<b>test suite (unknown)</b>") == unknown
    rows = list(csv.DictReader(open(run.folder / f"results_{run.batch_id}.csv")))
    assert {r["case_id"]: r["test_suite_match"] for r in rows} == {
        c: "" if v is None else str(v) for c, v in expected.items()}
    # beside the execution metrics: on the shipped database every plain prediction matches
    if kind in ("plain", "cached", "resumed"):
        assert run.overall["exact_match_f1"] == 1.0


def test_resumed_run_kept_the_verdicts_it_had(built):
    """The resumed run's first cases come from the cut log, the rest were scored again:
    the refutation evidence is on both kinds of record."""
    run = built("resumed")
    path = run.folder / f"results_{run.batch_id}.jsonl"
    recs = {r["case_id"]: r for r in map(json.loads, path.read_text().splitlines())}
    assert recs["high-earners"]["test_suite"]["refuted_by"]["database"]["emp"]["rows"]
    assert recs["count-at-least-120"]["test_suite"]["refuted_by"]["rows"] > 0


def test_compare_two_runs_on_test_suite_match(built, tmp_path):
    check_compare(built("plain"), built("fixed"), "test_suite_match", PLAIN, FIXED, tmp_path)


def test_console_and_html_show_the_verdicts(built):
    run = built("plain")
    text = str(run)
    assert re.search(r"test_suite_accuracy\s*│\s*0\.6000", text)
    assert re.search(r"test_suite_refuted\s*│\s*2\b", text)
    assert "2 case(s) refuted, 0 unknown" in " ".join(text.split())
    page = (run.folder / f"report_{run.batch_id}.html").read_text()
    # a refuted case fails (its details are on the page); the equal ones pass
    assert page.count("<b>test suite (refuted)</b>") == 2
    assert "test suite (equal)" not in page
    assert [c.verdict for c in run.results.cases] == [
        "fail" if v == 0.0 else "pass" for v in PLAIN.values()]
    # the distinguishing rows of high-earners are on the page, escaped as every cell
    rec = next(r for r in map(json.loads, (run.folder / f"results_{run.batch_id}.jsonl")
                              .read_text().splitlines()) if r["case_id"] == "high-earners")
    for row in rec["test_suite"]["refuted_by"]["database"]["emp"]["rows"]:
        assert f"<td>{html.escape(str(row[1]))}</td>" in page


def test_cli_flag(lab, tmp_path):
    for name in ("suite.yaml", "predictions.jsonl", "emp.sqlite"):
        shutil.copy(lab / name, tmp_path / name)
    res = CliRunner().invoke(app, ["run", str(tmp_path / "suite.yaml"), "--responses",
                                   str(tmp_path / "predictions.jsonl"), "--task", "query",
                                   "--test-suite", "5", "-o", str(tmp_path / "runs"), "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads(next((tmp_path / "runs").rglob("metrics_*.json")).read_text())
    assert doc["overall_metrics"]["test_suite"] == 5
    assert doc["overall_metrics"]["test_suite_refuted"] == 2
