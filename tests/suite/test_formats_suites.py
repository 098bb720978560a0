"""Foreign suites (docs/formats.md) loaded into cases equal to hand-written ones.

Each fixture is written here in its tool's documented shape; where the tool installs
offline (datasets, inspect_ai) the fixture is written or read through the real library."""

from __future__ import annotations

import hashlib
import json

import pytest

from queryeval.errors import InputError
from queryeval.suite.loader import load_suite
from queryeval.suite.models import Case
from queryeval.suite.retrieval import qa_pair_id


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324


PARIS = "Paris is the capital of France."
BERLIN = "Berlin  is the capital\nof Germany."  # two spaces and a newline in the corpus
CORPUS = [{"chunk_id": "c1", "content": PARIS}, {"chunk_id": "c2", "content": BERLIN},
          {"chunk_id": "c3", "content": "Madrid is the capital of Spain."}]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    return write_jsonl(tmp_path / "corpus.jsonl", CORPUS)


def retrieval_case(cid, question, relevant, answer="", **single):
    target = {"relevant": relevant, "answer": answer, **single}
    return Case(id=cid, name=question[:80],
                conversation=[{"role": "user", "content": question,
                               "target": {"retrieval": target}}])


def reference_case(cid, question, answer, aliases=(), metadata=None, turns=None):
    turns = turns or [{"role": "user", "content": question}]
    turns[-1] = {**turns[-1], "target": {"reference": {"answer": answer,
                                                       "aliases": list(aliases)}}}
    return Case(id=cid, name=question[:80], metadata=metadata or {}, conversation=turns)


RAGAS_ROWS = [
    {"user_input": "Capital of France?", "retrieved_contexts": [PARIS],
     "reference_contexts": [PARIS], "response": "Paris", "reference": "Paris"},
    # whitespace differs from the corpus (one space, no newline); the fullwidth 'Ｂ' is NFKC 'B'
    {"user_input": "Capital of Germany?", "retrieved_contexts": [],
     "reference_contexts": ["\uff22erlin is the capital of Germany. ", PARIS],
     "response": "Berlin", "reference": "Berlin"},
    {"user_input": "Largest planet?", "reference": "Jupiter"},
]


def expected_ragas(with_corpus: bool) -> list[Case]:
    if with_corpus:
        rel1 = [{"chunk_id": "c1", "content_hash": md5(PARIS)}]
        rel2 = [{"chunk_id": "c2", "content_hash": md5(BERLIN)},
                {"chunk_id": "c1", "content_hash": md5(PARIS)}]
        single = {"chunk_id": "c1", "content_hash": md5(PARIS)}
    else:  # each context is its own text's MD5
        rel1 = [{"content_hash": md5(PARIS)}]
        rel2 = [{"content_hash": md5("\uff22erlin is the capital of Germany. ")},
                {"content_hash": md5(PARIS)}]
        single = {"content_hash": md5(PARIS)}
    return [
        retrieval_case(qa_pair_id("", "Capital of France?", "Paris"), "Capital of France?",
                       rel1, "Paris", **single),
        retrieval_case(qa_pair_id("", "Capital of Germany?", "Berlin"), "Capital of Germany?",
                       rel2, "Berlin"),
        reference_case(qa_pair_id("", "Largest planet?", "Jupiter"), "Largest planet?",
                       "Jupiter"),
    ]


@pytest.mark.parametrize("with_corpus", [True, False])
def test_ragas_jsonl_suite(tmp_path, corpus, with_corpus):
    path = write_jsonl(tmp_path / "ragas.jsonl", RAGAS_ROWS)
    suite = load_suite(path, corpus=corpus if with_corpus else None)
    assert suite.cases == expected_ragas(with_corpus)
    assert suite.task_kinds() == {"retrieval", "freeform"}  # the answer-only sample: freeform


def test_ragas_csv_as_pandas_writes_it(tmp_path, corpus):
    """ragas' ``EvaluationDataset.to_csv`` is pandas' ``to_csv``: list columns become Python
    list literals, a missing value an empty cell."""
    pd = pytest.importorskip("pandas")
    path = tmp_path / "ragas.csv"
    pd.DataFrame(RAGAS_ROWS).to_csv(path, index=False)
    assert "['Paris is the capital of France.']" in path.read_text()
    assert load_suite(path, corpus=corpus).cases == expected_ragas(True)


def test_ragas_context_matching_no_chunk_names_record_and_field(tmp_path, corpus):
    rows = [RAGAS_ROWS[0], {**RAGAS_ROWS[1], "reference_contexts": [PARIS, "Bonn, once."]}]
    path = write_jsonl(tmp_path / "ragas.jsonl", rows)
    with pytest.raises(InputError) as err:
        load_suite(path, corpus=corpus)
    assert (err.value.line, err.value.field) == (2, "reference_contexts[1]")
    assert "matches no chunk" in err.value.message


