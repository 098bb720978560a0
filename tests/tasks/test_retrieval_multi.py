"""Seed 002 with several (graded) relevant chunks per question (issue 26, item 1): the
questions CSV grouping rule, chunk ids without hashes, hand-computed figures where recall@k
differs from hit_rate@k and MAP from MRR, equality with pytrec_eval, and the errors."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import random
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.suite import load_suite
from queryeval.suite.retrieval import qa_pair_id
from queryeval.tasks.base import get_task
from queryeval.tasks.retrieval.scoring import score_cut, score_cuts

L3 = math.log2(3)
CHUNKS = {f"c{i}": f"chunk number {i} about topic {i}" for i in range(1, 7)}
HEADER = ["question", "answer", "document_name", "dataset", "chunk_id", "content_hash", "relevance"]


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()  # noqa: S324


def write_csv(path: Path, rows: list[list], header=HEADER) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def chunk(cid: str, score: float) -> dict:
    return {"chunk_id": cid, "score": score, "content": CHUNKS[cid]}


@pytest.fixture
def multi(tmp_path: Path):
    """Four questions: Q1 three relevant chunks (c1, c3 by hash; c2 by id only), Q2 one by
    id only, Q3 graded (c5 relevance 2, c6 relevance 1), Q4 one by hash
    (missed)."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"chunk_id": c, "content": t}) + "\n" for c, t in CHUNKS.items()))
    questions = write_csv(tmp_path / "questions.csv", [
        ["Q1?", "a1", "d1.pdf", "A", "c1", md5(CHUNKS["c1"]), ""],
        ["Q1?", "a1", "d2.pdf", "A", "c2", "", ""],
        ["Q1?", "a1", "d1.pdf", "A", "c3", md5(CHUNKS["c3"]).upper(), "1"],
        ["Q2?", "a2", "d3.pdf", "A", "c4", "", ""],
        ["Q3?", "a3", "d5.pdf", "B", "c5", md5(CHUNKS["c5"]), "2"],
        ["Q3?", "a3", "d5.pdf", "B", "c6", md5(CHUNKS["c6"]), "1"],
        ["Q4?", "a4", "d3.pdf", "B", "c3", md5(CHUNKS["c3"]), ""],
    ])
    ids = {q: qa_pair_id(ds, q, a) for q, a, ds in
           [("Q1?", "a1", "A"), ("Q2?", "a2", "A"), ("Q3?", "a3", "B"), ("Q4?", "a4", "B")]}
    ranked = {
        "Q1?": [chunk("c4", 0.9), chunk("c2", 0.8), chunk("c1", 0.7)],
        "Q2?": [chunk("c4", 0.9), chunk("c5", 0.8), chunk("c6", 0.7)],
        "Q3?": [chunk("c6", 0.9), chunk("c1", 0.8), chunk("c5", 0.7)],
        "Q4?": [chunk("c1", 0.9), chunk("c2", 0.8)],
    }
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps({"qa_pair_id": ids[q], "retrieved_chunks": r}) + "\n"
                                 for q, r in ranked.items()))
    return tmp_path, questions, corpus, responses, ids


# hand-computed per-question figures at k=3 and k=2
Q1_3 = {"recall": 2 / 3, "hit_rate": 1.0, "precision": 2 / 3, "mrr": 1 / 2, "map": (1 / 2 + 2 / 3) / 3,
        "ndcg": (1 / L3 + 1 / 2) / (1 + 1 / L3 + 1 / 2)}
Q1_2 = {"recall": 1 / 3, "hit_rate": 1.0, "precision": 1 / 2, "mrr": 1 / 2, "map": (1 / 2) / 3,
        "ndcg": (1 / L3) / (1 + 1 / L3)}
