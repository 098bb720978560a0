"""Other tools' files as their own writers write them (docs/formats.md "List cells", "Mixed
files"): Hugging Face ``Dataset.to_csv`` (numpy's print of list cells), pandas ``to_csv``
(Python list reprs), DeepEval 4.3.1 ``save_as`` (``|``-joined contexts in JSONL and CSV,
``""`` for an empty list), ragas 0.4.3 ``EvaluationDataset`` / ``Testset`` files and a
``save_to_disk`` folder. The same data scores the same from every format it is saved in.

DeepEval and ragas are not in the test extra: their files are committed under
``tests/data/foreign/`` (README.md there says which version and script wrote them);
``datasets`` and pandas write theirs here, in the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.suite.foreign.records import Record, list_cell, text_list
from queryeval.suite.retrieval import qa_pair_id

HERE = Path(__file__).resolve().parents[1] / "data" / "foreign"
CORPUS = HERE / "corpus.jsonl"

# The committed files' four retrieval questions (write_fixtures.py), ranks of their relevant
# chunks among the retrieved contexts: France c1 at 2; Germany+Spain c2 at 1, c3 at 4;
# Italy none; Portugal nothing retrieved. Answer-only: Largest planet? (passes).
QUESTIONS = [("Capital of France?", "Paris"), ("Capitals of Germany and Spain?",
                                               "Berlin and Madrid"),
             ("Capital of Italy?", "Rome"), ("Capital of Portugal?", "Lisbon")]
IDS = [qa_pair_id("", q, a) for q, a in QUESTIONS]
RECALL3 = dict(zip(IDS, [1.0, 0.5, 0.0, 0.0], strict=True))
HIT3 = dict(zip(IDS, [1.0, 1.0, 0.0, 0.0], strict=True))
ANSWER_ID = qa_pair_id("", "Largest planet?", "Jupiter")

WRITTEN = ["deepeval_goldens.json", "deepeval_goldens.jsonl", "deepeval_goldens.csv",
           "ragas_mixed.jsonl", "ragas_mixed.csv", "ragas_mixed_hf"]
# where each file's answer-only sample is (a JSON array and a saved folder: record 4)
ANSWER_AT = {"deepeval_goldens.json": "record 4", "deepeval_goldens.jsonl": "line 5",
             "deepeval_goldens.csv": "line 6", "ragas_mixed.jsonl": "line 5",
             "ragas_mixed.csv": "line 6", "ragas_mixed_hf": "record 4"}


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name", WRITTEN)
def test_a_writers_file_scores_the_same_as_suite_and_responses(tmp_path, name):
    """DeepEval's JSONL/CSV (``|``-joined contexts) and ragas' CSV (pandas' reprs) score as
    its JSON does: recall@3 0.375, hit_rate@3 0.5; before, DeepEval's JSONL and CSV were
    refused (the joined text matched no chunk) and a mixed file could not be its own
    responses under the retrieval task."""
    path = HERE / name
    run = qe.evaluate(str(path), responses=str(path), task="retrieval", corpus=str(CORPUS),
                      k=3, out=tmp_path / "runs", progress=False)
    assert run.results.vector("recall@3") == pytest.approx(RECALL3)
    assert run.results.vector("hit_rate@3") == pytest.approx(HIT3)
    assert run.overall["recall@3"] == pytest.approx(0.375)
    assert run.overall["hit_rate@3"] == pytest.approx(0.5)
    by_id = {r["case_id"]: r for r in run.records}
    assert by_id[IDS[3]]["retrieved_chunks"] == []  # DeepEval's "" / ragas' []: nothing retrieved
    assert [c["chunk_id"] for c in by_id[IDS[1]]["retrieved_chunks"]] == ["c2", "c4", "c5"]  # top 3
    assert run.warnings == [f"{path}: 1 answer-only sample(s) left out ({ANSWER_AT[name]}): the "
                            "run's task is retrieval, which reads the retrieval samples"]


@pytest.mark.parametrize("name", WRITTEN)
def test_a_mixed_file_answers_a_freeform_run_with_its_answer_only_samples(tmp_path, capsys, name):
    if name.endswith("_hf"):  # a saved HF folder is read by datasets (the hf extra)
        pytest.importorskip("datasets")
    path = HERE / name
    code, err = cli(capsys, "run", str(path), "--responses", str(path), "--task", "freeform",
                    "--out", str(tmp_path / "runs"))
    assert code == 0, err
    assert f"{path}: 4 retrieval sample(s) left out (" in err
    assert "the run's task is freeform, which reads the answer-only samples" in err
    run = qe.evaluate(str(path), responses=str(path), task="freeform", out=tmp_path / "api",
                      progress=False)
    assert run.case_table()["verdict"].to_dict() == {ANSWER_ID: "pass"}


@pytest.mark.parametrize("name", ["ragas_testset.csv", "ragas_testset.jsonl"])
def test_a_ragas_testset_is_a_suite(tmp_path, name):
    run = qe.evaluate(str(HERE / name), responses=str(HERE / "ragas_mixed.jsonl"),
                      corpus=str(CORPUS), k=3, out=tmp_path / "runs", progress=False)
    assert run.results.vector("recall@3") == pytest.approx(RECALL3)
    assert run.results.vector("hit_rate@3") == pytest.approx(HIT3)


def test_a_context_holding_the_delimiter_is_one_clear_error_with_the_corpus(capsys):
    """DeepEval joined ["2020 | 5 million", "Revenue grew in 2021."] into one text: with the
    corpus holding the first, the split is proven ambiguous (validate and run alike)."""
    suite, corpus = HERE / "deepeval_pipe.jsonl", HERE / "corpus_pipe.jsonl"
    code, err = cli(capsys, "validate", str(suite), "--corpus", str(corpus))
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {suite}:1: context: a '|'-joined list that cannot be "
                               "read unambiguously: the corpus's chunk 't1' holds '|'")


def test_an_empty_item_in_a_joined_list_is_refused():
    rec = Record({"context": "a||b"}, {"line": 3})
    with pytest.raises(InputError) as err:
        text_list(rec, "context", Path("g.jsonl"), joined="|")
    assert str(err.value).startswith("g.jsonl:3: context: an empty item in a '|'-joined list")
    assert text_list(Record({"context": ""}, {"line": 1}), "context", Path("g.jsonl"),
                     joined="|") == []
    assert text_list(Record({"context": "a|b"}, {"line": 1}), "context", Path("g.jsonl"),
                     joined="|") == ["a", "b"]


# --- Hugging Face datasets and pandas, written here ----------------------------------------------
HF_CHUNKS = {"h1": "Paris, the capital, lies on the Seine.",
             "h2": "It's 'quoted' \"twice\" here.",
             "h3": "Lyon is a city.",
             "h4": "Marseille is a port on the Mediterranean Sea, the oldest city of France."}
H = HF_CHUNKS
HF_ROWS = {
    "user_input": ["Where is Paris?", "What is quoted?", "Largest planet?"],
    "reference_contexts": [[H["h1"], H["h4"]], [H["h2"]], None],
    "reference": ["On the Seine", "It", "Jupiter"],
    # long enough that numpy wraps the print over lines
    "retrieved_contexts": [[H["h3"], H["h4"], H["h2"], H["h1"]], [H["h1"], H["h3"]], None],
    "response": ["On the Seine", "It", "Jupiter"],
}
HF_IDS = [qa_pair_id("", "Where is Paris?", "On the Seine"), qa_pair_id("", "What is quoted?", "It")]
# Where is Paris?: h4 at 2, h1 at 4 -> recall@3 1/2, hit 1; What is quoted?: h2 not retrieved
HF_RECALL3 = dict(zip(HF_IDS, [0.5, 0.0], strict=True))
HF_HIT3 = dict(zip(HF_IDS, [1.0, 0.0], strict=True))


def hf_files(tmp_path: Path) -> dict[str, Path]:
    import datasets
    import pandas as pd

    datasets.disable_progress_bars()  # they write to stderr
    ds = datasets.Dataset.from_dict(HF_ROWS)
    out = {"parquet": tmp_path / "ds.parquet", "csv": tmp_path / "ds.csv",
           "jsonl": tmp_path / "ds.jsonl", "json": tmp_path / "ds.json",
           "folder": tmp_path / "ds_saved", "pandas_csv": tmp_path / "pd.csv",
           "to_pandas_csv": tmp_path / "to_pandas.csv"}
    ds.to_parquet(str(out["parquet"]))
    ds.to_csv(str(out["csv"]), index=False)
    ds.to_json(str(out["jsonl"]))
    ds.to_json(str(out["json"]), lines=False)
    ds.save_to_disk(str(out["folder"]))
    pd.DataFrame(HF_ROWS).to_csv(out["pandas_csv"], index=False)  # Python list reprs
    ds.to_pandas().to_csv(out["to_pandas_csv"], index=False)  # numpy prints again
    (tmp_path / "corpus.jsonl").write_text("".join(
        json.dumps({"chunk_id": k, "content": v}) + "\n" for k, v in HF_CHUNKS.items()))
    return out


def test_hf_to_csv_writes_numpy_prints(tmp_path):
    """What the reader must read: items separated by white space alone, lines wrapped."""
    text = hf_files(tmp_path)["csv"].read_text()
    assert "'Paris, the capital, lies on the Seine.' 'Lyon is a city.'" in text and "\n 'Marseille is" in text


@pytest.mark.parametrize("kind", ["csv", "jsonl", "json", "folder", "pandas_csv",
                                  "to_pandas_csv"])
def test_a_dataset_scores_the_same_from_every_format_it_is_saved_in(tmp_path, kind):
    """hit_rate@3 / recall@3 from each format equal the Parquet file's (and the hand-computed
    values); before, HF's to_csv joined each numpy-printed list into one text (here: "matches
    no chunk of the corpus"; without a corpus, a wrong figure)."""
    files = hf_files(tmp_path)
    corpus = str(tmp_path / "corpus.jsonl")
    figures = {}
    for name in ("parquet", kind):
        run = qe.evaluate(str(files[name]), responses=str(files[name]), task="retrieval",
                          corpus=corpus, k=3, out=tmp_path / f"runs_{name}", progress=False)
        figures[name] = (run.results.vector("recall@3"), run.results.vector("hit_rate@3"),
                         run.overall["recall@3"], run.overall["hit_rate@3"])
    assert figures[kind] == figures["parquet"]
    assert figures[kind][0] == pytest.approx(HF_RECALL3)
    assert figures[kind][1] == pytest.approx(HF_HIT3)
    assert figures[kind][2:] == pytest.approx((0.25, 0.5))


