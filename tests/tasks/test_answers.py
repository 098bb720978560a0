"""Closed-form answers (seed 001): extraction, comparison, per-question kernel, aggregates.

Expected values are computed by hand in the comments; the property tests compare against
brute-force oracles written from the seed's formulas and the reference's regex.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.answers import (
    answers_match,
    closed_form_metrics,
    extract_answers,
    score_question,
)

# --------------------------------------------------------------------------- extraction


def test_extract_basic_and_last_duplicate_wins_keeping_first_position():
    got = extract_answers("x @b[1] text @a[2]\n@b[3]")
    assert got == {"b": "3", "a": "2"}
    assert list(got) == ["b", "a"]  # dict semantics: first position, last value


def test_extract_value_stops_at_first_bracket_and_never_spans_lines():
    assert extract_answers("@a[1]]") == {"a": "1"}
    assert extract_answers("@a[@b[1]]") == {"a": "@b[1"}  # no overlap, like re.findall
    # no ']' on the line of @a: @a is dropped, the scan resumes and finds @b
    assert extract_answers("@a[1\n2] @b[3]") == {"b": "3"}
    assert extract_answers("@a[ 34.65 ]") == {"a": " 34.65 "}  # nothing stripped
    assert extract_answers("@a[]") == {"a": ""}


def test_extract_name_is_word_characters():
    assert extract_answers("@mean_fare_2[1]") == {"mean_fare_2": "1"}
    assert extract_answers("@mean-fare[1]") == {}  # '-' ends the name, '[' must follow
    assert extract_answers("@ a[1]") == {}
    assert extract_answers("mail@x[1]") == {"x": "1"}  # not anchored
    assert extract_answers("@é[1]") == {"é": "1"}  # \w is Unicode-aware
    assert extract_answers("no answers here") == {}


def _oracle_extract(text: str) -> dict[str, str]:
    """Brute-force scanner with the regex's semantics (see docs/answers.md)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(text):
        if text[i] == "@":
            j = i + 1
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            if j > i + 1 and j < len(text) and text[j] == "[":
                k = j + 1
                while k < len(text) and text[k] not in "]\n":
                    k += 1
                if k < len(text) and text[k] == "]":
                    out[text[i + 1 : j]] = text[j + 1 : k]
                    i = k + 1
                    continue
        i += 1
    return out


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="@[]_\n ab1é.", max_size=40))
def test_extract_matches_bruteforce_scanner(text):
    assert extract_answers(text) == _oracle_extract(text)


# --------------------------------------------------------------------------- comparison


@pytest.mark.parametrize(
    ("expected", "got", "numeric", "strict"),
    [
        ("34.65", "34.65", True, True),
        ("34.65", "34.650", True, False),  # same float
        ("34.65", " 34.65", True, False),  # float() ignores surrounding whitespace
        ("34.65", "34.65\t", True, False),
        ("100", "1e2", True, False),
        ("1000", "1_000", True, False),  # Python's float() accepts digit underscores
        ("-0", "0", True, False),
        ("0.1", "0.1000001", True, False),  # |diff| = 1e-7 < 1e-6
        ("0.1", "0.100001", False, False),  # |diff| = 1.000000000001e-06, not < 1e-6
        ("34.65", "34.66", False, False),
        ("nan", "nan", True, True),  # equal strings
        ("nan", "NaN", False, False),  # NaN - NaN is NaN, never < 1e-6
        ("inf", "Infinity", False, False),  # inf - inf is NaN
        ("1,234", "1,234", True, True),  # equal strings
        ("1234", "1,234", False, False),  # '1,234' is not a float: string compare only
        ("1,234", "1234", False, False),
        ("abc", " abc", False, False),  # whitespace only forgiven for numbers
        ("Yes", "yes", False, False),  # case matters
        ("", "", True, True),  # empty label, empty extracted value
        ("5", None, False, False),  # name not extracted
    ],
)
def test_answers_match_modes(expected, got, numeric, strict):
    assert answers_match(expected, got, "numeric") is numeric
    assert answers_match(expected, got, "strict") is strict


def test_answers_match_rejects_unknown_mode():
    with pytest.raises(ValueError, match="match mode"):
        answers_match("1", "1", "fuzzy")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- kernel