Q2_3 = {"recall": 1.0, "hit_rate": 1.0, "precision": 1 / 3, "mrr": 1.0, "map": 1.0, "ndcg": 1.0}
Q2_2 = {**Q2_3, "precision": 1 / 2}
Q3_3 = {"recall": 1.0, "hit_rate": 1.0, "precision": 2 / 3, "mrr": 1.0, "map": (1 + 2 / 3) / 2,
        "ndcg": (1 + 2 / 2) / (2 + 1 / L3)}  # gains: c6 1 at rank 1, c5 2 at rank 3
Q3_2 = {"recall": 1 / 2, "hit_rate": 1.0, "precision": 1 / 2, "mrr": 1.0, "map": 1 / 2,
        "ndcg": 1 / (2 + 1 / L3)}
Q4 = {m: 0.0 for m in Q1_3}


def test_questions_csv_groups_rows_of_one_question(multi):
    _, questions, _, _, ids = multi
    cases = load_suite(questions).cases
    assert [c.id for c in cases] == [ids["Q1?"], ids["Q2?"], ids["Q3?"], ids["Q4?"]]
    t1 = cases[0].conversation[0].target.retrieval
    assert [(r.chunk_id, r.content_hash, r.relevance) for r in t1.relevant] == [
        ("c1", md5(CHUNKS["c1"]), 1), ("c2", "", 1), ("c3", md5(CHUNKS["c3"]).upper(), 1)]
    assert t1.document_name == "d1.pdf | d2.pdf" and (t1.content_hash, t1.chunk_id) == ("", "")
    # one row, relevance 1: the seed's own target (chunk id alone is enough)
    t2 = cases[1].conversation[0].target.retrieval
    assert (t2.relevant, t2.chunk_id, t2.content_hash) == (None, "c4", "")
    t3 = cases[2].conversation[0].target.retrieval
    assert [(r.chunk_id, r.relevance) for r in t3.relevant] == [("c5", 2), ("c6", 1)]
    # same question and dataset, another answer: another question
    p = write_csv(questions.parent / "two.csv", [["Q?", "x", "d", "A", "c1", "", ""],
                                                  ["Q?", "y", "d", "A", "c2", "", ""]])
    assert len(load_suite(p).cases) == 2
    # the content_hash column may be left out
    p = write_csv(questions.parent / "ids.csv", [["Q?", "x", "d", "A", "c1"], ["Q?", "x", "d", "A", "c2"]],
                  header=HEADER[:5])
    (case,) = load_suite(p).cases
    assert [r.chunk_id for r in case.conversation[0].target.retrieval.relevant] == ["c1", "c2"]


@pytest.mark.parametrize(("rows", "message"), [
    ([["Q?", "x", "d", "A", "", "", ""]],
     r"bad.csv:2: chunk_id: no chunk_id and no content_hash"),
    ([["Q?", "x", "d", "A", "c1", "", ""], ["Q?", "x", "d", "A", "c1", "", ""]],
     r"bad.csv:3: chunk_id: the same relevant chunk as line 2 "),
    ([["Q?", "x", "d", "A", "c1", "A" * 32, ""], ["Q?", "x", "d", "A", "c2", "a" * 32, ""]],
     r"bad.csv:3: content_hash: the same relevant chunk as line 2 "),
    ([["Q?", "x", "d", "A", "c1", "", "high"]], r"bad.csv:2: relevance: must be an integer >= 0"),
    ([["Q?", "x", "d", "A", "c1", "", ""], ["Q2?", "x", "d", "A", "c2", "", ""], ["Q?", "x", "d", "A", "c3", "", ""]],
     r"bad.csv:4: question: duplicate qa_pair_id .* must be adjacent; the same dataset, question and answer as line 2\)"),
])
def test_questions_csv_errors_name_line_and_field(tmp_path, rows, message):
    p = write_csv(tmp_path / "bad.csv", rows)
    with pytest.raises(InputError, match=message):
        load_suite(p)
    assert main(["validate", str(p)]) == 2


