"""SQuAD normalisation, exact match and token F1 (queryeval.metrics.squad): hand-computed
values, and both versions against transcriptions of the official scripts' functions."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.metrics.squad import exact_match, normalize_answer, squad_scores, token_f1


@pytest.mark.parametrize("text, norm", [
    ("The  Eiffel-Tower!", "eiffeltower"),       # punctuation goes before articles
    ("An apple, a day", "apple day"),
    ("theatre", "theatre"),                      # articles only as whole words
    ("  ", ""),
])
def test_normalize_answer(text, norm):
    assert normalize_answer(text) == norm


def test_exact_match_and_f1_by_hand():
    assert exact_match("cat", "the Cat.") == 1.0 and exact_match("cat", "cats") == 0.0
    # "big red dog" vs "red dog house": 2 common tokens, P = R = 2/3
    assert token_f1("red dog house", "a big red dog") == pytest.approx(2 / 3)
    # repeated tokens count as a bag: "dog dog" vs "dog": common 1, P = 1/2, R = 1
    assert token_f1("dog", "dog dog") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("", "") == 1.0 and token_f1("", "x") == 0.0 and token_f1("y", "x") == 0.0
    assert squad_scores(["dog", "The cat"], "cat") == (1.0, 1.0)
    assert squad_scores([], "cat") == (0.0, 0.0)


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
    assert token_f1(" ".join(r), " ".join(p)) == pytest.approx(expected)


# --- the official scripts, transcribed as the oracle ------------------------------------------
# evaluate-v1.1.py (SQuAD v1.1's official script): normalize_answer, f1_score,
# exact_match_score, metric_max_over_ground_truths; evaluate-v2.0.py: normalize_answer,
# get_tokens, compute_exact, compute_f1 and get_raw_scores' choice of gold answers.

def _ref_normalize(s):
    import re as _re
    import string as _string

    def remove_articles(text):
        return _re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(_string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _v11_f1(prediction, ground_truth):
    from collections import Counter

    prediction_tokens = _ref_normalize(prediction).split()
    ground_truth_tokens = _ref_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def _v11_em(prediction, ground_truth):
    return _ref_normalize(prediction) == _ref_normalize(ground_truth)


def _v11_scores(prediction, ground_truths):
    return (float(max(_v11_em(prediction, g) for g in ground_truths)),
            float(max(_v11_f1(prediction, g) for g in ground_truths)))


def _v20_tokens(s):
    if not s:
        return []
    return _ref_normalize(s).split()


def _v20_f1(a_gold, a_pred):
    from collections import Counter

    gold_toks = _v20_tokens(a_gold)
    pred_toks = _v20_tokens(a_pred)
    common = Counter(gold_toks) & Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def _v20_scores(prediction, answers):
    gold_answers = [a for a in answers if _ref_normalize(a)]
    if not gold_answers:
        gold_answers = [""]
    return (max(int(_ref_normalize(a) == _ref_normalize(prediction)) for a in gold_answers),
            max(_v20_f1(a, prediction) for a in gold_answers))


def test_the_versions_differ_where_the_issue_says():
    """token_f1('a', 'The'): 1.0 under v2.0 (the default: both sides empty agree), 0.0 under
    v1.1 (no common token); v2.0 drops a reference that normalises to empty, v1.1 keeps it."""
    assert token_f1("The", "a") == 1.0 == _v20_f1("The", "a")
    assert token_f1("The", "a", "v1.1") == 0.0 == _v11_f1("a", "The")
    assert exact_match("The", "a") == 1.0  # both versions: '' == ''
    # references ['The', 'cat']: v1.1 keeps 'The', so the response 'an' matches it exactly;
    # v2.0 drops it and scores 'an' against 'cat' only
    assert squad_scores(["The", "cat"], "an", "v1.1") == (1.0, 0.0) == _v11_scores("an", ["The", "cat"])
    assert squad_scores(["The", "cat"], "an") == (0.0, 0.0) == _v20_scores("an", ["The", "cat"])
    # only empty references: v2.0 scores against '' (an empty response is right)
    assert squad_scores(["a", "."], "") == (1.0, 1.0) == _v20_scores("", ["a", "."])
    assert squad_scores(["a", "."], "", "v1.1") == (1.0, 0.0) == _v11_scores("", ["a", "."])


texts = st.lists(st.sampled_from(["a", "The", "an", "cat", "Cat.", "dog", "!", "red", ""]),
                 max_size=4).map(" ".join)


@given(texts, st.lists(texts, min_size=1, max_size=3))
def test_both_versions_equal_their_official_scripts(prediction, references):
    assert squad_scores(references, prediction, "v1.1") == pytest.approx(
        _v11_scores(prediction, references))
    assert squad_scores(references, prediction, "v2.0") == pytest.approx(
        _v20_scores(prediction, references))
    assert squad_scores(references, prediction) == squad_scores(references, prediction, "v2.0")


def test_retrieval_answers_follow_the_squad_option():
    from pydantic import ValidationError

    from queryeval.tasks.retrieval.answer import answer_scores
    from queryeval.tasks.retrieval.task import RetrievalOptions

    assert answer_scores("The", "a")["answer_f1"] == 1.0
    assert answer_scores("The", "a", "v1.1")["answer_f1"] == 0.0
    assert RetrievalOptions().squad == "v2.0" and RetrievalOptions(squad="v1.1").squad == "v1.1"
    assert RetrievalOptions(squad=1.1).squad == "v1.1" and RetrievalOptions(squad="2.0").squad == "v2.0"
    for bad in ("v3", 1, True, None):
        with pytest.raises(ValidationError):
            RetrievalOptions(squad=bad)
