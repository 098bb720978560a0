"""Under --repeats, every task's workbook says which attempt each row is: its second column
is ``repeat``, the record's own (as the results CSV's), read back with openpyxl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from helpers.testsuite_sql import build_example
from queryeval.cli.app import main

EX = Path(__file__).resolve().parents[2] / "examples"


def _args(task: str, tmp_path: Path) -> list[str]:
    if task == "answers":
        return [str(EX / "answers/questions.jsonl"), "--labels", str(EX / "answers/labels.jsonl"),
                "--responses", str(EX / "answers/responses.jsonl")]
    if task == "selection":
        return [str(EX / "sdmx/suite"), "--responses", str(EX / "sdmx/responses.jsonl")]
    if task == "fields":
        return [str(EX / "fields/evaluation.csv"), "--data", str(EX / "fields/ingredients.csv")]
    if task == "retrieval":
        return [str(EX / "retrieval/questions.csv"),
                "--responses", str(EX / "retrieval/responses.jsonl")]
    if task == "freeform":
        return [str(EX / "freeform/cases.jsonl"), "--responses", str(EX / "freeform/responses.jsonl")]
    build_example(tmp_path)  # query
    return [str(tmp_path / "suite.yaml"), "--task", "query",
            "--responses", str(tmp_path / "predictions.jsonl")]


def _run(task: str, tmp_path: Path, *more: str) -> tuple[list[tuple], list[dict]]:
    out = tmp_path / "runs"
    assert main(["run", *_args(task, tmp_path), "--out", str(out), "-q", *more]) == 0
    (report,) = out.rglob("report_*.xlsx")  # the run's own (a derived per-k batch has none)
    bid = report.stem[len("report_"):]
    book = load_workbook(report, read_only=True)
    rows = list(book.worksheets[0].iter_rows(values_only=True))
    recs = [json.loads(line) for line in
            next(out.rglob(f"results_{bid}.jsonl")).read_text().splitlines()]
    return rows, recs


@pytest.mark.parametrize("task", ["answers", "query", "selection", "fields", "retrieval",
                                  "freeform"])
def test_a_repeated_runs_workbook_has_each_rows_attempt(tmp_path, task):
    rows, recs = _run(task, tmp_path, "--repeats", "2")
    header, body = rows[0], [r for r in rows[1:] if any(v is not None for v in r)]
    assert header[1] == "repeat"
    assert len(header) == len(set(header))  # the column is not there twice
    written = {(str(r[0]), r[1]) for r in body}
    expected = {(str(r.get("qa_pair_id", r["case_id"])), r["repeat"]) for r in recs}
    assert {rep for _, rep in expected} == {0, 1}
    assert written == expected
    # one row per record (fields: one per record and field), none without its attempt
    assert all(r[1] in (0, 1) for r in body)


def test_a_plain_runs_workbook_has_no_repeat_column(tmp_path):
    rows, _ = _run("query", tmp_path)
    assert "repeat" not in rows[0]