def test_questions_csv_explicit_id_names_the_question(tmp_path):
    """With an ``id``, the id names the question: one id's rows are its relevant chunks; the
    same question text under two ids is two questions (copies of a suite); one id on two
    different questions is a duplicate."""
    header = [*HEADER[:6], "id"]
    p = write_csv(tmp_path / "ids.csv", [["Q?", "x", "d", "A", "c1", "", "i1"],
                                         ["Q?", "x", "d", "A", "c3", "", "i1"],
                                         ["Q?", "x", "d", "A", "c2", "", "i2"]], header=header)
    cases = load_suite(p).cases
    assert [c.id for c in cases] == ["i1", "i2"]
    assert [r.chunk_id for r in cases[0].conversation[0].target.retrieval.relevant] == ["c1", "c3"]
    assert cases[1].conversation[0].target.retrieval.chunk_id == "c2"
    p = write_csv(tmp_path / "bad.csv", [["Q?", "x", "d", "A", "c1", "", "i1"],
                                         ["Q2?", "x", "d", "A", "c2", "", "i1"]], header=header)
    with pytest.raises(InputError, match=r"bad.csv:3: id: duplicate qa_pair_id i1 \(the id of the question at line 2\)"):
        load_suite(p)


def test_chunk_id_not_in_corpus_is_an_input_error(multi, capsys):
    tmp, _, corpus, _, ids = multi
    p = write_csv(tmp / "q.csv", [["Q1?", "a1", "d", "A", "c1", "", ""], ["Q1?", "a1", "d", "A", "c9", "", ""]])
    code = main(["run", str(p), "--corpus", str(corpus), "--k", "3", "--out", str(tmp / "o"), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert (f"record {ids['Q1?']}: target.retrieval.relevant[1].chunk_id: chunk 'c9' is not in the "
            f"corpus {corpus}") in err
    assert "Traceback" not in err
    p = write_csv(tmp / "q1.csv", [["Q1?", "a1", "d", "A", "c9", "", ""]])
    assert main(["run", str(p), "--corpus", str(corpus), "--k", "3", "--out", str(tmp / "o"), "-q"]) == 2
    assert "target.retrieval.chunk_id: chunk 'c9' is not in the corpus" in capsys.readouterr().err


def test_multi_relevant_figures_hand_computed(multi):
    tmp, questions, corpus, responses, ids = multi
    run = qe.evaluate(str(questions), responses=str(responses), k=[2, 3], out=tmp / "runs", reports=True)
    recs = {r["qa_pair_id"]: r for r in run.records}
    expect3 = {ids["Q1?"]: Q1_3, ids["Q2?"]: Q2_3, ids["Q3?"]: Q3_3, ids["Q4?"]: Q4}
    for cid, want in expect3.items():
        assert recs[cid]["scores"] == pytest.approx({f"{m}@3": v for m, v in want.items()}), cid
    r1 = recs[ids["Q1?"]]
    # the seed's fields keep their meaning: any relevant chunk found, first rank
    assert r1["evaluation_result"] == {"correct_chunk_retrieved": True, "rank_if_found": 2,
                                       "retrieval_time_ms": pytest.approx(0, abs=50),
                                       "relevant_found": 2, "relevant_total": 3}
    assert r1["expected_chunks"] == [
        {"chunk_id": "c1", "content_hash": md5(CHUNKS["c1"]), "relevance": 1},
        {"chunk_id": "c2", "content_hash": "", "relevance": 1},
        {"chunk_id": "c3", "content_hash": md5(CHUNKS["c3"]).upper(), "relevance": 1}]
    assert r1["expected_chunk"]["chunk_id"] == "c1|c2|c3"
    o = run.overall
    n = 4
    for m in ("recall", "hit_rate", "precision", "mrr", "map", "ndcg"):
        assert o[f"{m}@3"] == pytest.approx(sum(w[m] for w in expect3.values()) / n), m
    assert o["recall_at_k"] == o["hit_rate@3"] == pytest.approx(3 / 4)  # the seed's name: hits
    assert o["recall@3"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4)
    assert o["recall@3"] != o["recall_at_k"] and o["map@3"] != o["mrr@3"]
    # the smaller k, in the run's own metrics and per case
    assert o["recall@2"] == pytest.approx((1 / 3 + 1 + 1 / 2 + 0) / 4)
    assert o["hit_rate@2"] == pytest.approx(3 / 4)
    assert o["ndcg@2"] == pytest.approx((Q1_2["ndcg"] + 1 + Q3_2["ndcg"]) / 4)
    assert run.results.vector("recall@2") == pytest.approx(
        {ids["Q1?"]: 1 / 3, ids["Q2?"]: 1.0, ids["Q3?"]: 1 / 2, ids["Q4?"]: 0.0})
    # per dataset: A = Q1, Q2; B = Q3, Q4
    doc = json.loads((run.folder / f"metrics_{run.batch_id}.json").read_text())
    assert doc["dataset_metrics"]["A"]["recall@3"] == pytest.approx((2 / 3 + 1) / 2)
    assert doc["dataset_metrics"]["A"]["recall_at_k"] == 1.0
    assert doc["group_metrics"]["dataset"]["B"]["recall@2"] == pytest.approx((1 / 2 + 0) / 2)
    # the derived k=2 batch
    (d2,) = run.derived
    o2 = d2.overall
    for m in ("recall", "hit_rate", "precision", "mrr", "map", "ndcg"):
        assert o2[f"{m}@2"] == pytest.approx((Q1_2[m] + Q2_2[m] + Q3_2[m] + Q4[m]) / n), m
    # the results CSV: one row per retrieved chunk; a retrieved relevant chunk is correct
    with open(run.folder / f"results_{run.batch_id}.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["qa_pair_id"] == ids["Q1?"]]
    assert [r["is_correct_chunk"] for r in rows] == ["False", "True", "True"]
    assert {r["expected_chunk_id"] for r in rows} == {"c1|c2|c3"}


def test_upper_case_hash_of_a_relevant_chunk_follows_hash_case(multi):
    tmp, questions, _, responses, ids = multi
    resp = [json.loads(x) for x in responses.read_text().splitlines()]
    resp[0]["retrieved_chunks"] = [chunk("c3", 0.9)]  # Q1's c3 is listed with an upper-case hash
    responses.write_text("".join(json.dumps(r) + "\n" for r in resp))
    for case, want in (("any", 1 / 3), ("exact", 0.0)):
        run = qe.evaluate(str(questions), responses=str(responses), k=[3], hash_case=case,
                          out=tmp / case)
        rec = next(r for r in run.records if r["qa_pair_id"] == ids["Q1?"])
        assert rec["scores"]["recall@3"] == pytest.approx(want), case


def _pytrec(qrels, run, k):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", f"ndcg_cut.{k}", f"P.{k}", f"map_cut.{k}",
                                                f"recall.{k}", f"success.{k}"})
    return ev.evaluate(run)


def _same_as_pytrec(scores: dict, ref: dict, k: int) -> None:
    assert scores[f"mrr@{k}"] == pytest.approx(ref["recip_rank"])
    assert scores[f"ndcg@{k}"] == pytest.approx(ref[f"ndcg_cut_{k}"])
    assert scores[f"precision@{k}"] == pytest.approx(ref[f"P_{k}"])
    assert scores[f"map@{k}"] == pytest.approx(ref[f"map_cut_{k}"])
    assert scores[f"recall@{k}"] == pytest.approx(ref[f"recall_{k}"])
    assert scores[f"hit_rate@{k}"] == pytest.approx(ref[f"success_{k}"])


def test_run_figures_equal_pytrec_eval_on_the_same_qrels(multi):
    tmp, questions, _, responses, ids = multi
    run = qe.evaluate(str(questions), responses=str(responses), k=[3], out=tmp / "runs")
    qrels = {ids["Q1?"]: {"c1": 1, "c2": 1, "c3": 1}, ids["Q2?"]: {"c4": 1},
             ids["Q3?"]: {"c5": 2, "c6": 1}, ids["Q4?"]: {"c3": 1}}
    trec_run = {}
    for line in responses.read_text().splitlines():
        obj = json.loads(line)
        trec_run[obj["qa_pair_id"]] = {c["chunk_id"]: c["score"] for c in obj["retrieved_chunks"]}
    ref = _pytrec(qrels, trec_run, 3)
    for rec in run.records:
        _same_as_pytrec(rec["scores"], ref[rec["qa_pair_id"]], 3)


def test_score_cut_equals_pytrec_eval_on_random_graded_rankings():
    """Random graded qrels (some relevance 0, some relevant chunks named by id, others by
    hash) and random rankings, every metric at several k against pytrec_eval."""
    rng = random.Random(26)
    for k in (1, 3, 10):
        qrels, run, cuts = {}, {}, {}
        for i in range(150):
            docs = [f"d{j}" for j in range(25)]
            rng.shuffle(docs)
            ranked = docs[: rng.randint(0, 12)][:k]
            rel = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 5))}
            if not any(rel.values()):
                rel[docs[-1]] = 1
            qid = f"q{i}"
            qrels[qid] = rel
            run[qid] = {d: float(100 - r) for r, d in enumerate(ranked)}
            relevant = [{"chunk_id": d, "content_hash": md5(d) if rng.random() < 0.5 else "", "relevance": g}
                        for d, g in rel.items()]
            chunks = [{"chunk_id": d, "content_hash": md5(d), "score": float(100 - r)}
                      for r, d in enumerate(ranked)]
            cuts[qid] = score_cut(chunks, relevant, k, exact=False)
        ref = _pytrec(qrels, {q: r for q, r in run.items() if r}, k)
        for qid, cut in cuts.items():
            if run[qid]:
                _same_as_pytrec(cut.scores, ref[qid], k)
            else:  # nothing retrieved: every figure 0 (pytrec_eval leaves the query out)
                assert set(cut.scores.values()) == {0.0}
            ranks = [r for r, d in enumerate(run[qid], start=1) if qrels[qid].get(d, 0) > 0]
            assert cut.rank == (ranks[0] if ranks else None) and cut.found == len(ranks)


