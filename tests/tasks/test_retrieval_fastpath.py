"""The direct scoring of a question with one relevant chunk of relevance 1 (the seed's shape)
gives the trec_eval-exact engine's figures bit for bit.

``score_cuts`` scores such questions without building the engine's structure
(``retrieval_scoring._single_cut``); every other question keeps the engine path
(``_engine_cuts``). These property tests hold the two equal on random rankings: duplicated
and case-differing hashes, chunk ids instead of hashes, missing ids, rankings longer than k,
and, through the public ``evaluate``, score ties broken trec_eval's way and ``min_score``.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.ranking import evaluate
from queryeval.tasks.retrieval.scoring import (
    RANK_METRICS,
    Matcher,
    _engine_cuts,
    _single_identity,
    score_cuts,
)


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - the seed's content hash


def _bits(cut) -> tuple:
    """A cut's every field, figures as exact float bit patterns."""
    return (cut.rank, cut.found, cut.chunks, {n: float(v).hex() for n, v in cut.scores.items()})


DOCS = [f"d{i}" for i in range(6)]
chunk = st.fixed_dictionaries({
    "chunk_id": st.sampled_from([*DOCS, None, ""]),
    "content_hash": st.sampled_from([*(md5(d) for d in DOCS), *(md5(d).upper() for d in DOCS[:2]), "", None]),
    "score": st.sampled_from([0.9, 0.5, 0.5, 0.1]),
})
relevant = st.builds(
    lambda d, by_hash, upper, named: [{"chunk_id": d if named else "",
                                       "content_hash": (md5(d).upper() if upper else md5(d)) if by_hash else "",
                                       "relevance": 1}],
    st.sampled_from(DOCS), st.booleans(), st.booleans(), st.booleans())


@settings(max_examples=400, deadline=None)
@given(items=st.lists(st.tuples(st.lists(chunk, max_size=12), relevant), min_size=1, max_size=8),
       k=st.integers(1, 10), exact=st.booleans())
def test_single_relevant_equals_the_engine_path(items, k, exact):
    assert all(_single_identity(rel, exact) is not None for _, rel in items)
    fast = score_cuts(items, k, exact)
    engine = _engine_cuts(items, k, exact)
    assert [_bits(c) for c in fast] == [_bits(c) for c in engine]


def test_every_rank_up_to_3000_equals_the_engine_path():
    """nDCG's discount 1/log2(r+1), MRR/MAP 1/r and precision 1/k at each rank (one past k too)."""
    for k in (1, 7, 3000):
        items = [([{"chunk_id": f"x{j}", "content_hash": ""} for j in range(r - 1)]
                  + [{"chunk_id": "rel", "content_hash": ""}], [{"chunk_id": "rel", "relevance": 1}])
                 for r in range(1, min(k, 3000) + 2)]
        fast, engine = score_cuts(items, k, False), _engine_cuts(items, k, False)
        assert [_bits(c) for c in fast] == [_bits(c) for c in engine]
        assert fast[-1].rank == len(items) and set(fast[-1].scores.values()) == {0.0}  # rank k + 1


def test_mixed_batches_keep_their_order_and_several_relevant_keep_the_engine():
    one = ([{"chunk_id": "b"}, {"chunk_id": "a"}], [{"chunk_id": "a", "relevance": 1}])
    graded = ([{"chunk_id": "b"}, {"chunk_id": "a"}], [{"chunk_id": "a", "relevance": 2}])
    several = ([{"chunk_id": "b"}, {"chunk_id": "a"}],
               [{"chunk_id": "a", "relevance": 1}, {"chunk_id": "b", "relevance": 1}])
    assert _single_identity(graded[1], False) is None and _single_identity(several[1], False) is None
    cuts = score_cuts([one, several, graded, one], 3, False)
    assert [_bits(c) for c in cuts] == [_bits(c) for c in _engine_cuts([one, several, graded, one], 3, False)]
    assert cuts[0].scores == {"recall@3": 1.0, "hit_rate@3": 1.0, "mrr@3": 0.5, "ndcg@3": 1 / 1.584962500721156,
                              "map@3": 0.5, "precision@3": 1 / 3}
    assert cuts[1].scores["recall@3"] == 1.0 and cuts[1].found == 2


@settings(max_examples=300, deadline=None)
@given(runs=st.lists(st.tuples(st.dictionaries(st.sampled_from(DOCS + ["e1", "e2"]),
                                               st.sampled_from([0.9, 0.5, 0.5, 0.2, 0.1]), max_size=8),
                               st.sampled_from(DOCS)), min_size=1, max_size=6),
       k=st.integers(1, 6), min_score=st.sampled_from([None, 0.2, 0.5]))
def test_single_relevant_equals_the_public_engine_with_ties_and_min_score(runs, k, min_score):
    """The public engine ranks by score, ties by docid descending (trec_eval); the chunks
    given to ``score_cuts`` are that order, ``min_score`` applied, cut to k (as the task's
    ``_ranking``)."""
    qrels, run, items = {}, {}, []
    for i, (scores, rel) in enumerate(runs):
        kept = {d: s for d, s in scores.items() if min_score is None or s >= min_score}
        order = sorted(kept, key=lambda d: (-kept[d], [-ord(ch) for ch in d]))
        qrels[f"q{i}"] = {rel: 1}
        if kept:
            run[f"q{i}"] = kept
        items.append(([{"chunk_id": d, "content_hash": md5(d), "score": kept[d]} for d in order][:k],
                      [{"chunk_id": rel, "content_hash": md5(rel), "relevance": 1}]))
    names = [f"{m}@{k}" for m in RANK_METRICS]
    res = evaluate(qrels, run, names, per_query=True)
    want = {q: {n: float(res.per_query[n][j]).hex() for n in names} for j, q in enumerate(res.qids)}
    for i, cut in enumerate(score_cuts(items, k, False)):
        got = {n: float(v).hex() for n, v in cut.scores.items()}
        assert got == want.get(f"q{i}", {n: (0.0).hex() for n in names})


def test_retrieval_scoring_does_not_load_pyarrow():
    """pyarrow (~35 MiB resident) loads only where the engine breaks score ties by docid."""
    code = ("import sys, queryeval.tasks.retrieval.task, queryeval.metrics.ranking._ties, queryeval.cli.app;"
            "print('pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(chunk, max_size=8), rel=relevant, relevance=st.sampled_from([1, 2, 0, -1]),
       exact=st.booleans())
def test_one_relevant_chunk_mark_equals_the_general_matcher(chunks, rel, relevance, exact):
    """The CSV/report mark (``Matcher.is_relevant``) of one relevant chunk, compared directly,
    equals the general lookup by identity (``candidates``) with its relevance > 0."""
    rel = [{**rel[0], "relevance": relevance}]
    m = Matcher(rel, exact)
    for c in chunks:
        assert m.is_relevant(c) == (bool(m.candidates(c)) and relevance > 0)
