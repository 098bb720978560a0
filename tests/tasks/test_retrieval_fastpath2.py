"""The smaller-k figures of a question with one relevant chunk of relevance 1 are read from one
scan of its ranking (``RetrievalTask._add_smaller`` -> ``AtK.add_rank``), not from a cut
scored per k: equal, bit for bit, to the engine's figures of each cut (``_engine_cuts`` on
the task's own ranking at each k) on random records mixing that shape with graded and
several-relevant questions, chunk ids and case-differing hashes, ``min_score`` (which keeps
the general path), ``all_retrieved_chunks`` and every ``hash_case``.
"""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.tasks.retrieval.aggregate import AtK
from queryeval.tasks.retrieval.scoring import Matcher, _engine_cuts, relevant_chunks
from queryeval.tasks.retrieval.task import RetrievalTask


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - the seed's content hash


DOCS = [f"d{i}" for i in range(5)]
chunk = st.fixed_dictionaries({
    "chunk_id": st.sampled_from([*DOCS, None, ""]),
    "content_hash": st.sampled_from([*(md5(d) for d in DOCS), md5(DOCS[0]).upper(), "", None]),
    "score": st.sampled_from([0.9, 0.5, 0.2, None]),
})
one = st.builds(lambda d, by_hash, upper: {"chunk_id": d, "content_hash": (
    (md5(d).upper() if upper else md5(d)) if by_hash else "")},
    st.sampled_from(DOCS), st.booleans(), st.booleans())
several = st.lists(st.builds(lambda d, rel: {"chunk_id": d, "content_hash": md5(d), "relevance": rel},
                             st.sampled_from(DOCS), st.integers(0, 2)), min_size=1, max_size=3)
record = st.builds(
    lambda ds, exp, multi, chunks, extra: {
        "dataset": ds, "expected_chunk": exp, "retrieved_chunks": chunks,
        **({"expected_chunks": multi} if multi else {}),
        **({"all_retrieved_chunks": chunks + extra} if extra else {})},
    st.sampled_from(["a", "b"]), one, st.one_of(st.none(), several),
    st.lists(chunk, max_size=8), st.lists(chunk, max_size=3))


def _figures(at_k: AtK, ks: list[int], datasets: set[str]) -> dict:
    """Every figure ``at_k`` reports, as exact float bit patterns."""
    out = {"overall": at_k.overall(max(ks) + 1, None, True)}
    out.update({ds: at_k.dataset(ds, max(ks) + 1, None) for ds in sorted(datasets)})
    return {key: {n: None if v is None else float(v).hex() for n, v in figs.items()}
            for key, figs in out.items()}


@settings(max_examples=300, deadline=None)
@given(records=st.lists(record, min_size=1, max_size=10),
       ks=st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True),
       min_score=st.sampled_from([None, None, 0.4]), exact=st.booleans())
def test_smaller_k_figures_equal_the_engine_per_cut(records, ks, min_score, exact):
    ks = sorted(ks)
    task = RetrievalTask({"k": [*ks, max(ks) + 1], "min_score": min_score,
                          "hash_case": "exact" if exact else "any"})
    assert task.smaller_ks() == ks
    fast = AtK(ks)
    task._add_smaller(fast, list(records))
    oracle = AtK(ks)
    per_k = [_engine_cuts([(task._ranking(r, j), relevant_chunks(r)) for r in records], j, exact)
             for j in ks]
    for i, r in enumerate(records):
        oracle.add(r["dataset"], [cuts[i].scores for cuts in per_k])
    datasets = {r["dataset"] for r in records}
    assert _figures(fast, ks, datasets) == _figures(oracle, ks, datasets)
    assert list(fast.per_ds) == list(oracle.per_ds)  # datasets in first-seen order