def test_score_cuts_in_one_pass_equal_each_alone():
    """The aggregate's blocks (many questions in one pass of the engine's kernels) give each
    question's figures alone, and the public engine's ``evaluate`` on the same qrels/run."""
    rng = random.Random(7)
    items = []
    for _ in range(60):
        docs = [f"d{j}" for j in range(15)]
        rng.shuffle(docs)
        rel = [{"chunk_id": d, "content_hash": "", "relevance": rng.choice([0, 1, 2])}
               for d in rng.sample(docs, rng.randint(1, 4))]
        items.append(([{"chunk_id": d, "content_hash": md5(d)} for d in docs[: rng.randint(0, 5)]], rel))
    together = score_cuts(items, 5, exact=False)
    for (chunks, rel), cut in zip(items, together, strict=True):
        assert cut == score_cut(chunks, rel, 5, exact=False)
    from queryeval.metrics.ranking import evaluate

    names = [f"{m}@5" for m in ("recall", "hit_rate", "mrr", "ndcg", "map", "precision")]
    res = evaluate({f"q{i}": {r["chunk_id"]: r["relevance"] for r in rel} for i, (_, rel) in enumerate(items)},
                   {f"q{i}": {c["chunk_id"]: float(10 - p) for p, c in enumerate(chunks)}
                    for i, (chunks, _) in enumerate(items) if chunks},
                   names, per_query=True)
    for name in names:
        got = {f"q{i}": cut.scores[name] for i, cut in enumerate(together)}
        assert got == pytest.approx(dict(zip(res.qids, res.per_query[name].tolist(), strict=True)))


