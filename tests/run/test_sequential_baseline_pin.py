"""A ``--baseline RUN --stop-when-decided`` run is resumed against the baseline it started
with: the batch file pins the baseline's batch id and a fingerprint of its per-case values
(``sequential_baseline``); a resume whose baseline is now another run, or the same run with
other values, is refused in one line (exit 2) before any case is called, and a resume with
an unchanged baseline goes on as before."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from helpers.matrix_checks import simulate_kill
from helpers.run_sequential import files, seq_run  # noqa: F401 - lab is a fixture
from queryeval.cli.app import main
from queryeval.run.results import RunResults


def _values_sha(run_folder) -> str:
    """The fingerprint by hand: the baseline's pass value per case, sorted by case id."""
    values = {c.case_id: c.pass_rate for c in RunResults.open(run_folder).counted()}
    text = json.dumps(sorted(values.items()), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@pytest.fixture
def started(lab, tmp_path):
    """A sequential run against a copy of the baseline, cut after 10 cases as SIGKILL
    would leave it."""
    base = tmp_path / "base"
    shutil.copytree(lab["base"], base)
    lab = {**lab, "base": base}
    assert seq_run(lab, tmp_path / "o", "good", "-q", "--no-report") == 0
    got = files(tmp_path / "o")
    jsonl = simulate_kill(got["path"], 10)
    return {"lab": lab, "base": base, "batch": got["path"], "jsonl": jsonl,
            "want": got["batch"]["sequential"]}


def test_the_batch_file_pins_the_baseline(started):
    pin = json.loads(started["batch"].read_text())["sequential_baseline"]
    (base_batch,) = started["base"].rglob("batch_*.json")
    assert pin == {"batch_id": base_batch.stem.removeprefix("batch_"),
                   "path": str(started["base"].resolve()), "metric": "pass",
                   "fingerprint": _values_sha(started["base"])}


def test_an_unchanged_baseline_resumes_to_the_same_decision(started):
    assert main(["run", "--resume", str(started["batch"]), "-q"]) == 0
    seq = json.loads(started["batch"].read_text())["sequential"]
    keep = ("decision", "cases_used", "interval", "baseline_batch_id")
    assert {k: seq[k] for k in keep} == {k: started["want"][k] for k in keep}


def _refused(started, capsys) -> str:
    before = started["jsonl"].read_text(), started["batch"].read_text()
    capsys.readouterr()
    assert main(["run", "--resume", str(started["batch"]), "-q"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    # nothing called, nothing written: the results (its half-written line too) and the
    # batch file (not marked resumed) are as the kill left them
    assert (started["jsonl"].read_text(), started["batch"].read_text()) == before
    return err


def test_a_baseline_whose_values_changed_is_refused(started, capsys):
    (results,) = started["base"].rglob("results_*.jsonl")
    records = [json.loads(x) for x in results.read_text().splitlines()]
    first = records[0]
    passed = bool(first["scores"]["passed"])
    first["scores"]["passed"] = not passed  # the baseline now fails (passes) its first case
    if "passed" in first:
        first["passed"] = not passed
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    before = {c.case_id: c.pass_rate for c in RunResults.open(started["base"]).counted()}
    assert before[first["case_id"]] == (0.0 if passed else 1.0)  # the value did change
    err = _refused(started, capsys)
    assert "changed since the sequence started (its per-case pass values differ)" in err
    assert "a resume decides against the baseline it started with" in err


def test_a_baseline_replaced_by_another_run_is_refused(started, capsys, tmp_path):
    other = tmp_path / "other"  # the same answers, run again: another batch id
    assert main(["run", str(started["lab"]["suite"]), "--responses",
                 str(started["lab"]["root"] / "base.jsonl"), "--out", str(other), "-q",
                 "--no-report"]) == 0
    shutil.rmtree(started["base"])
    shutil.copytree(other, started["base"])
    (new_batch,) = started["base"].rglob("batch_*.json")
    err = _refused(started, capsys)
    assert f"is now run {new_batch.stem.removeprefix('batch_')}" in err
    assert "the sequence started against baseline run" in err


def test_a_resume_naming_another_baseline_is_refused(started, capsys, tmp_path):
    capsys.readouterr()
    assert main(["run", "--resume", str(started["batch"]), "--baseline", str(tmp_path),
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert "--resume keeps the run's own configuration; drop --baseline" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