def test_a_numpy_print_cut_short_is_one_clear_error(tmp_path, capsys):
    import datasets

    datasets.disable_progress_bars()  # they write to stderr
    many = [f"context {i}" for i in range(1001)]  # numpy prints ... past 1,000 items
    path = tmp_path / "long.csv"
    datasets.Dataset.from_dict({"user_input": ["q", "r"], "reference_contexts": [["a"], many],
                                "reference": ["x", "y"]}).to_csv(str(path), index=False)
    assert "..." in path.read_text()
    code, err = cli(capsys, "validate", str(path))
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {path}:3: reference_contexts: a list printed cut short "
                               "with '...'")


def test_a_saved_folder_of_own_lines_is_responses(tmp_path):
    import datasets

    suite = tmp_path / "samples.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "s1", "input": "2+2?", "target": "4"}, {"id": "s2", "input": "Sky?",
                                                        "target": "blue"}]))
    folder = tmp_path / "answers"
    datasets.Dataset.from_list([{"case_id": "s1", "response": "4"},
                                {"case_id": "s2", "response": "green"}]).save_to_disk(str(folder))
    run = qe.evaluate(str(suite), responses=str(folder), out=tmp_path / "runs", progress=False)
    assert run.case_table()["verdict"].to_dict() == {"s1": "pass", "s2": "fail"}