def test_a_relevant_chunk_counts_once():
    """Two retrieved chunks with the relevant content: the first is the relevant chunk, the
    second counts as non-relevant (trec_eval credits a document once)."""
    rel = [{"chunk_id": "x", "content_hash": md5("t"), "relevance": 1}]
    dup = [{"chunk_id": "a", "content_hash": md5("t")}, {"chunk_id": "b", "content_hash": md5("t")}]
    cut = score_cut(dup, rel, 2, exact=False)
    assert cut.scores == {"recall@2": 1.0, "hit_rate@2": 1.0, "mrr@2": 1.0, "ndcg@2": 1.0,
                          "map@2": 1.0, "precision@2": 0.5}
    # a chunk matching by hash and another by id fill two relevant chunks
    rel2 = [*rel, {"chunk_id": "b", "content_hash": "", "relevance": 1}]
    assert score_cut(dup, rel2, 2, exact=False).scores["recall@2"] == 1.0


def test_single_relevant_suite_keeps_the_seed_layout(tmp_path):
    """A one-chunk question keeps the seed's record and metrics layout (no new fields)."""
    task = get_task("retrieval", {"k": [3]})
    rec = task.rescore_record({
        "retrieved_chunks": [{"chunk_id": "a", "score": 1.0, "content": "t", "content_hash": md5("t")}],
        "expected_chunk": {"name": "", "source": "", "chunk_id": "a", "content_hash": md5("t")},
        "evaluation_result": {"retrieval_time_ms": 1.0}})
    assert set(rec["evaluation_result"]) == {"correct_chunk_retrieved", "rank_if_found", "retrieval_time_ms"}
    assert "expected_chunks" not in rec
    rec["dataset"] = "A"
    m = task.aggregate([rec])
    assert "recall@3" not in m["dataset_metrics"]["A"] and m["overall_metrics"]["recall@3"] == 1.0


