"""Recorded responses (``--responses``) from a Parquet file of queryeval's own lines, and a
responses file without any line.

* A Parquet file (pandas' ``to_parquet``) of ``{"id" | "case_id", "response"}`` rows scores
  as the JSONL file of the same lines does; before, it was read as JSONL and refused
  ("line is not valid UTF-8: byte 0xae"), and an empty one as "invalid JSON".
* An empty responses file (JSONL, or a Parquet file of no row) says so in one warning
  (every case is then missing); before, the run scored every case missing without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import queryeval as qe
from queryeval.cli.app import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "freeform"
CASES = EXAMPLES / "cases.jsonl"
LINES = [json.loads(line) for line in (EXAMPLES / "responses.jsonl").read_text().splitlines()]


def verdicts(run) -> dict:
    return {r["case_id"]: (r["passed"], r["rule"]) for r in run.records}


@pytest.mark.parametrize("id_field", ["id", "case_id"])
def test_a_parquet_file_of_own_lines_scores_as_its_jsonl(tmp_path, id_field):
    path = tmp_path / "responses.parquet"
    pd.DataFrame([{id_field: r["id"], "response": r["response"]} for r in LINES]).to_parquet(path)
    want = qe.evaluate(str(CASES), responses=str(EXAMPLES / "responses.jsonl"),
                       out=tmp_path / "a", progress=False)
    got = qe.evaluate(str(CASES), responses=str(path), out=tmp_path / "b", progress=False)
    assert verdicts(got) == verdicts(want)
    # 5 of 8 pass (the population's "About 1.23 million" is hedged: undecided, docs/freeform.md)
    assert len(LINES) == 8 and sum(p for p, _ in verdicts(got).values()) == 5
    assert got.overall["pass_rate"] == want.overall["pass_rate"] == 0.625


def empty_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    return path


def empty_parquet(tmp_path: Path) -> Path:
    path = tmp_path / "empty.parquet"
    pd.DataFrame({"id": pd.Series([], dtype=str),
                  "response": pd.Series([], dtype=str)}).to_parquet(path)
    return path


@pytest.mark.parametrize("make", [empty_jsonl, empty_parquet])
def test_an_empty_responses_file_says_so(tmp_path, capsys, make):
    path = make(tmp_path)
    code = main(["run", str(CASES), "--responses", str(path), "--out", str(tmp_path / "runs"),
                 "--no-report", "-q"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"warning: {path}: the file holds no response: every case is missing" in err
    (metrics,) = (tmp_path / "runs").glob("*/metrics_*.json")
    overall = json.loads(metrics.read_text())["overall_metrics"]
    assert overall["pass_rate"] == 0.0


def test_a_partial_file_gives_no_empty_file_warning(tmp_path):
    path = tmp_path / "part.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in LINES[:3]))
    run = qe.evaluate(str(CASES), responses=str(path), out=tmp_path / "runs", progress=False)
    assert not any("holds no response" in w for w in run.warnings)
    assert run.overall["pass_rate"] == pytest.approx(3 / 8)


def test_a_datasetdict_folder_as_responses_names_its_splits_not_a_suite(tmp_path, capsys):
    """The split list is the same for a suite and for --responses; it said 'give one split's
    folder as the suite' when the folder was given as --responses."""
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "dd"
    rows = [{"id": r["id"], "response": r["response"]} for r in LINES]
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(folder))
    capsys.readouterr()  # datasets' progress bar
    code = main(["run", str(CASES), "--responses", str(folder), "--out", str(tmp_path / "runs"),
                 "--no-report", "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [f"error: {folder}: a DatasetDict folder: give one split's "
                                f"folder ({folder / 'test'})"]
