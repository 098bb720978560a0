"""A free-form run whose results file was damaged (a field of another shape: the reference a
string or null, the judge or the error a string, the response a list): ``queryeval report``
still writes every report, and ``queryeval rescore`` either re-scores or stops with one
``error:`` line naming the file and the case (exit 2); never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.ci_lab import cli

REPO = Path(__file__).resolve().parents[2]
DAMAGE = {"reference": ["x", None, 5, ["Paris"]], "judge": ["x", 3, ["v"]],
          "error": ["boom", 7, ["k"]], "response": [[1, 2], {"a": 1}],
          "scores": ["x"], "detail": [{"a": 1}]}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ff")
    ex = REPO / "examples" / "freeform"
    res = cli(["run", ex / "cases.jsonl", "--responses", ex / "responses.jsonl", "-o", out,
               "-q", "--no-report"])
    assert res.exit_code == 0, res.output[-2000:]
    return next(out.rglob("batch_*.json")).parent


@pytest.mark.parametrize("field,value", [(f, v) for f, vs in DAMAGE.items() for v in vs])
def test_a_damaged_field_is_reported_or_one_error_line(finished, tmp_path, field, value):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    results = next(run.glob("results_*.jsonl"))
    lines = [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines()]
    lines[0][field] = value
    results.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    batch = next(run.glob("batch_*.json"))
    rep = cli(["report", batch])
    assert rep.exit_code == 0 and "Traceback" not in rep.output, rep.output[-3000:]
    assert list(run.glob("report_*.xlsx")) and list(run.glob("report_*.html"))
    res = cli(["rescore", batch, "-o", tmp_path / "re", "--no-report"])
    assert "Traceback" not in res.output, res.output[-3000:]
    assert res.exit_code in (0, 2), res.output[-3000:]
    if res.exit_code == 2:
        [line] = res.stderr.strip().splitlines()
        assert line.startswith(f"error: {results}") and lines[0]["case_id"] in line