def _cases_jsonl(path: Path, relevant: list[dict]) -> Path:
    case = {"id": "y1", "conversation": [{"role": "user", "content": "Q1?", "target": {
        "retrieval": {"answer": "a1", "dataset": "A", "relevant": relevant}}}]}
    path.write_text(json.dumps(case) + "\n")
    return path


def test_cases_jsonl_and_yaml_list_relevant_chunks(multi):
    """The JSONL/YAML form: ``relevant: [{chunk_id, content_hash?, relevance?}]``, scored as
    the CSV's grouped rows are."""
    tmp, _, corpus, _, _ = multi
    relevant = [{"chunk_id": "c1", "content_hash": md5(CHUNKS["c1"])}, {"chunk_id": "c2"},
                {"chunk_id": "c3", "relevance": 1}]
    suite = _cases_jsonl(tmp / "cases.jsonl", relevant)
    yaml_suite = tmp / "cases.yaml"
    yaml_suite.write_text(
        "- id: y1\n  conversation:\n    - role: user\n      content: Q1?\n"
        "      target:\n        retrieval:\n          answer: a1\n          dataset: A\n"
        "          relevant:\n"
        + "".join(f"            - {{chunk_id: {r['chunk_id']}"
                  + (f", content_hash: {r['content_hash']}" if "content_hash" in r else "") + "}\n"
                  for r in relevant))
    responses = tmp / "r.jsonl"
    responses.write_text(json.dumps({"case_id": "y1", "retrieved_chunks": [
        chunk("c4", 0.9), chunk("c2", 0.8), chunk("c1", 0.7)]}) + "\n")
    for path in (suite, yaml_suite):
        run = qe.evaluate(str(path), responses=str(responses), k=[3], corpus=str(corpus),
                          out=tmp / path.suffix[1:])
        (rec,) = run.records
        assert rec["scores"] == pytest.approx({f"{m}@3": v for m, v in Q1_3.items()}), path


