"""Foreign suites and recorded outputs run end to end, scored by today's tasks, against
hand-computed per-case values (several graded relevant chunks included)."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from helpers.formats_e2e import BERLIN, CORPUS, IDS, MADRID, PARIS, RAGAS, RECALL2, write_jsonl  # noqa: E402,F401
from queryeval.suite.retrieval import qa_pair_id

RECALL1 = dict(zip(IDS, [0.0, 1.0, 0.0], strict=True))  # ranks 2, 1, none
MRR2 = dict(zip(IDS, [0.5, 1.0, 0.0], strict=True))


@pytest.fixture
def files(tmp_path):
    return (write_jsonl(tmp_path / "ragas.jsonl", RAGAS),
            write_jsonl(tmp_path / "corpus.jsonl", CORPUS))


def test_ragas_suite_and_outputs(tmp_path, files):
    suite, corpus = files
    run = qe.evaluate(str(suite), responses=str(suite), corpus=str(corpus), k=[1, 2],
                      out=tmp_path / "runs", progress=False)
    assert run.results.vector("recall@2") == pytest.approx(RECALL2)
    assert run.results.vector("recall@1") == pytest.approx(RECALL1)
    assert run.results.vector("mrr@2") == pytest.approx(MRR2)
    assert run.overall["recall@2"] == pytest.approx(2 / 3)
    by_id = {r["case_id"]: r for r in run.records}
    got = [c["chunk_id"] for c in by_id[IDS[0]]["retrieved_chunks"]]
    assert got == ["c3", "c1"]  # retrieved contexts became the corpus's chunks
    assert by_id[IDS[2]]["retrieved_chunks"][0] == {
        "chunk_id": "", "score": None, "content": "A text in no chunk.",
        "content_hash": pytest.approx(by_id[IDS[2]]["retrieved_chunks"][0]["content_hash"])}


def test_ragas_cli_run(tmp_path, files, capsys):
    from queryeval.cli.app import main

    suite, corpus = files
    code = main(["run", str(suite), "--responses", str(suite), "--option", f"corpus={corpus}",
                 "--option", "k=2", "--out", str(tmp_path / "runs")])
    assert code == 0, capsys.readouterr().err
    (metrics,) = (tmp_path / "runs").rglob("metrics_*.json")
    assert json.loads(metrics.read_text())["overall_metrics"]["recall@2"] == pytest.approx(2 / 3)


def test_deepeval_test_cases_json(tmp_path, files):
    _, corpus = files
    rows = [{"input": r["user_input"], "context": r["reference_contexts"],
             "expected_output": r["reference"], "retrieval_context": r["retrieved_contexts"],
             "actual_output": r["response"]} for r in RAGAS]
    path = tmp_path / "test_cases.json"
    path.write_text(json.dumps(rows))
    run = qe.evaluate(str(path), responses=str(path), corpus=str(corpus), k=2, progress=False)
    assert run.results.vector("recall@2") == pytest.approx(RECALL2)


def test_evaluate_a_datasets_dataset(files):
    datasets = pytest.importorskip("datasets")
    suite, corpus = files
    run = qe.evaluate(datasets.Dataset.from_list(RAGAS), responses=RAGAS, corpus=str(corpus),
                      k=2, progress=False)
    assert run.results.vector("recall@2") == pytest.approx(RECALL2)
    with pytest.raises(qe.InputError, match="pass one split"):
        qe.evaluate(datasets.DatasetDict({"test": datasets.Dataset.from_list(RAGAS)}),
                    responses=RAGAS, corpus=str(corpus), progress=False)


def _beir(tmp_path, qrels):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    write_jsonl(folder / "corpus.jsonl", [{"_id": c["chunk_id"], "title": "", "text": c["content"]}
                                          for c in CORPUS])
    write_jsonl(folder / "queries.jsonl", [{"_id": "q1", "text": "France?"},
                                           {"_id": "q2", "text": "Spain?"}])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


def test_beir_folder_run(tmp_path):
    folder = _beir(tmp_path, "q1\tc1\t1\nq2\tc3\t1\n")
    responses = write_jsonl(tmp_path / "out.jsonl", [
        {"case_id": "q1", "retrieved_chunks": [{"chunk_id": "c2"}, {"chunk_id": "c1"}]},
        {"case_id": "q2", "retrieved_chunks": [{"chunk_id": "c1"}]}])
    run = qe.evaluate(str(folder), responses=str(responses),
                      corpus=str(folder / "corpus.jsonl"), k=2, progress=False)
    assert run.results.vector("recall@2") == pytest.approx({"q1": 1.0, "q2": 0.0})
    assert run.results.vector("mrr@2") == pytest.approx({"q1": 0.5, "q2": 0.0})


def test_trec_qrels_run_with_corpus(tmp_path, files):
    _, corpus = files
    (tmp_path / "queries.tsv").write_text("1\tFrance?\n2\tSpain?\n")
    (tmp_path / "qrels.txt").write_text("1 0 c1 1\n2 0 c3 1\n2 0 c2 0\n")
    responses = write_jsonl(tmp_path / "out.jsonl", [
        {"case_id": "1", "retrieved_chunks": [{"chunk_id": "c1"}]},
        {"case_id": "2", "retrieved_chunks": [{"chunk_id": "c2"}, {"chunk_id": "c3"}]}])
    run = qe.evaluate(str(tmp_path / "queries.tsv"), labels=str(tmp_path / "qrels.txt"),
                      responses=str(responses), corpus=str(corpus), k=[1, 2], progress=False)
    assert run.results.vector("recall@1") == pytest.approx({"1": 1.0, "2": 0.0})
    assert run.results.vector("recall@2") == pytest.approx({"1": 1.0, "2": 1.0})


# --- need the parallel work -----------------------------------------------------------------------
def test_ragas_several_reference_contexts(tmp_path, files):
    _, corpus = files
    rows = [{"user_input": "Capitals?", "reference_contexts": [PARIS, MADRID], "reference": "x",
             "retrieved_contexts": [PARIS, BERLIN]}]
    path = write_jsonl(tmp_path / "ragas.jsonl", rows)
    run = qe.evaluate(str(path), responses=str(path), corpus=str(corpus), k=2, progress=False)
    cid = qa_pair_id("", "Capitals?", "x")
    assert run.results.vector("recall@2") == pytest.approx({cid: 0.5})  # 1 of 2 relevant
    assert run.results.vector("hit_rate@2") == pytest.approx({cid: 1.0})


def test_trec_qrels_without_corpus_graded(tmp_path):
    (tmp_path / "queries.tsv").write_text("1\tq?\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 2\n1 0 b 1\n")
    responses = write_jsonl(tmp_path / "out.jsonl", [{"case_id": "1", "retrieved_chunks": [
        {"chunk_id": "b", "content": "B"}, {"chunk_id": "x", "content": "X"}]}])
    run = qe.evaluate(str(tmp_path / "queries.tsv"), labels=str(tmp_path / "qrels.txt"),
                      responses=str(responses), k=2, progress=False)
    assert run.results.vector("recall@2") == pytest.approx({"1": 0.5})
    # graded nDCG@2: DCG = 1/log2(2) (b, gain 1); ideal = 2/1 + 1/log2(3)
    ideal = 2 + 1 / 1.584962500721156
    assert run.results.vector("ndcg@2") == pytest.approx({"1": 1 / ideal})


def test_inspect_samples_with_recorded_answers(tmp_path):
    suite = write_jsonl(tmp_path / "samples.jsonl", [
        {"id": "s1", "input": "What is 2 + 2?", "target": "4"},
        {"id": "s2", "input": "Colour of the sky?", "target": ["blue", "azure"]}])
    responses = write_jsonl(tmp_path / "out.jsonl", [{"case_id": "s1", "response": "4"},
                                                     {"case_id": "s2", "response": "green"}])
    run = qe.evaluate(str(suite), responses=str(responses), progress=False)
    assert run.task_name == "freeform"
    assert run.case_table()["verdict"].to_dict() == {"s1": "pass", "s2": "fail"}


def test_ragas_and_deepeval_answers_scored_by_freeform(tmp_path):
    """Answer-only samples (a reference, no contexts) and their recorded responses."""
    ragas = write_jsonl(tmp_path / "ragas.jsonl", [
        {"user_input": "Largest planet?", "reference": "Jupiter", "response": "The  jupiter"},
        {"user_input": "Smallest planet?", "reference": "Mercury", "response": "Mars"}])
    run = qe.evaluate(str(ragas), responses=str(ragas), progress=False)
    ids = [qa_pair_id("", "Largest planet?", "Jupiter"), qa_pair_id("", "Smallest planet?", "Mercury")]
    assert run.task_name == "freeform"
    table = run.case_table()
    # normalised exact match: case, whitespace and articles ignored (SQuAD's rule)
    assert table["verdict"].to_dict() == {ids[0]: "pass", ids[1]: "fail"}
    assert table["token_f1"].to_dict() == pytest.approx({ids[0]: 1.0, ids[1]: 0.0})
    deepeval = tmp_path / "cases.json"
    deepeval.write_text(json.dumps([{"input": "2+2?", "expected_output": "4", "actual_output": "4"},
                                    {"input": "3+3?", "expected_output": "6", "actual_output": "7"}]))
    run = qe.evaluate(str(deepeval), responses=str(deepeval), progress=False)
    assert run.case_table()["verdict"].to_dict() == {qa_pair_id("", "2+2?", "4"): "pass",
                                                      qa_pair_id("", "3+3?", "6"): "fail"}


def test_mixed_ragas_suite_picks_its_task(tmp_path, files):
    """Retrieval questions and answer-only samples in one file: --task picks the ones run."""
    _, corpus = files
    path = write_jsonl(tmp_path / "ragas.jsonl", [*RAGAS, {"user_input": "Largest planet?",
                                                           "reference": "Jupiter",
                                                           "retrieved_contexts": [],
                                                           "response": "Jupiter"}])
    run = qe.evaluate(str(path), responses=str(path), task="retrieval", corpus=str(corpus),
                      k=2, progress=False)
    assert run.results.vector("recall@2") == pytest.approx(RECALL2)
    run = qe.evaluate(str(path), responses=str(path), task="freeform", progress=False)
    assert run.case_table()["verdict"].to_dict()[qa_pair_id("", "Largest planet?", "Jupiter")] == "pass"
