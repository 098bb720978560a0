"""Defects found by the issue-26 newcomer audit (helper ragaudit) on the run command."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(("flags", "option"), [
    (["--retriever", "bm25"], "retriever=dense-hnsw"),
    (["--k", "5"], "k=1,3"),
])
def test_flag_and_option_that_disagree_are_refused(tmp_path, capsys, flags, option):
    """`--retriever dense --option retriever=dense-hnsw` ran exact search on main: the flag
    silently beat the option, and the run had no ann_recall. Now one line, exit 2."""
    from queryeval.cli.app import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"chunk_id": "c1", "content": "Paris is in France."}) + "\n")
    suite = tmp_path / "q.csv"
    suite.write_text("question,answer,document_name,dataset,chunk_id\n"
                     "Where is Paris?,France,f.pdf,D,c1\n")
    code = main(["run", str(suite), "--corpus", str(corpus), *flags, "--option", option,
                 "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2
    assert flags[0] in err and f"--option {option}" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("batch_*.json"))


def test_flag_and_option_that_agree_run(tmp_path, capsys):
    from queryeval.cli.app import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"chunk_id": "c1", "content": "Paris is in France."}) + "\n")
    suite = tmp_path / "q.csv"
    suite.write_text("question,answer,document_name,dataset,chunk_id\n"
                     "Where is Paris?,France,f.pdf,D,c1\n")
    code = main(["run", str(suite), "--corpus", str(corpus), "--k", "1", "--option", "k=1",
                 "--out", str(tmp_path / "runs")])
    assert code == 0, capsys.readouterr().err
    (metrics,) = (tmp_path / "runs").rglob("metrics_*.json")
    assert json.loads(metrics.read_text())["overall_metrics"]["recall@1"] == 1.0


def test_relevant_chunk_missing_from_corpus_names_the_question(tmp_path, capsys):
    """The error named only the case id, an MD5 UUID the user never wrote: now the question
    too, so the CSV row can be found (one line, exit 2, before any call)."""
    from queryeval.cli.app import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"chunk_id": "c1", "content": "Paris is in France."}) + "\n")
    suite = tmp_path / "q.csv"
    suite.write_text("question,answer,document_name,dataset,chunk_id,relevance\n"
                     "Where is Paris?,France,f.pdf,D,c1,2\n"
                     "Where is Paris?,France,f.pdf,D,c999,1\n")
    code = main(["run", str(suite), "--corpus", str(corpus), "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2
    assert "'c999'" in err and "relevant[1].chunk_id" in err and "'Where is Paris?'" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_chunk_retrieved_by_text_counts_for_a_relevant_chunk_named_by_id(tmp_path):
    """A retriever may return a chunk by its content alone; with --corpus, a relevant chunk
    named by chunk id (no content_hash) retrieved that way was never credited on main:
    recall@3 0.5, MRR 1/3 for a ranking [c9-text, c1-text, c2] with c1 (2) and c2 (1) relevant.
    Hand-computed: recall 1, MRR 1/2, P@3 2/3, AP@3 (1/2 + 2/3)/2 = 7/12,
    nDCG@3 = (2/log2 3 + 1/2) / (2 + 1/log2 3)."""
    import math

    import queryeval as qe

    texts = {f"c{i}": f"Chunk number {i} is about topic {i}." for i in range(10)}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"chunk_id": c, "content": t}) + "\n"
                              for c, t in texts.items()))
    suite = tmp_path / "q.csv"
    suite.write_text("question,answer,document_name,dataset,chunk_id,relevance\n"
                     "q a,a,x.pdf,D,c1,2\nq a,a,x.pdf,D,c2,1\n")

    def retrieve(req):
        return {"retrieved_chunks": [{"content": texts["c9"], "score": 0.9},
                                     {"content": texts["c1"], "score": 0.8},
                                     {"chunk_id": "c2", "score": 0.7}]}

    run = qe.evaluate(str(suite), retrieve, corpus=str(corpus), k=[3], out=tmp_path / "runs",
                      progress=False)
    (rec,) = run.records
    s = rec["scores"]
    assert s["recall@3"] == 1.0 and s["hit_rate@3"] == 1.0
    assert s["mrr@3"] == pytest.approx(0.5)
    assert s["precision@3"] == pytest.approx(2 / 3)
    assert s["map@3"] == pytest.approx(7 / 12)
    ideal = 2 + 1 / math.log2(3)
    assert s["ndcg@3"] == pytest.approx((2 / math.log2(3) + 1 / 2) / ideal)
    assert [c["chunk_id"] for c in rec["retrieved_chunks"]] == ["c9", "c1", "c2"]