def test_rank_past_the_smaller_k_scores_zero_and_within_scores_its_rank():
    """Hand-computed: ranks 2 (hash, other case) and 4 (id) at k = 1 and 3; ndcg@3 of rank 2
    is 1/log2(3)."""
    task = RetrievalTask({"k": "1,3,5"})
    records = [
        {"dataset": "a", "expected_chunk": {"chunk_id": "", "content_hash": md5("x").upper()},
         "retrieved_chunks": [{"chunk_id": "c1", "content_hash": md5("y")},
                              {"chunk_id": "c2", "content_hash": md5("x")}]},
        {"dataset": "a", "expected_chunk": {"chunk_id": "c9", "content_hash": ""},
         "retrieved_chunks": [{"chunk_id": f"c{i}", "content_hash": ""} for i in (1, 2, 3, 9)]},
    ]
    at_k = AtK([1, 3])
    task._add_smaller(at_k, records)
    overall = at_k.overall(5, None, True)
    assert overall["recall@1"] == 0.0 and overall["mrr@1"] == 0.0 and overall["ndcg@1"] == 0.0
    assert overall["recall@3"] == 0.5 and overall["hit_rate@3"] == 0.5
    assert overall["mrr@3"] == 0.25
    assert abs(overall["ndcg@3"] - 0.5 / 1.584962500721156) < 1e-15
    assert records == []  # the block is consumed


@settings(max_examples=300, deadline=None)
@given(records=st.lists(record, min_size=1, max_size=6), exact=st.booleans())
def test_csv_marks_equal_the_matchers(records, exact):
    """The CSV's ``is_correct_chunk`` of a single-relevant record (compared directly, no
    ``Matcher`` built) is the Matcher's mark, chunk by chunk, as for every other record."""
    task = RetrievalTask({"k": 5, "hash_case": "exact" if exact else "any"})
    for r in records:
        full = {**r, "qa_pair_id": "q", "question": "?",
                "expected_chunk": {**r["expected_chunk"], "name": "n", "source": r["dataset"]},
                "evaluation_result": {"correct_chunk_retrieved": False, "rank_if_found": None,
                                      "retrieval_time_ms": 1.0},
                "retrieved_chunks": [{**c, "content": "t"} for c in r["retrieved_chunks"]]}
        matcher = Matcher(relevant_chunks(full), exact)
        marks = [row["is_correct_chunk"] for row in task.csv_rows(full) if "rank" in row]
        assert marks == [matcher.is_relevant(c) for c in full["retrieved_chunks"]]


@settings(max_examples=300, deadline=None)
@given(r=record, k=st.integers(1, 6), min_score=st.sampled_from([None, 0.4]), exact=st.booleans())
def test_one_record_cut_equals_the_engine(r, k, min_score, exact):
    """``_cut`` of one record (a single-relevant one scored without ``score_cuts``' batch):
    the engine's cut of the same ranking, every field and figure bit for bit."""
    task = RetrievalTask({"k": k, "min_score": min_score, "hash_case": "exact" if exact else "any"})
    (engine,) = _engine_cuts([(task._ranking(r, k), relevant_chunks(r))], k, exact)
    cut = task._cut(r, k)
    assert (cut.rank, cut.found, cut.chunks, {n: v.hex() for n, v in cut.scores.items()}) == (
        engine.rank, engine.found, engine.chunks, {n: float(v).hex() for n, v in engine.scores.items()})


@settings(max_examples=300, deadline=None)
@given(r=record, k=st.integers(1, 6), min_score=st.sampled_from([None, 0.4]), exact=st.booleans(),
       answer=st.sampled_from([None, {"answer_exact_match": 0.0, "answer_f1": 0.5}]))
def test_evaluated_record_equals_the_engine(r, k, min_score, exact, answer):
    """A scored record (``_evaluate``: a single-relevant one from its rank directly, no
    ``Cut``): the chunks kept, the rank, the found count and every score (key order too,
    answer scores after) are the engine's cut of the same ranking, bit for bit."""
    task = RetrievalTask({"k": k, "min_score": min_score, "hash_case": "exact" if exact else "any"})
    full = {**r, "evaluation_result": {"retrieval_time_ms": 1.0},
            **({"answer_scores": answer} if answer else {})}
    (engine,) = _engine_cuts([(task._ranking(full, k), relevant_chunks(full))], k, exact)
    got = task.rescore_record(full)
    want_scores = {**{n: float(v).hex() for n, v in engine.scores.items()},
                   **{n: v.hex() for n, v in (answer or {}).items()}}
    assert got["retrieved_chunks"] == engine.chunks
    assert [(n, v.hex()) for n, v in got["scores"].items()] == list(want_scores.items())
    ev = got["evaluation_result"]
    assert (ev["correct_chunk_retrieved"], ev["rank_if_found"]) == (engine.rank is not None, engine.rank)
    if r.get("expected_chunks"):
        assert ev["relevant_found"] == engine.found