def test_ragas_context_matching_several_chunks_is_the_first(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        {"chunk_id": "a", "content": "Same  text."}, {"chunk_id": "b", "content": "Same text."}])
    path = write_jsonl(tmp_path / "ragas.jsonl", [
        {"user_input": "q", "reference_contexts": ["Same text."], "reference": "r"}])
    (case,) = load_suite(path, corpus=corpus).cases
    assert case.conversation[0].target.retrieval.relevant[0].chunk_id == "a"
    assert case.conversation[0].target.retrieval.content_hash == md5("Same  text.")


def test_ragas_sample_with_nothing_to_score(tmp_path):
    path = write_jsonl(tmp_path / "ragas.jsonl", [{"user_input": "q", "response": "r"}])
    with pytest.raises(InputError, match="nothing to score") as err:
        load_suite(path)
    assert err.value.line == 1


DEEPEVAL = [
    {"input": "Capital of France?", "expected_output": "Paris", "context": [PARIS],
     "actual_output": None, "retrieval_context": None},
    {"input": "Largest planet?", "expected_output": "Jupiter"},
]


def test_deepeval_goldens_json(tmp_path, corpus):
    path = tmp_path / "goldens.json"
    path.write_text(json.dumps(DEEPEVAL))
    assert load_suite(path, corpus=corpus).cases == [
        retrieval_case(qa_pair_id("", "Capital of France?", "Paris"), "Capital of France?",
                       [{"chunk_id": "c1", "content_hash": md5(PARIS)}], "Paris",
                       chunk_id="c1", content_hash=md5(PARIS)),
        reference_case(qa_pair_id("", "Largest planet?", "Jupiter"), "Largest planet?",
                       "Jupiter"),
    ]


