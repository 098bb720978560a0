"""BM25 retriever: hand-computed Lucene BM25 scores, ties, k bounds, empty inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.engines.retrievers import BM25Retriever, Doc, Retriever, docs_from_texts
from queryeval.errors import ConfigError

# Tokens (stopwords off): d0 [apple banana] dl=2, d1 [apple apple cherry] dl=3,
# d2 [banana cherry cherry durian] dl=4, d3 [egg] dl=1.  N=4, avgdl=10/4=2.5.
CORPUS = [
    Doc("d0", "Apple banana"),
    Doc("d1", "apple, APPLE cherry"),
    Doc("d2", "banana cherry cherry durian"),
    Doc("d3", "egg"),
]


def lucene(tf: int, df: int, dl: int, *, n: int = 4, avgdl: float = 2.5,
           k1: float = 1.5, b: float = 0.75) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


@pytest.fixture()
def bm25() -> BM25Retriever:
    r = BM25Retriever(stopwords=None)
    r.index(CORPUS)
    return r


def test_is_a_retriever(bm25: BM25Retriever) -> None:
    assert isinstance(bm25, Retriever)


def test_single_term_scores_by_hand(bm25: BM25Retriever) -> None:
    (hits,) = bm25.search(["apple"], k=4)
    # idf = ln(1 + 2.5/2.5) = ln 2; d1: 2 ln2 / (2 + 1.5*(0.25+0.75*1.2)) = 2 ln2 / 3.725
    assert [h.doc_id for h in hits] == ["d1", "d0", "d2", "d3"]
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert hits[0].score == pytest.approx(2 * math.log(2) / 3.725, rel=1e-6)
    assert hits[0].score == pytest.approx(0.3721594, rel=1e-6)
    assert hits[1].score == pytest.approx(math.log(2) / 2.275, rel=1e-6)  # 0.3046800
    assert hits[2].score == 0.0 and hits[3].score == 0.0
    assert all(type(h.score) is float for h in hits)


def test_two_terms_sum_by_hand(bm25: BM25Retriever) -> None:
    (hits,) = bm25.search(["cherry banana"], k=3)
    expected = {
        "d0": lucene(1, 2, 2),
        "d1": lucene(1, 2, 3),
        "d2": lucene(1, 2, 4) + lucene(2, 2, 4),  # 0.218314 + 0.332046
    }
    assert [h.doc_id for h in hits] == ["d2", "d0", "d1"]
    for h in hits:
        assert h.score == pytest.approx(expected[h.doc_id], rel=1e-6)
    assert hits[0].score == pytest.approx(0.5503606, rel=1e-6)


def test_k1_and_b_reach_the_formula() -> None:
    r = BM25Retriever(stopwords=None, k1=1.2, b=0.5)
    r.index(CORPUS)
    (hits,) = r.search(["apple"], k=1)
    assert hits[0].score == pytest.approx(lucene(2, 2, 3, k1=1.2, b=0.5), rel=1e-6)


def test_ties_break_by_document_order_not_by_id() -> None:
    r = BM25Retriever(stopwords=None)
    r.index([Doc("z", "red fox"), Doc("m", "blue whale"), Doc("a", "red fox")])
    (hits,) = r.search(["fox"], k=3)
    assert [h.doc_id for h in hits] == ["z", "a", "m"]
    assert hits[0].score == hits[1].score > hits[2].score == 0.0
    order, scores = r.rank_all(["fox"])
    assert order.tolist() == [[0, 2, 1]]
    assert scores[0, 0] == scores[0, 1] == pytest.approx(hits[0].score)


def test_k_larger_than_corpus_and_k_zero(bm25: BM25Retriever) -> None:
    (hits,) = bm25.search(["durian"], k=100)
    assert len(hits) == 4 and [h.rank for h in hits] == [1, 2, 3, 4]
    assert hits[0].doc_id == "d2"
    assert bm25.search(["durian"], k=0) == [[]]
    with pytest.raises(ValueError):
        bm25.search(["durian"], k=-1)


def test_empty_and_unknown_queries_score_zero_in_document_order(bm25: BM25Retriever) -> None:
    for q in ["", "   ", "zebra", "!!"]:
        (hits,) = bm25.search([q], k=2)
        assert [(h.doc_id, h.score) for h in hits] == [("d0", 0.0), ("d1", 0.0)]


def test_stopwords_only_query_scores_zero() -> None:
    r = BM25Retriever()  # English stop words
    r.index([Doc("a", "the cat"), Doc("b", "the dog")])
    assert r.tokenize(["The cat and the dog"]) == [["cat", "dog"]]
    (hits,) = r.search(["the"], k=2)
    assert [h.score for h in hits] == [0.0, 0.0]


def test_drop_unmatched_documents_uses_terms_not_scores() -> None:
    docs = [Doc("a", "alpha"), Doc("b", "beta"), Doc("c", "alpha beta")]
    # bm25+ gives documents without the term a positive score (the delta term).
    plus = BM25Retriever(stopwords=None, method="bm25+")
    plus.index(docs)
    (all_hits,) = plus.search(["alpha"], k=3)
    assert [h.doc_id for h in all_hits][2] == "b" and all_hits[2].score > 0
    strict = BM25Retriever(stopwords=None, method="bm25+", include_zero_scores=False)
    strict.index(docs)
    # "a" (one token) outranks the longer "alpha beta"; "b" is dropped though it scored > 0.
    assert [[h.doc_id for h in row] for row in strict.search(["alpha", "", "gamma"], k=3)] == [
        ["a", "c"], [], []]
    assert strict.matches(["beta"]).tolist() == [[False, True, True]]


def test_many_queries_in_small_blocks_match_one_block(bm25: BM25Retriever) -> None:
    queries = ["apple", "banana", "cherry durian", "", "egg apple"] * 7
    small = BM25Retriever(stopwords=None, query_block_size=2)
    small.index(CORPUS)
    assert small.search(queries, 3) == bm25.search(queries, 3)
    order, scores = bm25.rank_all(queries)
    assert order.shape == (35, 4) and order.dtype == np.int64 and scores.dtype == np.float64
    for row, hits in zip(order.tolist(), bm25.search(queries, 4), strict=True):
        assert [bm25.doc_ids[i] for i in row] == [h.doc_id for h in hits]
    # scores aligned with the ranking, hence non-increasing along each row
    assert (np.diff(scores, axis=1) <= 0).all()


def test_callable_stemmer_and_missing_pystemmer() -> None:
    r = BM25Retriever(stopwords=None, stemmer=lambda ws: [w.rstrip("s") for w in ws])
    r.index(docs_from_texts(["cats", "dog"]))
    (hits,) = r.search(["cat"], k=1)
    assert hits[0].doc_id == "cats" and hits[0].score > 0
    try:
        import Stemmer  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="PyStemmer"):
            BM25Retriever(stemmer="english")


def test_degenerate_corpora() -> None:
    r = BM25Retriever()
    r.index([Doc("a", ""), Doc("b", "!!")])  # no token at all
    assert [[h.doc_id for h in row] for row in r.search(["x y", ""], 5)] == [["a", "b"]] * 2
    r.index([])
    assert r.search(["anything"], 3) == [[]]
    order, scores = r.rank_all(["anything"])
    assert order.shape == scores.shape == (1, 0)
    assert r.search([], 3) == []


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError):
        BM25Retriever(method="bm26")
    with pytest.raises(ConfigError):
        BM25Retriever(b=1.5)
    r = BM25Retriever()
    with pytest.raises(RuntimeError, match="index"):
        r.search(["q"], 1)
    with pytest.raises(ValueError, match="duplicate doc_id 'x'"):
        r.index([Doc("x", "a"), Doc("x", "b")])
    r.index(CORPUS)
    with pytest.raises(TypeError):
        r.search("apple", 3)  # type: ignore[arg-type]


def python_bm25(corpus: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    """Lucene BM25 written out in plain Python, the oracle for the property test."""
    n = len(corpus)
    avgdl = sum(len(d) for d in corpus) / n
    out = []
    for d in corpus:
        s = 0.0
        for t in query:
            df = sum(t in doc for doc in corpus)
            tf = d.count(t)
            if df and tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["aa", "bb", "cc", "dd", "ee"]), max_size=6),
             min_size=1, max_size=8).filter(lambda c: any(c)),
    st.lists(st.sampled_from(["aa", "bb", "cc", "zz"]), max_size=4),
    st.sampled_from([(1.5, 0.75), (1.2, 0.3), (0.9, 1.0)]),
)
def test_scores_and_ranking_match_a_python_bm25(
    corpus: list[list[str]], query: list[str], params: tuple[float, float]
) -> None:
    k1, b = params
    r = BM25Retriever(stopwords=None, k1=k1, b=b)
    r.index([Doc(str(i), " ".join(toks)) for i, toks in enumerate(corpus)])
    expected = python_bm25(corpus, query, k1, b)
    got = r.scores([" ".join(query)])[0]
    assert np.allclose(got, expected, rtol=1e-5, atol=1e-6)
    # ranking: by the engine's own scores, ties by document order
    order, _ = r.rank_all([" ".join(query)])
    assert order[0].tolist() == sorted(range(len(corpus)), key=lambda i: (-got[i], i))


def test_make_retriever_by_name() -> None:
    from queryeval.engines.retrievers import make_retriever

    r = make_retriever("bm25", stopwords=None, k1=1.2, b=0.5)
    assert isinstance(r, BM25Retriever) and r.k1 == 1.2
    with pytest.raises(ConfigError, match="unknown retriever"):
        make_retriever("colbert")
