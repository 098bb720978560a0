"""SQuAD normalisation, exact match and token F1, hand-computed (queryeval.metrics.squad)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.metrics.squad import best_over, exact_match, normalize_answer, token_f1


@pytest.mark.parametrize("text, norm", [
    ("The  Eiffel-Tower!", "eiffeltower"),       # punctuation goes before articles
    ("An apple, a day", "apple day"),
    ("theatre", "theatre"),                      # articles only as whole words
    ("  ", ""),
])
def test_normalize_answer(text, norm):
    assert normalize_answer(text) == norm


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Cat.", "cat") == 1.0 and exact_match("cats", "cat") == 0.0
    # "big red dog" vs "red dog house": 2 common tokens, P = R = 2/3
    assert token_f1("a big red dog", "red dog house") == pytest.approx(2 / 3)
    # repeated tokens count as a bag: "dog dog" vs "dog": common 1, P = 1/2, R = 1
    assert token_f1("dog dog", "dog") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0 and token_f1("x", "y") == 0.0
    assert best_over(exact_match, "cat", ["dog", "The cat"]) == 1.0
    assert best_over(token_f1, "cat", []) == 0.0


words = st.lists(st.sampled_from(["a", "the", "cat", "dog", "red", "big"]), max_size=6)


@given(words, words)
def test_f1_against_brute_force(p, r):
    pred, ref = [w for w in p if w not in ("a", "the")], [w for w in r if w not in ("a", "the")]
    if not pred or not ref:
        expected = float(pred == ref)
    else:
        left, common = list(ref), 0
        for w in pred:  # brute-force bag intersection
            if w in left:
                left.remove(w)
                common += 1
        expected = 0.0 if not common else 2 * common / (len(pred) + len(ref))
    assert token_f1(" ".join(p), " ".join(r)) == pytest.approx(expected)
