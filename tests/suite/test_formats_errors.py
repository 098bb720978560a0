"""Foreign suites that fit no format, or several: one clear line (exit 2, no traceback)
naming the closest format and its missing fields; and the misleading routes of issue 26
(any .json read as BuildingQA, ragas/inspect JSONL as DABench, questions xlsx, Title-case
CSV headers read as a fields table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.suite.loader import load_suite


def run_main(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err
    return code, err


def one_line(capsys, *args: str) -> str:
    code, err = run_main(capsys, *args)
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_json_that_fits_no_format_names_the_closest(tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text(json.dumps([{"user_input": "q", "contexts": ["c"]}]))
    line = one_line(capsys, "validate", str(path))
    assert line.startswith(f"error: {path}: record 0: unknown suite format: closest is a ragas "
                           "EvaluationDataset")
    assert "missing one of retrieved_contexts, reference_contexts, response, reference" in line


def test_json_that_fits_no_known_field(tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text(json.dumps([{"foo": 1}]))
    assert "fit none of the known formats" in one_line(capsys, "validate", str(path))


def test_ambiguous_record_names_both_formats(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"input": "q", "target": "a", "expected_output": "a"}) + "\n")
    line = one_line(capsys, "validate", str(path))
    assert f"{path}:1: ambiguous suite format" in line
    assert "DeepEval goldens/test cases" in line and "inspect_ai samples" in line


def test_buildingqa_without_building_id_still_says_so(tmp_path):
    path = tmp_path / "qa.json"
    path.write_text(json.dumps([{"queries": []}]))
    with pytest.raises(InputError, match="closest is BuildingQA QA JSON .*missing building_id"):
        load_suite(path)


@pytest.mark.parametrize("record", [
    [{"input": "What is 2+2?", "actual_output": "4", "expected_output": "4",
      "retrieval_context": ["2+2=4"]}],                                     # DeepEval test case
    {"data": [{"input": "What is 2+2?", "target": "4"}]},                   # HF-style JSON
    [{"id": "c", "conversation": [{"role": "user", "content": "q",
                                   "target": {"reference": {"answer": "a"}}}]}],  # own cases
], ids=["deepeval", "hf-data", "own-cases"])
def test_json_that_is_not_buildingqa_loads(tmp_path, record):
    """Old: every .json was read as BuildingQA: 'building_id: field required'."""
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(record))
    (case,) = load_suite(path).cases
    assert case.conversation[-1].target.reference.answer in ("4", "a")


@pytest.mark.parametrize("row", [
    {"user_input": "q", "reference": "a"},            # ragas
    {"input": "q", "target": "a"},                    # inspect_ai
], ids=["ragas", "inspect"])
def test_jsonl_that_is_not_dabench_loads(tmp_path, row):
    """Old: 'a DABench questions file needs its labels'."""
    path = tmp_path / "suite.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (case,) = load_suite(path).cases
    assert case.conversation[0].target.reference.answer == "a"


def test_dabench_questions_still_ask_for_labels(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps({"id": 0, "question": "q", "concepts": ["x"]}) + "\n")
    with pytest.raises(InputError, match="needs its labels: add --labels"):
        load_suite(path)


def test_questions_xlsx_loads(tmp_path):
    """Old: 'missing question column (columns: question, ...)', naming the column it has."""
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    wb.active.append(["question", "answer", "document_name", "dataset", "chunk_id",
                      "content_hash"])
    wb.active.append(["q", "a", "d", "s", "c1", "0" * 32])
    wb.save(tmp_path / "q.xlsx")
    (case,) = load_suite(tmp_path / "q.xlsx").cases
    assert case.conversation[0].target.retrieval.content_hash == "0" * 32


def test_xlsx_that_fits_nothing_names_the_closest(tmp_path, capsys):
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    wb.active.append(["question", "notes"])
    wb.active.append(["q", "n"])
    wb.save(tmp_path / "q.xlsx")
    line = one_line(capsys, "validate", str(tmp_path / "q.xlsx"))
    assert "closest is queryeval retrieval questions" in line
    assert "missing one of chunk_id, content_hash" in line


def test_title_case_retrieval_header_is_not_a_fields_table(tmp_path, capsys):
    """Old: routed to the fields task (a 'Question' column), fields Answer, Chunk_Id, ..."""
    path = tmp_path / "q.csv"
    path.write_text("Question,Answer,Document_Name,Dataset,Chunk_Id,Content_Hash\n"
                    "q,a,d,s,c," + "0" * 32 + "\n")
    line = one_line(capsys, "validate", str(path))
    assert "missing columns question, answer, document_name, dataset, chunk_id" in line
    assert "did you mean 'Question' for 'question'" in line


@pytest.mark.parametrize("header", [
    "Question,Answer,Document_Name,Dataset,Chunk_Id",          # content_hash is optional
    "QUESTION,ANSWER,DOCUMENT_NAME,DATASET,CHUNK_ID,CONTENT_HASH",
    "question,Answer,document_name,Dataset,chunk_id",
])
def test_retrieval_header_in_any_letter_case_is_not_a_fields_table(tmp_path, capsys, header):
    """Old: without Content_Hash these were read as a fields table (fields Answer, ...)."""
    path = tmp_path / "q.csv"
    path.write_text(header + "\n" + ",".join("x" * len(header.split(","))) + "\n")
    line = one_line(capsys, "validate", str(path))
    assert "a retrieval questions CSV" in line
    assert "missing columns" in line and "did you mean" in line


def test_a_fields_table_with_an_answer_field_stays_a_fields_table(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("Question,Answer,Country\nq,a,c\n")
    assert load_suite(path).cases  # two of the retrieval columns are no retrieval header


def test_ragas_csv_loads(tmp_path):
    path = tmp_path / "ragas.csv"
    path.write_text('user_input,reference_contexts,reference\n"q","[""ctx""]",a\n')
    (case,) = load_suite(path).cases
    assert case.conversation[0].target.retrieval.answer == "a"


def test_trec_qrels_alone_asks_for_queries(tmp_path, capsys):
    path = tmp_path / "qrels.txt"
    path.write_text("1 0 d1 1\n")
    assert "TREC qrels need their queries" in one_line(capsys, "validate", str(path))


def test_bad_list_cell_names_line_and_field(tmp_path):
    path = tmp_path / "ragas.csv"
    path.write_text('user_input,reference_contexts,reference\nq,"[not a list",a\n')
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert (err.value.line, err.value.field) == (2, "reference_contexts")


@pytest.mark.parametrize("suite", ["questions.csv", "multi_questions.csv"])
def test_labels_with_a_suite_that_takes_none_names_the_option(capsys, suite):
    """Old: a retrieval CSV with --labels was read as DABench questions ('invalid JSON')."""
    repo = Path(__file__).resolve().parents[2] / "examples" / "retrieval"
    line = one_line(capsys, "validate", str(repo / suite), "--labels",
                    str(repo.parent / "answers" / "labels.jsonl"))
    assert f"{repo / suite}: --labels: given with a .csv suite, which carries its own" in line
    assert "--labels goes with a DABench questions .jsonl" in line
    assert "JSON" not in line.replace(".jsonl", "")
