"""compare_runs on real runs of the example suite, with hand-computed expectations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import typer
from openpyxl import load_workbook
from scipy import stats as sp

from queryeval.errors import ConfigError, GateFailure
from queryeval.report.compare import check_regression, compare_runs
from queryeval.report.compare_output import write_json, write_xlsx
from queryeval.report.html_compare import render_comparison
from queryeval.run.config import RunConfig
from queryeval.run.evaluate import start_run
from queryeval.run.results import (
    RunResults,
    case_metrics,
    default_case_metrics,
    lower_is_better,
    resolve_batch,
)

FRANCE = "5eed0000-0000-0000-0000-00000001eef0"     # A: 0/0 -> B: fixed
GERMANY = "5eed0000-0000-0000-0000-000000013556"    # A: 0/0 -> B: fixed
CANADA = "5eed0000-0000-0000-0000-000000015445"     # A: precision 2/3 -> B: fixed
USA = "5eed0000-0000-0000-0000-000000017334"        # A: 1/1 -> B: empty selection


def responses_from(records: list[dict], path: Path, *, fix=(), empty=()) -> Path:
    """A responses file replaying ``records``; ``fix`` cases answer their target, ``empty``
    cases answer nothing."""
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            for t in r["turns"]:
                out = t["target"] if r["case_id"] in fix else [] if r["case_id"] in empty else t["output"]
                fh.write(json.dumps({"case_id": r["case_id"], "turn": t["turn"],
                                     "indicator_selection": out}) + "\n")
    return path


def run_suite(examples_dir: Path, out: Path, responses: Path, **options) -> Path:
    result = start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"), responses=str(responses),
                                 out=str(out), task_options=options, reports=False))
    return result.log.paths.batch


@pytest.fixture(scope="module")
def runs(tmp_path_factory, examples_dir) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("runs")
    a = run_suite(examples_dir, tmp / "a", examples_dir / "sdmx" / "responses.jsonl")
    records = RunResults.open(a).records
    b = run_suite(examples_dir, tmp / "b", responses_from(records, tmp / "b.jsonl",
                                                          fix={FRANCE, GERMANY, CANADA}, empty={USA}))
    c = run_suite(examples_dir, tmp / "c", responses_from(records, tmp / "c.jsonl",
                                                          empty={r["case_id"] for r in records}))
    return {"a": a, "b": b, "c": c, "tmp": tmp}


def test_pairs_means_flips_and_exact_p(runs):
    comp = compare_runs(runs["a"], runs["b"], exact_max_n=23)
    assert comp.task == "indicator_selection"
    assert comp.paired == 23 and comp.only_a == [] and comp.only_b == []
    assert [m.metric for m in comp.metrics] == ["macro_precision", "macro_recall"]
    rec = comp.metric("macro_recall")
    assert rec.mean_a == pytest.approx(19.5 / 23) and rec.mean_b == pytest.approx(20.5 / 23)
    assert rec.diff == pytest.approx(1 / 23)
    # nonzero differences +1, +1, -1: every flip has |T| >= 1, so p = 1
    assert rec.p_randomization == 1.0 and rec.randomization_method == "exact"
    assert sorted(f.case_id for f in rec.improved) == sorted([FRANCE, GERMANY])
    assert [(f.case_id, f.a, f.b) for f in rec.regressed] == [(USA, 1.0, 0.0)]
    assert not rec.binary  # population_two_sources_mexico scores 0.5
    prec = comp.metric("macro_precision")
    # nonzero differences 1, 1, -1, 1/3: 10 of the 16 sign patterns reach |T| >= 4/3
    assert prec.p_randomization == pytest.approx(10 / 16)
    assert not prec.binary
    canada = next(f for f in prec.improved if f.case_id == CANADA)
    assert (canada.a, canada.b) == (pytest.approx(2 / 3), 1.0)
    # t-test as scipy computes it on the paired values
    a_vals = {r["case_id"]: r["scores"]["macro_precision"] for r in RunResults.open(runs["a"]).records}
    b_vals = {r["case_id"]: r["scores"]["macro_precision"] for r in RunResults.open(runs["b"]).records}
    ids = list(a_vals)
    ref = sp.ttest_rel([b_vals[i] for i in ids], [a_vals[i] for i in ids])
    assert prec.p_ttest == pytest.approx(ref.pvalue)
    # Holm over two metrics: sorted .625 * 2 -> 1.0, then 1.0
    assert (prec.p_holm, rec.p_holm) == (1.0, 1.0)
    assert comp.regressions() == []
    check_regression(comp)  # no regression: no exception


def test_monte_carlo_default_and_ci(runs):
    comp = compare_runs(runs["a"], runs["b"], resamples=2000, seed=3)
    rec = comp.metric("macro_recall")
    # differences +1, +1, -1 and 20 zeros: exact over the 2**3 flips of the non-zero ones
    assert rec.randomization_method == "exact"
    assert rec.p_randomization == 1.0
    assert rec.ci_low <= rec.diff <= rec.ci_high
    assert comp == compare_runs(runs["a"], runs["b"], resamples=2000, seed=3)


def test_regression_gate(runs):
    comp = compare_runs(runs["a"], runs["c"], resamples=999, seed=0)
    rec = comp.metric("macro_recall")
    assert rec.mean_b == pytest.approx(3 / 23)  # the 3 abstention cases stay perfect
    # 17 cases regressed (by 1, one by 0.5), none improved: exact over their 2**17 flips,
    # only the identity flip and its mirror reach |T_obs|: p = 2 / 2**17
    assert rec.randomization_method == "exact" and rec.p_randomization == 2 / 2**17
    assert rec.p_holm == pytest.approx(4 / 2**17)
    assert {m.metric for m in comp.regressions()} == {"macro_precision", "macro_recall"}
    with pytest.raises(GateFailure) as info:
        check_regression(comp)
    msg = str(info.value)
    assert "macro_recall: 0.8478 (A) -> 0.1304 (B)" in msg and "Holm-adjusted p = 3.052e-05" in msg
    assert "macro_precision" in msg
    # the same runs the other way round improve: no regression
    assert compare_runs(runs["c"], runs["a"], resamples=999).regressions() == []


def test_unpaired_cases_listed(runs, tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(resolve_batch(runs["b"]).parent, folder)
    run_b = RunResults.open(folder)
    lines = run_b.log.paths.results_jsonl.read_text().splitlines()
    kept = [ln for ln in lines if USA not in ln]
    run_b.log.paths.results_jsonl.write_text("\n".join(kept) + "\n")
    comp = compare_runs(runs["a"], folder, exact_max_n=22)
    assert comp.only_a == [USA] and comp.only_b == [] and comp.paired == 22
    assert comp.metric("macro_recall").regressed == []
    assert comp.metric("macro_recall").n == 22


def test_refusals(runs, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(resolve_batch(runs["b"]).parent, other)
    batch = next(other.glob("batch_*.json"))
    doc = json.loads(batch.read_text())
    doc["task"] = "answers"
    batch.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="different tasks"):
        compare_runs(runs["a"], other)
    with pytest.raises(ConfigError, match="unknown metric.*nope.*macro_precision, macro_recall"):
        compare_runs(runs["a"], runs["b"], ["nope"])
    with pytest.raises(ConfigError, match="alpha"):
        compare_runs(runs["a"], runs["b"], alpha=1.5)
    with pytest.raises(ConfigError, match="expected one run"):
        RunResults.open(runs["tmp"])  # three runs below it


def test_case_metric_defaults():
    rec = {"scores": {"a": 1, "b": 0.5, "flag": True, "none": None, "nested": {"x": 1.0},
                      "inf": float("inf")}}
    assert default_case_metrics(rec) == {"a": 1.0, "b": 0.5}
    assert lower_is_better(None, "latency_ms") and lower_is_better(None, "rank")
    assert not lower_is_better(None, "macro_recall")
    assert not lower_is_better(type("T", (), {"lower_is_better_metrics": ()})(), "rank")
    hooked = type("T", (), {"case_metrics": lambda self, r: {"hit": float(r["rank"] == 1)}})()
    assert case_metrics(hooked, {"rank": 1, "scores": {"x": 0.5}}) == {"hit": 1.0}
    assert case_metrics(None, {"rank": 1, "scores": {"x": 0.5}}) == {"x": 0.5}


def test_on_error_skip_excludes_failed_cases(runs, tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(resolve_batch(runs["b"]).parent, folder)
    run_b = RunResults.open(folder)
    recs = [json.loads(ln) for ln in run_b.log.paths.results_jsonl.read_text().splitlines()]
    for r in recs:
        if r["case_id"] == USA:
            r["status"], r["error_kinds"] = "error", ["timeout"]
    run_b.log.paths.results_jsonl.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert compare_runs(runs["a"], folder).excluded == []  # on_error=score: scored as is
    doc = json.loads(run_b.log.paths.batch.read_text())
    doc["evaluation_config"]["task_options"]["on_error"] = "skip"
    run_b.log.paths.batch.write_text(json.dumps(doc))
    comp = compare_runs(runs["a"], folder, exact_max_n=22)
    assert comp.excluded == [USA] and comp.paired == 22
    assert comp.metric("macro_recall").regressed == []


def test_outputs_json_xlsx_html(runs, tmp_path):
    comp = compare_runs(runs["a"], runs["b"], exact_max_n=23)
    doc = json.loads(write_json(comp, tmp_path / "c.json").read_text())
    assert doc["paired_cases"] == 23 and doc["regressions"] == []
    m = {x["metric"]: x for x in doc["metrics"]}
    assert m["macro_recall"]["regressed"] == [
        {"case_id": USA, "name": "monthly_cpi_usa", "a": 1.0, "b": 0.0, "delta": -1.0}]
    wb = load_workbook(write_xlsx(comp, tmp_path / "c.xlsx"))
    assert wb.sheetnames == ["Summary", "macro_precision", "macro_recall"]
    cells = [c for row in wb["Summary"].iter_rows(values_only=True) for c in row]
    assert "macro_recall" in cells and pytest.approx(1 / 23) in cells
    flips = list(wb["macro_recall"].iter_rows(min_row=3, values_only=True))
    assert ("regressed", USA, "monthly_cpi_usa", 1.0, 0.0, -1.0) in flips
    assert len(flips) == 3
    html = render_comparison(comp)
    assert USA in html and 'data-status="regressed"' in html and "<svg" in html
    assert "no detectable difference on" in html and "worse on none" in html


def _app():
    from queryeval.cli import compare as compare_cmd
    from queryeval.cli import report as report_cmd
    from queryeval.cli import rescore as rescore_cmd

    app = typer.Typer(pretty_exceptions_enable=False)
    app.command("compare")(compare_cmd.command)
    app.command("report")(report_cmd.command)
    app.command("rescore")(rescore_cmd.command)
    return app


def test_cli_compare(runs, tmp_path, monkeypatch, capsys):
    import queryeval.cli.app as cli_app

    monkeypatch.setattr(cli_app, "app", _app())
    out = tmp_path / "cmp"
    code = cli_app.main(["compare", str(runs["a"]), str(runs["b"]), "--json", f"{out}.json",
                         "--xlsx", f"{out}.xlsx", "--html", f"{out}.html", "--fail-on-regression"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "macro_recall" in printed and "flipped cases" in printed
    assert all(Path(f"{out}.{ext}").is_file() for ext in ("json", "xlsx", "html"))
    code = cli_app.main(["compare", str(runs["a"]), str(runs["c"]), "--fail-on-regression",
                         "--resamples", "999", "-q", "--metric", "macro_recall"])
    assert code == 1
    err = capsys.readouterr().err
    assert "significant regression: macro_recall" in err
    code = cli_app.main(["compare", str(runs["a"]), str(runs["c"]), "--resamples", "999", "-q"])
    assert code == 0  # without the flag a regression is reported, not fatal


def test_paired_differences_match_numpy(runs):
    """The bootstrap CI is the percentile interval of resampled mean differences."""
    comp = compare_runs(runs["a"], runs["c"], resamples=5000, seed=1)
    prec = comp.metric("macro_precision")
    a = {r["case_id"]: r["scores"]["macro_precision"] for r in RunResults.open(runs["a"]).records}
    c = {r["case_id"]: r["scores"]["macro_precision"] for r in RunResults.open(runs["c"]).records}
    diffs = np.array([c[i] - a[i] for i in a])
    assert prec.diff == pytest.approx(diffs.mean())
    assert prec.ci_low < diffs.mean() < prec.ci_high < 0
