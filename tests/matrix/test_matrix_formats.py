"""The cross-feature matrix for foreign suites (docs/formats.md): a ragas EvaluationDataset
run from its own recorded outputs (plain, with reports and the viewer), and from a Python
retriever with repeats and the call cache; every consumer and the compares give the
hand-computed per-case recall@2."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from helpers.formats_e2e import CORPUS, IDS, PARIS, RAGAS, RECALL2, write_jsonl
from helpers.matrix_checks import check_compare, check_consumers

RECORDED = RECALL2  # ranks 2, 1 (normalised), none
PARIS_ONLY = dict(zip(IDS, [1.0, 0.0, 0.0], strict=True))  # the retriever below


def paris_retriever(request):
    return {"retrieved_chunks": [{"chunk_id": "c1", "content": PARIS, "score": 1.0}]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formats")
    suite = folder / "ragas.jsonl"
    write_jsonl(suite, RAGAS)
    corpus = write_jsonl(folder / "corpus.jsonl", CORPUS)
    recorded = qe.evaluate(str(suite), responses=str(suite), corpus=str(corpus), k=2,
                           out=folder / "runs" / "a", reports=True, progress=False)
    live = qe.evaluate(str(suite), paris_retriever, corpus=str(corpus), k=2, repeats=2,
                       cache=True, cache_dir=folder / "cache", system_version="1",
                       out=folder / "runs" / "b", progress=False)
    return folder, recorded, live


def test_recorded_ragas_run_every_consumer(runs):
    folder, recorded, _ = runs
    assert check_consumers(recorded, "recall@2", RECORDED, csv_file=False,
                           viewer_root=folder / "runs") == pytest.approx(2 / 3)


def test_python_retriever_repeats_cached_every_consumer(runs):
    folder, _, live = runs
    assert check_consumers(live, "recall@2", PARIS_ONLY, csv_file=False,
                           viewer_root=folder / "runs") == pytest.approx(1 / 3)


def test_compare_recorded_and_live(runs, tmp_path):
    _, recorded, live = runs
    check_compare(recorded, live, "recall@2", RECORDED, PARIS_ONLY, tmp_path)


def test_inspect_samples_freeform_every_consumer(tmp_path):
    """inspect_ai samples (answer-only) with recorded responses: the free-form task's
    per-case ``passed`` and its ``pass_rate`` agree in every consumer."""
    suite = tmp_path / "samples.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "s1", "input": "What is 2 + 2?", "target": "4"},
        {"id": "s2", "input": [{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Colour of the sky?"}],
         "target": ["blue", "azure"]},
        {"id": "s3", "input": "Capital of France?", "target": "Paris"}]))
    responses = tmp_path / "out.jsonl"
    responses.write_text("".join(json.dumps(r) + "\n" for r in [
        {"case_id": "s1", "response": "4"}, {"case_id": "s2", "response": "Azure"},
        {"case_id": "s3", "response": "Lyon"}]))
    run = qe.evaluate(str(suite), responses=str(responses), out=tmp_path / "runs",
                      reports=True, progress=False)
    assert run.task_name == "freeform"
    # s2 passes on its alias (normalised exact match); s3 fails
    assert check_consumers(run, "passed", {"s1": 1.0, "s2": 1.0, "s3": 0.0},
                           overall="pass_rate", viewer_root=tmp_path / "runs") == pytest.approx(2 / 3)
