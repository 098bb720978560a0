"""rescore: recompute a log with other task options, never touching the source."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import typer

from queryeval.errors import ConfigError
from queryeval.report.rescore import rescore_run
from queryeval.report.run_reports import write_run_reports
from queryeval.run.config import RunConfig
from queryeval.run.evaluate import start_run
from queryeval.run.results import RunResults


def _run(examples_dir: Path, out: Path, **options):
    return start_run(RunConfig(
        suite=str(examples_dir / "sdmx" / "suite"),
        responses=str(examples_dir / "sdmx" / "responses.jsonl"), out=str(out),
        task_options=options, reports=True), reporter=write_run_reports)


def _fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _strip(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in ("batch_id", "timestamp")}


def test_rescore_matches_direct_run(examples_dir, tmp_path):
    source = _run(examples_dir, tmp_path / "src")
    direct = _run(examples_dir, tmp_path / "direct", include_extra_dimensions=False)
    before = _fingerprint(tmp_path / "src")
    result = rescore_run(source.log.paths.batch, {"include_extra_dimensions": False},
                         out=tmp_path / "new")
    assert _fingerprint(tmp_path / "src") == before  # the source is only read
    assert result.changed_options == {"include_extra_dimensions": False}
    assert result.log.paths.batch_id != source.log.paths.batch_id
    # the figures are those of a run made with the option from the start
    assert result.metrics == direct.metrics
    assert result.metrics["overall_metrics"]["macro_precision"] == pytest.approx(19.5 / 23)
    # with the extra dimension counted, annual_gdp_canada scores precision 2/3 instead of 1
    assert source.metrics["overall_metrics"]["macro_precision"] == pytest.approx((19.5 - 1 / 3) / 23)
    new_files = RunResults.open(result.log.paths.batch)
    direct_records = {r["case_id"]: r for r in direct.records}
    for rec in new_files.records:
        assert rec["scores"] == direct_records[rec["case_id"]]["scores"]
        assert rec["turns"][0]["output"] == direct_records[rec["case_id"]]["turns"][0]["output"]
    on_disk = json.loads(result.log.paths.metrics.read_text())
    assert _strip(on_disk) == _strip(json.loads(direct.log.paths.metrics.read_text()))
    batch = new_files.batch
    assert batch["status"] == "complete"
    assert batch["rescored_from"]["batch_id"] == source.log.paths.batch_id
    assert batch["rescored_from"]["changed_options"] == {"include_extra_dimensions": False}
    assert batch["evaluation_config"]["task_options"]["include_extra_dimensions"] is False
    assert result.log.paths.results_csv.read_text() == direct.log.paths.results_csv.read_text()
    assert result.log.paths.report_xlsx.is_file()
    assert (result.log.paths.folder / f"report_{result.log.paths.batch_id}.html").is_file()


def test_rescore_default_out_and_no_change(examples_dir, tmp_path):
    source = _run(examples_dir, tmp_path / "src")
    result = rescore_run(source.log.paths.results_jsonl, reports=False)
    assert result.log.paths.folder == source.log.paths.folder  # same OUT/date folder
    assert result.changed_options == {}
    assert result.metrics == source.metrics
    assert not result.log.paths.report_xlsx.exists()


def test_rescore_refuses_bad_options(examples_dir, tmp_path):
    source = _run(examples_dir, tmp_path / "src")
    with pytest.raises(ConfigError, match="include_extra_dimensions"):
        rescore_run(source.log.paths.batch, {"include_extra_dimensions": "maybe"})
    with pytest.raises(ConfigError, match="no_such_option"):
        rescore_run(source.log.paths.batch, {"no_such_option": 1})
    empty = tmp_path / "src2"
    run = _run(examples_dir, empty)
    run.log.paths.results_jsonl.write_text("")
    with pytest.raises(ConfigError, match="no records"):
        rescore_run(run.log.paths.batch)


def test_cli_rescore(examples_dir, tmp_path, monkeypatch, capsys):
    import queryeval.cli.app as cli_app
    from queryeval.cli import rescore as rescore_cmd

    app = typer.Typer(pretty_exceptions_enable=False)
    app.command("rescore")(rescore_cmd.command)
    app.command("noop")(lambda: None)  # two commands, so "rescore" is a subcommand
    monkeypatch.setattr(cli_app, "app", app)
    source = _run(examples_dir, tmp_path / "src")
    code = cli_app.main(["rescore", str(source.log.paths.batch), "--option",
                         "include_extra_dimensions=false", "--out", str(tmp_path / "new"), "-q"])
    assert code == 0
    out = capsys.readouterr().out
    assert "changed options: include_extra_dimensions=False" in out
    batches = list((tmp_path / "new").rglob("batch_*.json"))
    assert len(batches) == 1
    assert json.loads(batches[0].read_text())["rescored_from"]["batch_id"] == source.log.paths.batch_id
    code = cli_app.main(["rescore", str(source.log.paths.batch), "--option", "bogus"])
    assert code == 2
