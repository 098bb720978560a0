"""Defects found by the issue-26 newcomer audit (helper ragaudit) in the foreign formats:
each test failed on main before its fix."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from queryeval.suite.retrieval import qa_pair_id

PARIS = "Paris is the capital of France."
BERLIN = "Berlin is the capital of Germany."
MADRID = "Madrid is the capital of Spain."
CORPUS = [{"chunk_id": "c1", "content": PARIS}, {"chunk_id": "c2", "content": BERLIN},
          {"chunk_id": "c3", "content": MADRID}]
# ragas EvaluationDataset rows after a RAG run: retrieval and the generated answer
RAGAS = [
    {"user_input": "Capital of France?", "reference_contexts": [PARIS], "reference": "Paris",
     "retrieved_contexts": [MADRID, PARIS], "response": "paris."},
    {"user_input": "Capital of Germany?", "reference_contexts": [BERLIN],
     "reference": "the city of Berlin", "retrieved_contexts": [BERLIN], "response": "Berlin"},
]
IDS = [qa_pair_id("", r["user_input"], r["reference"]) for r in RAGAS]
# SQuAD: "paris." == "paris" -> EM 1, F1 1; "city of berlin" vs "berlin": P 1, R 1/3 -> F1 0.5
EM = dict(zip(IDS, [1.0, 0.0], strict=True))
F1 = dict(zip(IDS, [1.0, 0.5], strict=True))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("flavour", ["ragas", "deepeval"])
def test_recorded_response_is_scored_as_the_answer(tmp_path, flavour):
    """A ragas `response` / DeepEval `actual_output` beside the retrieved contexts is the
    generated answer: scored by EM/F1 beside the retrieval (main dropped it silently)."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    if flavour == "ragas":
        suite = write_jsonl(tmp_path / "ragas.jsonl", RAGAS)
    else:
        suite = tmp_path / "cases.json"
        suite.write_text(json.dumps([
            {"input": r["user_input"], "context": r["reference_contexts"],
             "expected_output": r["reference"], "retrieval_context": r["retrieved_contexts"],
             "actual_output": r["response"]} for r in RAGAS]))
    run = qe.evaluate(str(suite), responses=str(suite), corpus=str(corpus), k=[2],
                      out=tmp_path / "runs", progress=False)
    assert run.results.vector("answer_exact_match") == pytest.approx(EM)
    assert run.results.vector("answer_f1") == pytest.approx(F1)
    assert run.overall["answer_f1"] == pytest.approx(0.75)
    assert run.overall["answered_questions"] == 2
    assert run.results.vector("recall@2") == pytest.approx(dict(zip(IDS, [1.0, 1.0], strict=True)))


def test_hf_to_json_default_lines_is_read(tmp_path):
    """`datasets.Dataset.to_json` writes JSON Lines by default (lines=True), to a `.json`
    file: main refused it with `invalid JSON: Extra data`."""
    datasets = pytest.importorskip("datasets")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    path = tmp_path / "eval.json"
    datasets.Dataset.from_list(RAGAS).to_json(str(path))
    assert len(path.read_text().splitlines()) == 2  # the library's own shape: one line each
    run = qe.evaluate(str(path), responses=str(path), corpus=str(corpus), k=[1, 2],
                      out=tmp_path / "runs", progress=False)
    # France: relevant c1 at rank 2 of [c3, c1]; Germany: c2 at rank 1
    assert run.results.vector("recall@1") == pytest.approx(dict(zip(IDS, [0.0, 1.0], strict=True)))
    assert run.results.vector("mrr@2") == pytest.approx(dict(zip(IDS, [0.5, 1.0], strict=True)))
    assert run.results.vector("answer_f1") == pytest.approx(F1)


def test_json_with_a_bad_second_line_still_names_it(tmp_path):
    from queryeval.errors import InputError
    from queryeval.suite.foreign.records import read_records

    path = tmp_path / "bad.json"
    path.write_text(json.dumps(RAGAS[0]) + "\n{not json\n")
    with pytest.raises(InputError) as err:
        read_records(path)
    assert "bad.json:2" in str(err.value)


def test_beir_folder_without_qrels_says_so(tmp_path, capsys):
    """A BEIR folder (corpus.jsonl, queries.jsonl) missing qrels/: main said `no .yaml or
    .yml files in folder`, sending the user to the wrong format."""
    from queryeval.cli.app import main

    beir = tmp_path / "scifact"
    beir.mkdir()
    write_jsonl(beir / "corpus.jsonl", [{"_id": "d1", "title": "", "text": PARIS}])
    write_jsonl(beir / "queries.jsonl", [{"_id": "q1", "text": "Capital of France?"}])
    code = main(["run", str(beir), "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2
    assert "qrels/<split>.tsv" in err and "yaml" not in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
