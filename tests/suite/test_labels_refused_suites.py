"""``--labels`` with a suite that carries its own ground truth is one line naming the option
and what the suite is: a BEIR folder was called "a YAML suite", and a JSONL file of cases
was read as TREC queries ("cases.jsonl:1: text: field required")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from queryeval.cli.app import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LABELS = EXAMPLES / "answers" / "labels.jsonl"
TAIL = ("which carries its own ground truth; --labels goes with a DABench questions .jsonl "
        "or a TREC queries file (.tsv/.jsonl)")


def beir_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(json.dumps({"_id": "c1", "title": "", "text": "t"}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "q?"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tc1\t1\n")
    return folder


def refusal(capsys, suite: Path) -> str:
    code = main(["validate", str(suite), "--labels", str(LABELS)])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_beir_folder_is_not_called_a_yaml_suite(tmp_path, capsys):
    folder = beir_folder(tmp_path)
    assert refusal(capsys, folder) == (
        f"error: {folder}: --labels: given with a folder suite (YAML cases, a BEIR folder or "
        f"a saved dataset), {TAIL}")


@pytest.mark.parametrize(("suite", "kind"), [
    (EXAMPLES / "freeform" / "cases.jsonl", "a JSONL suite of cases"),
    (EXAMPLES / "sparql" / "suite.yaml", "a YAML suite"),
    (EXAMPLES / "sdmx" / "suite", "a folder suite (YAML cases, a BEIR folder or a saved dataset)"),
])
def test_labels_with_a_suite_of_cases_names_the_option(capsys, suite, kind):
    assert refusal(capsys, suite) == f"error: {suite}: --labels: given with {kind}, {TAIL}"


def test_dabench_questions_still_take_labels(capsys):
    code = main(["validate", str(EXAMPLES / "answers" / "questions.jsonl"), "--labels",
                 str(LABELS)])
    assert code == 0, capsys.readouterr().err
