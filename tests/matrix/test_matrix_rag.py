"""The cross-feature matrix for retrieval with several (graded) relevant chunks per question
(issue 26): plain, repeats, cached and compared runs, every consumer (run model, pandas,
metrics JSON, HTML, gates, viewer API, compares) against hand-computed per-case values where
``recall@k`` (share of relevant chunks found) differs from the hit rate and MAP from MRR."""

from __future__ import annotations

import csv
import hashlib
import json
import math

import pytest

import queryeval as qe
from helpers.matrix_checks import check_compare, check_consumers
from queryeval.suite.retrieval import qa_pair_id

L3 = math.log2(3)
TEXTS = {f"c{i}": f"passage {i} on subject {i}" for i in range(1, 7)}
QUESTIONS = {  # question -> (answer, dataset, [(chunk_id, by hash?, relevance)])
    "Q1?": ("a1", "A", [("c1", True, 1), ("c2", False, 1), ("c3", True, 1)]),
    "Q2?": ("a2", "A", [("c4", False, 1)]),
    "Q3?": ("a3", "B", [("c5", True, 2), ("c6", True, 1)]),
    "Q4?": ("a4", "B", [("c3", True, 1)]),
}
GOOD = {"Q1?": ["c4", "c2", "c1"], "Q2?": ["c4", "c5", "c6"], "Q3?": ["c6", "c1", "c5"], "Q4?": ["c1", "c2"]}
WORSE = {"Q1?": ["c1", "c4", "c5"], "Q2?": ["c5", "c6", "c4"], "Q3?": ["c1", "c2", "c6"], "Q4?": ["c3"]}
ID = {q: qa_pair_id(ds, q, a) for q, (a, ds, _) in QUESTIONS.items()}
# hand-computed at k=3 (GOOD; WORSE)
RECALL = {"Q1?": 2 / 3, "Q2?": 1.0, "Q3?": 1.0, "Q4?": 0.0}
MAP = {"Q1?": (1 / 2 + 2 / 3) / 3, "Q2?": 1.0, "Q3?": (1 + 2 / 3) / 2, "Q4?": 0.0}
NDCG = {"Q1?": (1 / L3 + 1 / 2) / (1 + 1 / L3 + 1 / 2), "Q2?": 1.0, "Q3?": 2 / (2 + 1 / L3), "Q4?": 0.0}
RECALL_WORSE = {"Q1?": 1 / 3, "Q2?": 1.0, "Q3?": 1 / 2, "Q4?": 1.0}
MAP_WORSE = {"Q1?": 1 / 3, "Q2?": (1 / 3) / 1, "Q3?": (1 / 3) / 2, "Q4?": 1.0}
ANSWERS = {"Q1?": "the a1", "Q2?": "a2 b", "Q3?": "x", "Q4?": "a4"}  # EM 1, 0, 0, 1
F1 = {"Q1?": 1.0, "Q2?": 2 / 3, "Q3?": 0.0, "Q4?": 1.0}


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()  # noqa: S324


def by_id(values: dict[str, float]) -> dict[str, float]:
    return {ID[q]: v for q, v in values.items()}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("rag")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"chunk_id": c, "content": t}) + "\n" for c, t in TEXTS.items()))
    questions = root / "questions.csv"
    with questions.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer", "document_name", "dataset", "chunk_id", "content_hash", "relevance"])
        for q, (a, ds, rel) in QUESTIONS.items():
            for cid, hashed, g in rel:
                w.writerow([q, a, f"{cid}.pdf", ds, cid, md5(TEXTS[cid]) if hashed else "", g])
    return root, questions, corpus


def system(ranking: dict[str, list[str]], calls: list | None = None, second=None):
    """A RAG system: the ranking's chunks for the question, and a generated answer; on the
    second repeat (``second``), the other ranking."""

    def rag(request):
        if calls is not None:
            calls.append(request["case_id"])
        use = second if second is not None and request.get("repeat", 0) == 1 else ranking
        q = request["question"]
        return {"retrieved_chunks": [{"chunk_id": c, "score": 1.0 - i / 10, "content": TEXTS[c]}
                                     for i, c in enumerate(use[q])], "answer": ANSWERS[q]}
    return rag


def test_plain_multi_relevant_run_every_consumer(suite):
    root, questions, corpus = suite
    run = qe.evaluate(str(questions), system(GOOD), k=[3], corpus=str(corpus), out=root / "plain",
                      reports=True, system_name="good")
    viewer = root / "plain"
    check_consumers(run, "recall@3", by_id(RECALL), csv_file=False, viewer_root=viewer)
    check_consumers(run, "map@3", by_id(MAP), csv_file=False, viewer_root=viewer)
    check_consumers(run, "ndcg@3", by_id(NDCG), csv_file=False, viewer_root=viewer)
    check_consumers(run, "answer_f1", by_id(F1), csv_file=False, viewer_root=viewer)
    # the seed's recall_at_k is the hit rate, beside the share
    assert run.overall["recall_at_k"] == run.overall["hit_rate@3"] == pytest.approx(3 / 4)
    assert run.overall["recall@3"] == pytest.approx(sum(RECALL.values()) / 4)


def test_repeats_average_each_question_over_its_attempts(suite):
    root, questions, corpus = suite
    run = qe.evaluate(str(questions), system(GOOD, second=WORSE), k=[3], corpus=str(corpus),
                      repeats=2, out=root / "rep", reports=True, system_name="flaky")
    mean = {q: (RECALL[q] + RECALL_WORSE[q]) / 2 for q in QUESTIONS}
    check_consumers(run, "recall@3", by_id(mean), csv_file=False, viewer_root=root / "rep")
    mean_map = {q: (MAP[q] + MAP_WORSE[q]) / 2 for q in QUESTIONS}
    check_consumers(run, "map@3", by_id(mean_map), csv_file=False, viewer_root=root / "rep")


def test_cached_run_gives_the_same_figures_without_calls(suite, tmp_path):
    root, questions, corpus = suite
    figures = []
    for i in range(2):
        calls: list = []
        run = qe.evaluate(str(questions), system(GOOD, calls), k=[3], corpus=str(corpus),
                          cache=True, cache_dir=tmp_path / "cache", system_version="1",
                          system_name="rag-cached", out=tmp_path / f"c{i}", reports=True)
        assert len(calls) == (4 if i == 0 else 0)
        check_consumers(run, "recall@3", by_id(RECALL), csv_file=False, viewer_root=tmp_path / f"c{i}")
        check_consumers(run, "answer_f1", by_id(F1), csv_file=False)
        figures.append(run.overall)
    assert figures[0]["map@3"] == figures[1]["map@3"] == pytest.approx(sum(MAP.values()) / 4)


def test_compare_two_multi_relevant_runs(suite, tmp_path):
    root, questions, corpus = suite
    a = qe.evaluate(str(questions), system(GOOD), k=[3], corpus=str(corpus), out=tmp_path / "a",
                    system_name="good")
    b = qe.evaluate(str(questions), system(WORSE), k=[3], corpus=str(corpus), out=tmp_path / "b",
                    system_name="worse")
    check_compare(a, b, "recall@3", by_id(RECALL), by_id(RECALL_WORSE), tmp_path)
    check_compare(a, b, "map@3", by_id(MAP), by_id(MAP_WORSE), tmp_path)
