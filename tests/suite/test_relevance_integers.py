"""A relevance grade is an integer >= 0 in trec_eval's range in every reader (the RAG audit
found ``true``, ``2.0``, ``99999999999999999999`` and the Arabic digit ``١`` accepted by some
and refused by others): the questions CSV, cases JSONL/YAML (the case model) and a JSON array
of question rows; text cells of ASCII digits (a table's) are read as integers."""

from __future__ import annotations

import json

import pytest

from queryeval.cli.app import main
from queryeval.suite import load_suite


def _case(relevance) -> str:
    return json.dumps({"id": "q", "conversation": [{"role": "user", "content": "Q?", "target": {
        "retrieval": {"relevant": [{"chunk_id": "c1", "relevance": relevance}]}}}]}) + "\n"


@pytest.mark.parametrize("value", [True, 2.0, 99999999999999999999, "2", -1])
def test_case_model_refuses_what_is_not_an_integer_grade(tmp_path, value, capsys):
    p = tmp_path / "cases.jsonl"
    p.write_text(_case(value), encoding="utf-8")
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"{p}:1: conversation[0].target.retrieval.relevant[0].relevance" in err
    assert len(err.strip().splitlines()) == 1


def test_case_model_keeps_integer_grades(tmp_path):
    p = tmp_path / "cases.jsonl"
    p.write_text(_case(0) + _case(2147483647).replace('"q"', '"r"'), encoding="utf-8")
    got = [c.conversation[0].target.retrieval.relevant[0].relevance for c in load_suite(p).cases]
    assert got == [0, 2147483647]


@pytest.mark.parametrize("cell", ["١", "2.0", "high", "-1", "²"])
def test_questions_csv_refuses_other_digits(tmp_path, cell, capsys):
    p = tmp_path / "q.csv"
    p.write_text("question,answer,document_name,dataset,chunk_id,relevance\n"
                 f"Q?,A,d,ds,c1,{cell}\n", encoding="utf-8")
    assert main(["validate", str(p)]) == 2
    assert f"{p}:2: relevance: must be an integer >= 0, got {cell!r}" in capsys.readouterr().err


@pytest.mark.parametrize("value", [2.0, True, "١", "x", 2**31])
def test_question_rows_json_refuses_what_is_not_an_integer_grade(tmp_path, value, capsys):
    p = tmp_path / "own.json"
    p.write_text(json.dumps([{"question": "Q?", "answer": "A", "chunk_id": "c1",
                              "relevance": value}]), encoding="utf-8")
    assert main(["validate", str(p)]) == 2
    assert f"{p}: record 0: relevance: must be a non-negative integer, got {value!r}" in \
        capsys.readouterr().err


def test_question_rows_json_reads_digit_text_and_integers(tmp_path):
    p = tmp_path / "own.json"
    p.write_text(json.dumps([{"question": "Q?", "answer": "A", "chunk_id": "c1", "relevance": "2"},
                             {"question": "Q?", "answer": "A", "chunk_id": "c2", "relevance": 0}]),
                 encoding="utf-8")
    (case,) = load_suite(p).cases
    assert [(r.chunk_id, r.relevance) for r in case.conversation[0].target.retrieval.relevant] \
        == [("c1", 2), ("c2", 0)]
