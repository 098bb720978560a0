"""Seed 002 end to end: qa_pair_id, content-hash matching, rank_if_found, one batch per k from
one retrieval pass, min_score after the cut, avg_score_incorrect, sampling and dataset filter
as the reference does them, the CSV columns, and the extra ranking metrics vs pytrec_eval."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import random
import uuid
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.suite import load_suite
from queryeval.suite.retrieval import qa_pair_id, read_corpus
from queryeval.tasks.base import get_task

CHUNKS = {
    "c1": ("Food assistance is available to families with low income.", "food.pdf", "A"),
    "c2": ("Bus fares are two dollars for adults and one dollar for seniors.", "fares.pdf", "B"),
    "c3": ("Housing vouchers help pay rent in private apartments.", "housing.pdf", "A"),
    "c4": ("Bikes are allowed on the front rack of every bus.", "bikes.pdf", "B"),
    "c5": ("Offices are open Monday to Friday from nine to five.", "hours.pdf", "A"),
}
QUESTIONS = [  # question, answer, expected chunk
    ("Who can get food assistance?", "low income families", "c1"),
    ("How much is a bus fare for seniors?", "one dollar", "c2"),
    ("Can I bring my bicycle, please?", "yes, front rack", "c4"),
    ("What helps with \"rent\"?", "housing vouchers", "c3"),
    ("When are offices open?", "weekdays", "c5"),
]


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


@pytest.fixture
def data(tmp_path: Path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"chunk_id": cid, "content": t, "document_name": d, "dataset": ds}) + "\n"
                              for cid, (t, d, ds) in CHUNKS.items()))
    questions = tmp_path / "questions.csv"
    with questions.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer", "document_name", "dataset", "chunk_id", "content_hash"])
        for q, a, cid in QUESTIONS:
            t, d, ds = CHUNKS[cid]
            w.writerow([q, a, d, ds, cid, md5(t)])
    return tmp_path, questions, corpus


def batches(out: Path) -> dict[int, dict]:
    """k -> {batch, metrics, records, csv rows}"""
    found = {}
    for b in out.rglob("batch_*.json"):
        batch = json.loads(b.read_text())
        bid = batch["batch_id"]
        folder = b.parent
        found[batch["evaluation_config"]["k_value"]] = {
            "batch": batch,
            "metrics": json.loads((folder / f"metrics_{bid}.json").read_text()),
            "records": [json.loads(x) for x in (folder / f"results_{bid}.jsonl").read_text().splitlines()],
            "csv": list(csv.DictReader((folder / f"results_{bid}.csv").open())),
        }
    return found


def write_responses(path: Path, lists: dict[str, list[tuple[str, float]]]) -> Path:
    ids = {q: qa_pair_id(CHUNKS[c][2], q, a) for q, a, c in QUESTIONS}
    with path.open("w") as fh:
        for q, ranked in lists.items():
            chunks = [{"chunk_id": cid, "score": s, "content": CHUNKS[cid][0]} for cid, s in ranked]
            fh.write(json.dumps({"qa_pair_id": ids[q], "retrieved_chunks": chunks}) + "\n")
    return path


RANKED = {  # expected chunk at rank 1, 2, 3, absent, absent
    QUESTIONS[0][0]: [("c1", 0.9), ("c3", 0.5), ("c5", 0.1)],
    QUESTIONS[1][0]: [("c4", 0.8), ("c2", 0.7), ("c1", 0.2)],
    QUESTIONS[2][0]: [("c2", 0.6), ("c1", 0.4), ("c4", 0.3)],
    QUESTIONS[3][0]: [("c1", 0.35), ("c5", 0.3), ("c2", 0.1)],
    QUESTIONS[4][0]: [],
}


def test_qa_pair_id_is_the_reference_uuid():
    expected = uuid.UUID(bytes=hashlib.md5(b"Imagine LA||What are the eligibility requirements?||Income below 200%").digest())
    got = qa_pair_id("Imagine LA", "What are the eligibility requirements?", "Income below 200%")
    assert got == str(expected) == "7ac599b6-0801-74a6-114a-03a335e7ab19"


def test_id_column_overrides_and_bad_rows_name_the_line(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text("question,answer,document_name,dataset,chunk_id,content_hash,id\n"
                 f"q one,a,d,A,c1,{md5('x')},my-id\n"
                 f"q two,a,d,A,c1,{md5('y')},\n")
    suite = load_suite(p)
    assert suite.cases[0].id == "my-id" and suite.cases[1].id == qa_pair_id("A", "q two", "a")
    p.write_text("question,answer,document_name,dataset,chunk_id,content_hash\n"
                 f"q,a,d,A,c1,{md5('x')}\nq2,a,d,A,c1,nothex\n")
    with pytest.raises(InputError, match=r"q.csv:3: content_hash: not an MD5 hex digest"):
        load_suite(p)
    p.write_text(f"question,answer,dataset,content_hash\nq,a,A,{md5('x')}\n")
    with pytest.raises(InputError, match=r"q.csv:1: missing columns document_name, chunk_id \(a retrieval questions CSV needs"):
        load_suite(p)
    # two rows of one question (same dataset, question, answer) are one case with two
    # relevant chunks (issue 26); two questions with one explicit id are a duplicate
    p.write_text("question,answer,document_name,dataset,chunk_id,content_hash\n"
                 f"q,a,d,A,c1,{md5('x')}\nq,a,d,A,c2,{md5('y')}\n")
    (case,) = load_suite(p).cases
    assert [r.chunk_id for r in case.conversation[0].target.retrieval.relevant] == ["c1", "c2"]
    p.write_text("question,answer,document_name,dataset,chunk_id,content_hash,id\n"
                 f"q,a,d,A,c1,{md5('x')},x1\nq2,a,d,A,c2,{md5('y')},x1\n")
    with pytest.raises(InputError, match=r"q.csv:3: id: duplicate qa_pair_id x1 .* line 2"):
        load_suite(p)


def test_corpus_readers_and_errors(tmp_path, data):
    _, _, corpus = data
    chunks = read_corpus(corpus)
    assert [c.chunk_id for c in chunks] == list(CHUNKS) and chunks[0].content_hash == md5(CHUNKS["c1"][0])
    as_csv = tmp_path / "c.csv"
    with as_csv.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["chunk_id", "content", "dataset", "page"])
        w.writerow(["x1", "text, with comma", "A", "3"])
    (c,) = read_corpus(as_csv)
    assert (c.content, c.metadata) == ("text, with comma", {"page": "3"})
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"chunk_id": ["p1", "p2"], "content": ["a", "b"]}), tmp_path / "c.parquet")
    assert [c.chunk_id for c in read_corpus(tmp_path / "c.parquet")] == ["p1", "p2"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"chunk_id": "a", "content": "x"}\n{"chunk_id": "a", "content": "y"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: chunk_id: duplicate chunk_id 'a' \(first at line 1\)"):
        read_corpus(bad)
    bad.write_text('{"content": "x"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: chunk_id: field required"):
        read_corpus(bad)


def test_recorded_retrievals_one_batch_per_k(data):
    tmp, questions, corpus = data
    responses = write_responses(tmp / "r.jsonl", RANKED)
    out = tmp / "out"
    assert main(["run", str(questions), "--responses", str(responses), "--k", "1,2,3",
                 "--out", str(out), "-q"]) == 0
    got = batches(out)
    assert sorted(got) == [1, 2, 3]
    # recall@k: ranks are 1, 2, 3, none, none
    assert [got[k]["metrics"]["overall_metrics"]["recall_at_k"] for k in (1, 2, 3)] == [0.2, 0.4, 0.6]
    o3 = got[3]["metrics"]["overall_metrics"]
    assert o3["mrr@3"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 5)
    assert o3["ndcg@3"] == pytest.approx((1 + 1 / math.log2(3) + 1 / 2) / 5)
    assert o3["precision@3"] == pytest.approx((1 + 1 + 1) / 3 / 5)
    assert (o3["total_questions"], o3["successful_retrievals"]) == (5, 3)
    # avg_score_incorrect at k=1: failed questions that retrieved something: q2 (0.8), q3 (0.6), q4 (0.35)
    a1 = got[1]["metrics"]["overall_metrics"]["incorrect_retrievals_analysis"]
    assert a1["incorrect_retrievals_count"] == 4
    assert a1["avg_score_incorrect"] == pytest.approx((0.8 + 0.6 + 0.35) / 3)
    # failures per dataset at k=1: A: q4, q5 (2); B: q2, q3 (2) -> tie broken by name
    assert a1["datasets_with_incorrect_retrievals"] == ["A", "B"]
    assert got[1]["metrics"]["dataset_metrics"]["A"] == pytest.approx(
        {"recall_at_k": 1 / 3, "sample_size": 3, "avg_score_incorrect": 0.35, "mrr@1": 1 / 3,
         "ndcg@1": 1 / 3, "hit_rate@1": 1 / 3, "precision@1": 1 / 3, "map@1": 1 / 3})
    rec = {r["question"]: r for r in got[3]["records"]}
    assert rec[QUESTIONS[2][0]]["evaluation_result"]["rank_if_found"] == 3
    assert rec[QUESTIONS[4][0]]["evaluation_result"] == {
        "correct_chunk_retrieved": False, "rank_if_found": None, "retrieval_time_ms": pytest.approx(0, abs=50)}
    assert rec[QUESTIONS[0][0]]["expected_chunk"] == {"name": "food.pdf", "source": "A", "chunk_id": "c1",
                                                       "content_hash": md5(CHUNKS["c1"][0])}
    # the seed's CSV columns, one row per retrieved chunk (and one for a question with none),
    # then the case's cluster (every run's results CSV ends with it)
    rows = got[3]["csv"]
    assert list(rows[0]) == [
        "qa_pair_id", "question", "rank", "similarity_score", "retrieved_chunk_id", "retrieved_content",
        "retrieved_content_hash", "expected_chunk_content_hash", "expected_chunk_name",
        "expected_chunk_source", "expected_chunk_id", "is_correct_chunk",
        "evaluation_result_correct_chunk_retrieved", "evaluation_result_rank_if_found",
        "evaluation_result_retrieval_time_ms", "cluster"]
    assert len(rows) == 3 * 4 + 1
    derived = {got[k]["batch"]["derived_from"] for k in (1, 2)}
    assert derived == {got[3]["batch"]["batch_id"]}


def test_one_retrieval_pass_serves_every_k_and_latency_is_per_question(data):
    tmp, questions, corpus = data
    log = tmp / "calls.jsonl"
    mod = tmp / "sys.py"
    mod.write_text(
        "import json, time\n"
        "def retrieve(req):\n"
        f"    open({str(log)!r}, 'a').write(json.dumps({{'k': req['k']}}) + '\\n')\n"
        "    time.sleep(0.02)\n"
        "    return {'retrieved_chunks': [{'chunk_id': 'c1', 'score': 1.0}, {'chunk_id': 'c4', 'score': 0.5}]}\n")
    out = tmp / "out"
    assert main(["run", str(questions), "--system", f"python:{mod}:retrieve", "--corpus", str(corpus),
                 "--k", "1,2", "--out", str(out), "-q", "-c", "1"]) == 0
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert calls == [{"k": 2}] * 5  # one pass at the largest k
    got = batches(out)
    assert got[1]["metrics"]["overall_metrics"]["recall_at_k"] == 0.2  # c1 for q1
    assert got[2]["metrics"]["overall_metrics"]["recall_at_k"] == 0.4  # and c4 for q3
    times = [r["evaluation_result"]["retrieval_time_ms"] for r in got[2]["records"]]
    assert all(t >= 20 for t in times)
    # chunk ids resolved through the corpus give contents and hashes
    assert got[2]["records"][0]["retrieved_chunks"][1]["content"] == CHUNKS["c4"][0]


def test_min_score_applies_after_the_cut(data):
    tmp, questions, _ = data
    responses = write_responses(tmp / "r.jsonl", RANKED)
    out = tmp / "out"
    assert main(["run", str(questions), "--responses", str(responses), "--k", "2", "--min-score", "0.65",
                 "--out", str(out), "-q"]) == 0
    (only,) = batches(out).values()
    # top-2 then drop < 0.65: q1 keeps c1 (hit); q2 keeps c4 (0.8), drops c2 (0.7? no: 0.7 >= 0.65) -> hit at 2
    recs = {r["question"]: r for r in only["records"]}
    assert [c["chunk_id"] for c in recs[QUESTIONS[1][0]]["retrieved_chunks"]] == ["c4", "c2"]
    assert [c["chunk_id"] for c in recs[QUESTIONS[2][0]]["retrieved_chunks"]] == []
    assert only["metrics"]["overall_metrics"]["recall_at_k"] == 0.4
    # a chunk above min_score beyond k never comes back: q3's c4 (0.3) stays out either way
    task = get_task("retrieval", {"k": [3], "min_score": 0.25})
    rec = task.rescore_record(recs[QUESTIONS[2][0]])
    assert rec["evaluation_result"]["rank_if_found"] == 3


def reference_sample(rows, fraction, seed):
    """The reference's stratified_sample, restated: global random seeded, per-dataset sample
    of max(1, int(n * fraction)) in first-appearance order, then one shuffle."""
    random.seed(seed)
    groups: dict = {}
    for r in rows:
        groups.setdefault(r["dataset"], []).append(r)
    out = []
    for g in groups.values():
        out.extend(random.sample(g, max(1, int(len(g) * fraction))))
    random.shuffle(out)
    random.seed()
    return out


def test_sampling_and_dataset_filter_follow_the_reference(tmp_path):
    p = tmp_path / "q.csv"
    rows = [{"question": f"question {i}", "answer": "a", "document_name": "d", "dataset": "ABC"[i % 3],
             "chunk_id": "c", "content_hash": md5(str(i))} for i in range(40)]
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    suite = load_suite(p)
    for frac, seed in ((0.25, 7), (0.05, 1), (0.5, 123)):
        task = get_task("retrieval", {"sampling": frac, "random_seed": seed})
        got = [c.conversation[0].content for c in task.select_cases(suite.cases)]
        assert got == [r["question"] for r in reference_sample(rows, frac, seed)]
    task = get_task("retrieval", {"sampling": 0.05, "random_seed": 3})
    assert len(task.select_cases(suite.cases)) == 3  # max(1, floor(13 or 14 * 0.05)) per dataset
    filtered = get_task("retrieval", {"dataset": ["B"], "sampling": 0.5, "random_seed": 5}).select_cases(suite.cases)
    b_rows = [r for r in rows if r["dataset"] == "B"]
    assert [c.conversation[0].content for c in filtered] == [r["question"] for r in reference_sample(b_rows, 0.5, 5)]
    assert len(get_task("retrieval", {"sampling": 1.0}).select_cases(suite.cases)) == 40
    assert len(get_task("retrieval", {"dataset": "all"}).select_cases(suite.cases)) == 40


def test_builtin_bm25_retriever_end_to_end(data):
    tmp, questions, corpus = data
    out = tmp / "out"
    assert main(["run", str(questions), "--corpus", str(corpus), "--k", "1,5", "--out", str(out), "-q"]) == 0
    got = batches(out)
    assert got[5]["metrics"]["overall_metrics"]["recall_at_k"] == 1.0  # 5 chunks, k=5
    assert 0.0 < got[1]["metrics"]["overall_metrics"]["recall_at_k"] <= 1.0
    assert got[5]["batch"]["evaluation_config"]["system"] is None


def test_malformed_outputs_are_recorded(data):
    tmp, questions, corpus = data
    mod = tmp / "bad.py"
    mod.write_text("def retrieve(req):\n    return {'retrieved_chunks': [{'chunk_id': 'nope', 'score': 1}]}\n")
    out = tmp / "out"
    # every call failed: the log and reports are written, and the exit code is 3
    assert main(["run", str(questions), "--system", f"python:{mod}:retrieve", "--corpus", str(corpus),
                 "--k", "3", "--out", str(out), "-q"]) == 3
    (only,) = batches(out).values()
    o = only["metrics"]["overall_metrics"]
    assert o["errors"] == 5 and o["errors_by_kind"] == {"malformed": 5} and o["recall_at_k"] == 0.0
    assert "not in the corpus" in only["records"][0]["error"]["message"]


def test_extra_metrics_equal_pytrec_eval_on_random_rankings(tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(11)
    task = get_task("retrieval", {"k": [10]})
    qrels, run, recs = {}, {}, []
    for i in range(200):
        docs = [f"d{j}" for j in range(30)]
        rng.shuffle(docs)
        ranked = docs[: rng.randint(0, 10)]
        gold = f"d{rng.randint(0, 29)}"
        qid = f"q{i}"
        qrels[qid] = {gold: 1}
        run[qid] = {d: float(100 - r) for r, d in enumerate(ranked)} or {"none": 0.0}
        rec = {"retrieved_chunks": [{"chunk_id": d, "score": float(100 - r), "content": d, "content_hash": md5(d)}
                                    for r, d in enumerate(ranked)],
               "expected_chunk": {"content_hash": md5(gold)}, "evaluation_result": {"retrieval_time_ms": 1.0}}
        recs.append(task.rescore_record(rec))
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "ndcg_cut.10", "P.10", "map_cut.10", "recall.10"})
    res = ev.evaluate(run)
    for i, rec in enumerate(recs):
        ref = res[f"q{i}"]
        s = rec["scores"]
        assert s["mrr@10"] == pytest.approx(ref["recip_rank"])
        assert s["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"])
        assert s["precision@10"] == pytest.approx(ref["P_10"])
        assert s["map@10"] == pytest.approx(ref["map_cut_10"])
        assert s["recall@10"] == pytest.approx(ref["recall_10"])


def test_upper_case_content_hash_matches_unless_hash_case_exact(data):
    """The reference compares hex digests as strings, so an upper-case ``content_hash`` never
    matches (recall 1/3 on this 3-question file); by default case is ignored (2/3), and
    ``--option hash_case=exact`` reproduces the reference."""
    tmp, _, _ = data
    questions = tmp / "upper.csv"
    with questions.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer", "document_name", "dataset", "chunk_id", "content_hash"])
        for i, (q, a, cid) in enumerate(QUESTIONS[:3]):
            t, d, ds = CHUNKS[cid]
            w.writerow([q, a, d, ds, cid, md5(t).upper() if i == 0 else md5(t)])
    ranked = {q: [(cid, 0.9)] for q, _, cid in QUESTIONS[:2]}  # q1 (upper) and q2 found
    ranked[QUESTIONS[2][0]] = [("c1", 0.5)]  # q3 missed
    responses = write_responses(tmp / "r.jsonl", ranked)
    for extra, recall in (([], 2 / 3), (["--option", "hash_case=exact"], 1 / 3)):
        out = tmp / f"out{len(extra)}"
        assert main(["run", str(questions), "--responses", str(responses), "--k", "5",
                     "--out", str(out), "-q", *extra]) == 0
        (only,) = batches(out).values()
        assert only["metrics"]["overall_metrics"]["recall_at_k"] == pytest.approx(recall)
