"""A DeepEval CSV cell that begins with ``[`` but is no list (contexts that begin with a
numbered citation, ``[1] Paris ...|[2] ...``) is DeepEval's ``|``-joined text
(docs/formats.md "List cells"); before, the file was refused ("not a list: write a JSON
array of texts"). A cell that begins as a list of texts (``['``, ``["``, ``[]``) and does
not read as one, and such a cell in a field no writer joins (ragas', HF's), is still one
error."""

from __future__ import annotations

from pathlib import Path

import pytest

import queryeval as qe
from queryeval.errors import InputError
from queryeval.suite.foreign.records import Record, text_list

HERE = Path(__file__).resolve().parents[1] / "data" / "foreign"


def test_deepevals_csv_of_bracketed_contexts_scores(tmp_path):
    """deepeval_bracket.csv (DeepEval 4.3.1, write_fixtures.py): France retrieved b3, b1
    (relevant b1, rank 2); Germany retrieved b3 (relevant b2): recall@2 = (1 + 0) / 2,
    mrr@2 = (1/2 + 0) / 2, recall@1 = 0."""
    path = HERE / "deepeval_bracket.csv"
    run = qe.evaluate(str(path), responses=str(path), task="retrieval",
                      corpus=str(HERE / "corpus_bracket.jsonl"), k=[1, 2],
                      out=tmp_path / "runs", progress=False)
    assert run.overall["recall@2"] == pytest.approx(0.5)
    assert run.overall["mrr@2"] == pytest.approx(0.25)
    assert run.overall["recall@1"] == 0.0
    by_question = {r["question"]: [c["chunk_id"] for c in r["retrieved_chunks"]]
                   for r in run.records}
    assert by_question == {"Capital of France?": ["b3", "b1"], "Capital of Germany?": ["b3"]}


@pytest.mark.parametrize(("cell", "joined", "want"), [
    ("[1] Paris.", "|", ["[1] Paris."]),
    ("[1] Paris.|[2] Berlin.", "|", ["[1] Paris.", "[2] Berlin."]),
    ("[Note] x [2]", "|", ["[Note] x [2]"]),
    ("['a', 'b']", "|", ["a", "b"]),
    ("['a' 'b']", "", ["a", "b"]),
    ("[]", "|", []),
])
def test_text_list_reads_bracketed_cells(cell, joined, want):
    rec = Record({"f": cell}, {"line": 2}, table=True)
    assert text_list(rec, "f", Path("s.csv"), joined=joined) == want


@pytest.mark.parametrize("cell", ["['a', 'b'", "[ 'a' x]", '["a" , "b" "c"]', "[1, 2]"])
def test_a_cell_begun_as_a_list_that_does_not_read_stays_an_error(cell):
    rec = Record({"f": cell}, {"line": 2}, table=True)
    with pytest.raises(InputError) as err:
        text_list(rec, "f", Path("s.csv"), joined="|")
    assert "s.csv:2: f" in str(err.value)


@pytest.mark.parametrize("cell", ["[1] Paris.", "[not a list"])
def test_a_bracketed_text_in_a_field_no_writer_joins_stays_an_error(cell):
    rec = Record({"f": cell}, {"line": 2}, table=True)
    with pytest.raises(InputError) as err:
        text_list(rec, "f", Path("s.csv"))
    assert "not a list" in str(err.value)