def test_score_question_details():
    s = score_question([("a", "1"), ("b", "x"), ("c", "3")], "@a[1.0] @b[y] @zz[9]")
    assert [(x.name, x.expected, x.extracted, x.matched) for x in s.subs] == [
        ("a", "1", "1.0", True),
        ("b", "x", "y", False),
        ("c", "3", None, False),
    ]
    assert (s.total, s.correct, s.all_correct, s.answered, s.skipped) == (3, 1, False, True, False)
    assert s.proportion == pytest.approx(1 / 3)
    assert dict(s.extracted) == {"a": "1.0", "b": "y", "zz": "9"}


def test_score_question_duplicate_labels_and_responses_last_wins():
    # labels: a=1 then a=2 -> one sub-question a=2; response: a=5 then a=2 -> a=2
    s = score_question([("a", "1"), ("b", "7"), ("a", "2")], "@a[5] @b[7] @a[2]")
    assert [(x.name, x.expected, x.extracted) for x in s.subs] == [("a", "2", "2"), ("b", "7", "7")]
    assert s.all_correct
    # response's earlier value would have matched the first label, but it is overridden
    assert not score_question([("a", "5")], "@a[5] @a[2]").all_correct


@pytest.mark.parametrize("response", [None, ""])
@pytest.mark.parametrize("missing", ["wrong", "skip"])
def test_score_question_missing_and_empty(response, missing):
    s = score_question([("a", "1"), ("b", "2")], response, missing=missing)
    assert not s.answered
    assert s.skipped is (missing == "skip")
    assert s.correct == 0 and s.total == 2
    assert all(x.extracted is None for x in s.subs)


def test_whitespace_only_response_is_answered_and_wrong():
    s = score_question([("a", "1")], "   ", missing="skip")
    assert s.answered and not s.skipped and s.correct == 0


def test_score_question_strict_mode():
    assert not score_question([("a", "34.65")], "@a[34.650]", match="strict").all_correct
    assert score_question([("a", "34.65")], "@a[34.650]", match="numeric").all_correct


def test_score_question_rejects_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        score_question([], "@a[1]")
    with pytest.raises(ValueError, match="missing mode"):
        score_question([("a", "1")], "@a[1]", missing="zero")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- aggregate


@dataclass
class Q:
    concepts: list[str]
    level: str | None = None


def _small_set():
    """Q1: 1 sub, right. Q2: 3 subs, 1 right. Q3: 2 subs, 1 right. Q4: 2 subs, no response."""
    qs = [Q(["A"], "easy"), Q(["A", "B"], "hard"), Q(["B"]), Q(["C"], "easy")]
    labels = [
        [("x", "1")],
        [("x", "1"), ("y", "2"), ("z", "3")],
        [("x", "a"), ("y", "b")],
        [("x", "1"), ("y", "2")],
    ]
    responses = ["@x[1]", "@x[1] @y[0] @z[0]", "@x[a] @y[c]", None]
    return qs, labels, responses


def test_metrics_psaq_abq_uasq_all_differ_skip_mode():
    qs, labels, responses = _small_set()
    scores = [score_question(lab, r, missing="skip") for lab, r in zip(labels, responses, strict=True)]
    m = closed_form_metrics(scores, qs)
    # Q4 skipped. ABQ = 1/3. PSAQ = (1 + 1/3 + 1/2) / 3 = 11/18. UASQ = (1+1+1)/(1+3+2) = 1/2
    assert m["abq"] == 1 / 3
    assert m["psaq"] == float(Fraction(11, 18))
    assert m["uasq"] == 0.5
    assert (m["questions"], m["answered"], m["missing"], m["subquestions"]) == (3, 3, 1, 6)
    assert (m["correct_questions"], m["correct_subquestions"]) == (1, 3)
    # concept A: Q1, Q2 -> ABQ 1/2, PSAQ (1 + 1/3)/2 = 2/3, UASQ 2/4
    a = m["by_concept"]["A"]
    assert (a["questions"], a["abq"], a["psaq"], a["uasq"]) == (2, 0.5, float(Fraction(2, 3)), 0.5)
    # concept B: Q2, Q3 -> ABQ 0, PSAQ (1/3 + 1/2)/2 = 5/12, UASQ 2/5
    b = m["by_concept"]["B"]
    assert (b["abq"], b["psaq"], b["uasq"]) == (0.0, float(Fraction(5, 12)), 0.4)
    assert "C" not in m["by_concept"]  # only skipped questions: the group is absent
    assert list(m["by_concept"]) == ["A", "B"]
    # 1 concept: Q1, Q3 -> ABQ 1/2, PSAQ 3/4, UASQ 2/3; >1: Q2 -> ABQ 0, PSAQ 1/3, UASQ 1/3
    one, many = m["by_concept_group"]["1"], m["by_concept_group"][">1"]
    assert (one["abq"], one["psaq"], one["uasq"]) == (0.5, 0.75, 2 / 3)
    assert (many["abq"], many["psaq"], many["uasq"]) == (0.0, 1 / 3, 1 / 3)
    assert m["by_concept_count"]["1"] == one and m["by_concept_count"]["2"] == many
    # levels: easy = Q1 (Q4 skipped), hard = Q2; Q3 has none
    assert m["by_level"]["easy"]["abq"] == 1.0 and m["by_level"]["easy"]["questions"] == 1
    assert m["by_level"]["hard"]["psaq"] == 1 / 3