# --- the list-cell rule against the writers' own prints ------------------------------------------
TEXTS = st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                         max_size=30), max_size=12)


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_list_cell_reads_numpy_prints_and_python_reprs_back(texts):
    """Oracle: the list printed. numpy's print (HF's to_csv), Python's repr (pandas' to_csv)
    and JSON each read back to exactly the items."""
    assert list_cell(str(np.array(texts, dtype=object))) == texts
    if texts:  # numpy's own text dtype (an empty list is a float array)
        assert list_cell(str(np.array(texts))) == texts
    assert list_cell(repr(texts)) == texts
    assert list_cell(json.dumps(texts)) == texts


@pytest.mark.parametrize("cell", ["['a', 'b' 'c']", "['a' 'b', 'c']"])
def test_list_cell_refuses_mixed_separators(cell):
    with pytest.raises(ValueError, match="separated by commas in places"):
        list_cell(cell)


def test_list_cell_refuses_a_numpy_print_cut_short():
    cell = str(np.array([str(i) for i in range(1001)]))
    with pytest.raises(ValueError, match=r"cut short with '\.\.\.'"):
        list_cell(cell)


def test_samples_without_reference_contexts_still_answer_both_tasks(tmp_path):
    """A ragas file after a run with no reference contexts (the suite is another file):
    its samples hold retrieved contexts and a response, so both tasks read every one."""
    rows = [json.loads(line) for line in (HERE / "ragas_mixed.jsonl").read_text().splitlines()]
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "reference_contexts"})
                               + "\n" for r in rows[:4]))
    run = qe.evaluate(str(HERE / "ragas_testset.jsonl"), responses=str(outputs),
                      corpus=str(CORPUS), k=3, out=tmp_path / "runs", progress=False)
    assert run.results.vector("recall@3") == pytest.approx(RECALL3)
    assert run.warnings == []
    suite = tmp_path / "answers.jsonl"
    suite.write_text("".join(json.dumps({"user_input": q, "reference": a}) + "\n"
                             for q, a in QUESTIONS))
    run = qe.evaluate(str(suite), responses=str(outputs), task="freeform",
                      out=tmp_path / "runs2", progress=False)
    # responses Paris, Berlin and Madrid, Vienna, I do not know
    assert run.case_table()["verdict"].to_dict() == dict(zip(IDS, ["pass", "pass", "fail", "fail"],
                                                             strict=True))
    assert run.warnings == []


PIECES = st.text(alphabet="ab |\u00a0", max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=8), st.lists(PIECES, max_size=6))
def test_the_chunk_found_within_a_joined_text_is_the_brute_force_one(contents, parts):
    """Oracle: the first chunk in corpus order whose normalised text holds '|' and is a
    substring of the normalised text (tested chunk by chunk)."""
    from queryeval.suite.foreign.contexts import ChunkIndex, normalise
    from queryeval.suite.retrieval import Chunk

    chunks = [Chunk(chunk_id=f"c{i}", content=c) for i, c in enumerate(contents)]
    index = ChunkIndex(chunks)
    text = "|".join(parts)
    firsts = list(index.by_text.values())  # the first chunk of each normalised text
    expected = next((c for c in firsts if "|" in normalise(c.content)
                     and normalise(c.content) in normalise(text)), None)
    assert index.holding("|", text) == expected
