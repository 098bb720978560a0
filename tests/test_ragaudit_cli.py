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