def test_metrics_missing_wrong_mode_counts_missing_as_zero():
    qs, labels, responses = _small_set()
    scores = [score_question(lab, r) for lab, r in zip(labels, responses, strict=True)]
    m = closed_form_metrics(scores, qs)
    # N = 4: ABQ = 1/4, PSAQ = (11/6)/4 = 11/24, UASQ = 3/8
    assert (m["abq"], m["psaq"], m["uasq"]) == (0.25, float(Fraction(11, 24)), 0.375)
    assert (m["questions"], m["answered"], m["missing"], m["subquestions"]) == (4, 3, 1, 8)
    assert m["by_concept"]["C"]["abq"] == 0.0
    assert m["by_level"]["easy"]["questions"] == 2 and m["by_level"]["easy"]["abq"] == 0.5


def test_metrics_zero_division_and_no_levels():
    m = closed_form_metrics([score_question([("a", "1")], None, missing="skip")], [Q(["A"])])
    assert (m["psaq"], m["abq"], m["uasq"]) == (None, None, None)
    assert (m["questions"], m["missing"], m["subquestions"]) == (0, 1, 0)
    assert m["by_concept"] == {} and m["by_concept_group"] == {}
    assert "by_level" not in m
    empty = closed_form_metrics([], [])
    assert empty["abq"] is None and empty["questions"] == 0


def test_metrics_concepts_counted_once_and_no_concept_question():
    scores = [score_question([("a", "1")], "@a[1]"), score_question([("a", "1")], "@a[2]")]
    m = closed_form_metrics(scores, [Q(["A", "A"]), Q([])])
    assert m["by_concept"]["A"]["questions"] == 1
    assert set(m["by_concept_count"]) == {"1", "0"}
    assert set(m["by_concept_group"]) == {"1"}  # a question without concepts is in neither
    assert m["abq"] == 0.5


def test_metrics_length_mismatch():
    with pytest.raises(ValueError, match="scores for"):
        closed_form_metrics([score_question([("a", "1")], "")], [])


@st.composite
def _question_sets(draw):
    n = draw(st.integers(0, 8))
    out = []
    for _ in range(n):
        bools = draw(st.lists(st.booleans(), min_size=1, max_size=4))
        response = draw(st.sampled_from(["present", None, ""]))
        concepts = draw(st.lists(st.sampled_from("ABC"), max_size=3, unique=True))
        out.append((bools, response, concepts))
    return out


@settings(max_examples=200, deadline=None)
@given(_question_sets(), st.sampled_from(["wrong", "skip"]))
def test_metrics_match_seed_formulas(qset, missing):
    scores, qs, kept = [], [], []
    for bools, response, concepts in qset:
        labels = [(f"n{i}", "1") for i in range(len(bools))]
        text = None if response is None else "".join(
            f"@n{i}[{'1' if ok else '2'}]" for i, ok in enumerate(bools)
        ) if response == "present" else ""
        scores.append(score_question(labels, text, missing=missing))
        qs.append(Q(concepts))
        if response == "present":
            kept.append(bools)
        elif missing == "wrong":
            kept.append([False] * len(bools))
    m = closed_form_metrics(scores, qs)
    n = len(kept)
    if n == 0:
        assert m["psaq"] is None and m["abq"] is None and m["uasq"] is None
        return
    # PSAQ = 1/N sum_i (1/M_i sum_j I_ij); ABQ = 1/N sum_i prod_j I_ij; UASQ = sum I / sum M
    psaq = sum(Fraction(sum(b), len(b)) for b in kept) / n
    abq = Fraction(sum(all(b) for b in kept), n)
    uasq = Fraction(sum(sum(b) for b in kept), sum(len(b) for b in kept))
    assert (m["psaq"], m["abq"], m["uasq"]) == (float(psaq), float(abq), float(uasq))
    assert m["questions"] == n