def test_cases_jsonl_relevant_errors(multi, capsys):
    tmp, _, corpus, _, _ = multi
    suite = _cases_jsonl(tmp / "cases.jsonl", [{"chunk_id": "c1"}, {"chunk_id": "c1", "relevance": 2}])
    out = ["--corpus", str(corpus), "--k", "3", "--out", str(tmp / "o"), "-q"]
    assert main(["run", str(suite), *out]) == 2
    assert ("record y1: target.retrieval.relevant[1].chunk_id: the same relevant chunk as "
            "relevant[0]") in capsys.readouterr().err
    _cases_jsonl(suite, [{"chunk_id": "c1"}, {"chunk_id": "nope"}])
    assert main(["run", str(suite), *out]) == 2
    assert "record y1: target.retrieval.relevant[1].chunk_id: chunk 'nope' is not in the corpus" \
        in capsys.readouterr().err
    _cases_jsonl(suite, [{"relevance": 2}])  # neither id nor hash: the model's check
    assert main(["validate", str(suite)]) == 2
    assert "a relevant chunk needs a chunk_id or a content_hash" in capsys.readouterr().err


def test_shipped_multi_example_equals_pytrec_eval(tmp_path):
    """examples/retrieval/multi_questions.csv (chunk ids, graded, several per question) with
    its recorded retrievals: every figure equals pytrec_eval's on the qrels the CSV says."""
    ex = Path(__file__).resolve().parents[2] / "examples" / "retrieval"
    qrels: dict[str, dict[str, int]] = {}
    with open(ex / "multi_questions.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            qid = qa_pair_id(r["dataset"], r["question"], r["answer"])
            qrels.setdefault(qid, {})[r["chunk_id"]] = int(r["relevance"])
    trec_run = {}
    for line in (ex / "multi_responses.jsonl").read_text().splitlines():
        obj = json.loads(line)
        trec_run[obj["qa_pair_id"]] = {c["chunk_id"]: c["score"] for c in obj["retrieved_chunks"][:5]}
    run = qe.evaluate(str(ex / "multi_questions.csv"), responses=str(ex / "multi_responses.jsonl"),
                      corpus=str(ex / "corpus.jsonl"), k=[5], out=tmp_path)
    ref = _pytrec(qrels, trec_run, 5)
    assert len(run.records) == len(qrels) == 5
    for rec in run.records:
        _same_as_pytrec(rec["scores"], ref[rec["qa_pair_id"]], 5)
    assert run.overall["recall@5"] != run.overall["hit_rate@5"]


def test_reports_mark_every_relevant_chunk(multi):
    """The xlsx's top-3 marks, the HTML/viewer record (``report_record``) and its expected
    text follow the task's rule for several relevant chunks (chunk ids and hashes)."""
    openpyxl = pytest.importorskip("openpyxl")
    tmp, questions, corpus, responses, ids = multi
    run = qe.evaluate(str(questions), responses=str(responses), k=[3], out=tmp / "runs", reports=True)
    ws = openpyxl.load_workbook(run.folder / f"report_{run.batch_id}.xlsx")["Questions"]
    header = [c.value for c in ws[1]]
    row = next(r for r in ws.iter_rows(min_row=2, values_only=True) if r[0] == ids["Q1?"])
    top = row[header.index("top 3 retrieved")].splitlines()
    assert [line[:4] for line in top] == ["✗ 1.", "✓ 2.", "✓ 3."]
    assert row[header.index("expected chunk")] == "c1|c2|c3 (d1.pdf | d2.pdf)"
    rec = next(r for r in run.records if r["qa_pair_id"] == ids["Q1?"])
    shown = get_task("retrieval", {"k": [3]}).report_record(rec)
    assert [c["relevant"] for c in shown["retrieved_chunks"]] == [False, True, True]
    assert shown["expected_chunk"]["content"] == CHUNKS["c1"]
    q2 = get_task("retrieval", {"k": [3]}).report_record(
        next(r for r in run.records if r["qa_pair_id"] == ids["Q2?"]))
    assert q2["expected_chunk"]["content"] == CHUNKS["c4"]  # named by its id: the retrieved one
