"""--labels that is not DABench's JSONL is read as TREC qrels, so a bad qrels line is reported
against the qrels file and line, not as invalid JSON in the questions file; a recorded chunk
given by id alone without --corpus says that no corpus was given."""

import json

import pytest

from queryeval.errors import InputError
from queryeval.suite.loader import load_suite


def _queries(tmp_path):
    q = tmp_path / "queries.tsv"
    q.write_text("q0\tWhat is food?\n", encoding="utf-8")
    return q


def test_a_malformed_qrels_line_names_the_qrels_file_and_line(tmp_path):
    labels = tmp_path / "q.txt"
    labels.write_text("q0 0 rb-food-001\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_suite(_queries(tmp_path), labels=labels)
    text = str(err.value)
    assert str(labels) in text and ":1:" in text
    assert "4 whitespace-separated columns" in text
    assert "invalid JSON" not in text


def test_jsonl_labels_still_go_to_the_dabench_reader(tmp_path):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": 1, "question": "q?", "concepts": [],
                                     "constraints": "", "format": "@a[x]",
                                     "file_name": "f.csv", "level": "easy"}) + "\n",
                         encoding="utf-8")
    labels = tmp_path / "labels.txt"  # not .jsonl, but JSON records: DABench's labels
    labels.write_text(json.dumps({"id": 1, "common_answers": [["a", "1"]]}) + "\n",
                      encoding="utf-8")
    suite = load_suite(questions, labels=labels)
    assert [c.id for c in suite.cases] == ["1"]


def test_a_chunk_id_alone_without_corpus_says_no_corpus_was_given(tmp_path):
    from queryeval.tasks.retrieval.task import RetrievalTask

    task = RetrievalTask({"k": [5]})
    with pytest.raises(ValueError, match="no --corpus was given"):
        task.parse_output({"retrieved_chunks": [{"chunk_id": "c1", "score": 1.0}]})