INSPECT = [
    {"id": "s1", "input": "What is 2 + 2?", "target": "4", "metadata": {"level": 1}},
    {"id": 2, "input": [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": [{"type": "text", "text": "Colour of the sky?"}]}],
     "target": ["blue", "Blue"]},
]


def test_inspect_samples_as_inspect_reads_them(tmp_path):
    path = write_jsonl(tmp_path / "samples.jsonl", INSPECT)
    dataset = pytest.importorskip("inspect_ai.dataset")
    samples = list(dataset.json_dataset(str(path)))  # the fixture is inspect's own shape
    assert [s.target for s in samples] == ["4", ["blue", "Blue"]]
    assert load_suite(path).cases == [
        reference_case("s1", "What is 2 + 2?", "4", metadata={"level": 1}),
        reference_case("2", "Colour of the sky?", "blue", aliases=["Blue"], turns=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Colour of the sky?"}]),
    ]


def test_openai_evals_samples(tmp_path):
    path = write_jsonl(tmp_path / "samples.jsonl", [
        {"input": [{"role": "system", "content": "Answer."}, {"role": "user", "content": "1+1?"}],
         "ideal": ["2", "two"]}])
    assert load_suite(path).cases == [reference_case(
        qa_pair_id("", "1+1?", "2"), "1+1?", "2", aliases=["two"],
        turns=[{"role": "system", "content": "Answer."}, {"role": "user", "content": "1+1?"}])]


def test_hf_dataset_saved_to_disk_and_parquet(tmp_path, corpus):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(RAGAS_ROWS[:2])
    ds.save_to_disk(str(tmp_path / "saved"))
    assert load_suite(tmp_path / "saved", corpus=corpus).cases == expected_ragas(True)[:2]
    ds.to_parquet(str(tmp_path / "ragas.parquet"))
    assert load_suite(tmp_path / "ragas.parquet", corpus=corpus).cases == expected_ragas(True)[:2]
    datasets.DatasetDict({"test": ds, "train": ds}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(InputError, match="DatasetDict"):
        load_suite(tmp_path / "dd")
    assert load_suite(tmp_path / "dd" / "test", corpus=corpus).cases == expected_ragas(True)[:2]


def test_hf_style_data_json_and_own_cases_array(tmp_path, corpus):
    own = [{"id": "x", "conversation": [{"role": "user", "content": "q", "target": {
        "retrieval": {"chunk_id": "c1", "content_hash": md5(PARIS)}}}]}]
    (tmp_path / "cases.json").write_text(json.dumps(own))
    (tmp_path / "data.json").write_text(json.dumps({"data": RAGAS_ROWS[:1], "version": "1"}))
    assert load_suite(tmp_path / "cases.json").cases == [Case.model_validate(own[0])]
    assert load_suite(tmp_path / "data.json", corpus=corpus).cases == expected_ragas(True)[:1]


def write_beir(folder, qrels="query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq1\td3\t0\nq2\td3\t1\n"):
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", [
        {"_id": "d1", "title": "France", "text": PARIS},
        {"_id": "d2", "title": "Germany", "text": BERLIN},
        {"_id": "d3", "title": "Spain", "text": "Madrid is the capital of Spain."}])
    write_jsonl(folder / "queries.jsonl", [{"_id": "q0", "text": "unjudged"},
                                           {"_id": "q2", "text": "Spain?"},
                                           {"_id": "q1", "text": "Capitals?"}])
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text(qrels)
    return folder


def test_beir_folder_graded(tmp_path):
    folder = write_beir(tmp_path / "beir")
    suite = load_suite(folder)
    spain = md5("Madrid is the capital of Spain.")
    assert suite.cases == [  # queries.jsonl order; q0 has no judgement, d3 of q1 scores 0
        retrieval_case("q2", "Spain?", [{"chunk_id": "d3", "content_hash": spain,
                                         "relevance": 1}], chunk_id="d3", content_hash=spain),
        retrieval_case("q1", "Capitals?", [
            {"chunk_id": "d1", "content_hash": md5(PARIS), "relevance": 2},
            {"chunk_id": "d2", "content_hash": md5(BERLIN), "relevance": 1}]),
    ]
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    assert [c.id for c in load_suite(folder / "qrels" / "dev.tsv").cases] == ["q1"]


def test_beir_judged_document_not_in_corpus(tmp_path):
    folder = write_beir(tmp_path / "beir", "query-id\tcorpus-id\tscore\nq1\td9\t1\n")
    with pytest.raises(InputError, match="'d9' is not in corpus.jsonl") as err:
        load_suite(folder)
    assert err.value.line == 2


@pytest.mark.parametrize("with_corpus", [True, False])
def test_trec_qrels_with_queries(tmp_path, corpus, with_corpus):
    (tmp_path / "queries.tsv").write_text("7\tCapital of France?\n8\tCapital of Germany?\n9\tnone\n")
    (tmp_path / "qrels.txt").write_text("7 0 c1 1\n8 0 c2 2\n8 0 c1 1\n9 0 c3 0\n")
    suite = load_suite(tmp_path / "queries.tsv", labels=tmp_path / "qrels.txt",
                       corpus=corpus if with_corpus else None)

    def rel(cid, text, grade):
        return {"chunk_id": cid, "relevance": grade,
                **({"content_hash": md5(text)} if with_corpus else {})}

    assert suite.cases == [
        retrieval_case("7", "Capital of France?", [rel("c1", PARIS, 1)], chunk_id="c1",
                       **({"content_hash": md5(PARIS)} if with_corpus else {})),
        retrieval_case("8", "Capital of Germany?", [rel("c2", BERLIN, 2), rel("c1", PARIS, 1)]),
        # judged only non-relevant: a question with nothing relevant (trec_eval counts it)
        retrieval_case("9", "none", [rel("c3", "Madrid is the capital of Spain.", 0)]),
    ]


def test_questions_xlsx_several_chunks_per_question(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["question", "answer", "document_name", "dataset", "chunk_id", "content_hash"])
    ws.append(["Capitals?", "Paris, Berlin", "geo.pdf", "geo", "c1", md5(PARIS)])
    ws.append(["Capitals?", "Paris, Berlin", "geo.pdf", "geo", "c2", ""])
    ws.append(["Spain?", "Madrid", "geo.pdf", "geo", "c3", ""])
    wb.save(tmp_path / "questions.xlsx")
    cases = load_suite(tmp_path / "questions.xlsx").cases
    first = Case(id=qa_pair_id("geo", "Capitals?", "Paris, Berlin"), name="Capitals?",
                 tags=["geo"], metadata={"dataset": "geo"},
                 conversation=[{"role": "user", "content": "Capitals?", "target": {"retrieval": {
                     "relevant": [{"chunk_id": "c1", "content_hash": md5(PARIS), "relevance": 1},
                                  {"chunk_id": "c2", "relevance": 1}],
                     "answer": "Paris, Berlin", "dataset": "geo", "document_name": "geo.pdf"}}}])
    assert cases[0] == first
    assert cases[1].conversation[0].target.retrieval.chunk_id == "c3"
    assert len(cases) == 2


def test_inspect_numeric_target_and_bad_types(tmp_path):
    path = write_jsonl(tmp_path / "samples.jsonl", [{"id": "n", "input": "2+2?", "target": 4}])
    assert load_suite(path).cases[0].conversation[0].target.reference.answer == "4"
    path = write_jsonl(tmp_path / "bad.jsonl", [{"id": "n", "input": "q", "target": {"a": 1}}])
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert (err.value.line, err.value.field) == (1, "target")
    path = write_jsonl(tmp_path / "bad2.jsonl", [{"user_input": "q", "reference": "r",
                                                  "reference_contexts": ["ok", 3]}])
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert (err.value.line, err.value.field) == (1, "reference_contexts[1]")


def test_ragas_v01_names(tmp_path):
    """ragas 0.1's columns (question, contexts, answer, ground_truth), as in HF datasets built
    for it: a suite of answer-only samples, and recorded outputs."""
    datasets = pytest.importorskip("datasets")
    rows = [{"question": "Capital of France?", "contexts": [PARIS], "answer": "Paris",
             "ground_truth": "Paris"}]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "v01"))
    assert load_suite(tmp_path / "v01").cases == [
        reference_case(qa_pair_id("", "Capital of France?", "Paris"), "Capital of France?",
                       "Paris")]
    from queryeval.suite.foreign import recorded_records

    path = write_jsonl(tmp_path / "out.jsonl", rows)
    assert recorded_records(path) == [(1, {
        "case_id": qa_pair_id("", "Capital of France?", "Paris"),
        "retrieved_chunks": [{"chunk_id": "", "content": PARIS}], "response": "Paris",
        "answer": "Paris"})]
