"""Agreement figures (metrics/agreement.py) against scikit-learn and hand-computed values."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from queryeval.metrics.agreement import agreement, confusion, rates, self_consistency

labels = st.lists(st.sampled_from(["pass", "fail"]), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_matches_scikit_learn(data):
    human = data.draw(labels)
    judge = data.draw(st.lists(st.sampled_from(["pass", "fail"]), min_size=len(human),
                               max_size=len(human)))
    m = confusion(human, judge)
    assert m == confusion_matrix(human, judge, labels=["fail", "pass"]).tolist()
    r = rates(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = cohen_kappa_score(human, judge, labels=["fail", "pass"])
    if math.isnan(k):
        assert r["kappa"] is None
    else:
        assert r["kappa"] == pytest.approx(k, abs=1e-12)
    (tn, fp), (fn, tp) = confusion_matrix(human, judge, labels=["fail", "pass"]).tolist()
    assert r["accuracy"] == pytest.approx((tn + tp) / len(human))
    assert r["tpr"] == (None if tp + fn == 0 else pytest.approx(tp / (tp + fn)))
    assert r["tnr"] == (None if tn + fp == 0 else pytest.approx(tn / (tn + fp)))


def test_hand_computed():
    human = ["pass"] * 6 + ["fail"] * 4
    judge = ["pass"] * 5 + ["fail"] + ["fail"] * 3 + ["pass"]
    m = confusion(human, judge)
    assert m == [[3, 1], [1, 5]]
    r = rates(m)
    # po = 0.8; pe = 0.6*0.6 + 0.4*0.4 = 0.52; kappa = 0.28 / 0.48
    assert r["kappa"] == pytest.approx(0.28 / 0.48)
    assert (r["tpr"], r["tnr"], r["accuracy"]) == (pytest.approx(5 / 6), 0.75, 0.8)


def test_bootstrap_intervals_bracket_and_are_seeded():
    human = ["pass"] * 30 + ["fail"] * 20
    judge = ["pass"] * 27 + ["fail"] * 3 + ["fail"] * 16 + ["pass"] * 4
    a = agreement(human, judge, resamples=500, seed=3)
    b = agreement(human, judge, resamples=500, seed=3)
    assert a == b and a["n"] == 50
    for key in ("kappa", "tpr", "tnr", "accuracy"):
        f = a[key]
        assert f["ci_low"] <= f["value"] <= f["ci_high"]
    assert a["accuracy"]["value"] == pytest.approx(43 / 50)
    assert a["confusion"] == [[16, 4], [3, 27]]


def test_perfect_agreement_on_one_label_has_no_kappa():
    a = agreement(["pass"] * 5, ["pass"] * 5, resamples=50)
    assert a["kappa"] == {"value": None, "ci_low": None, "ci_high": None}
    assert a["tpr"]["value"] == 1.0 and a["tnr"]["value"] is None
    assert agreement([], [], resamples=10)["accuracy"]["value"] is None


def test_bad_labels_refused():
    with pytest.raises(ValueError, match=r"judge\[1\]"):
        confusion(["pass", "fail"], ["pass", "yes"])
    with pytest.raises(ValueError, match="2 human labels but 1"):
        confusion(["pass", "fail"], ["pass"])


def _fleiss_brute(rows):
    """Fleiss' kappa by its textbook definition (Fleiss 1971), category counts per subject."""
    n_sub, m = len(rows), len(rows[0])
    counts = [[r.count("fail"), r.count("pass")] for r in rows]
    p_i = [(sum(c * c for c in cs) - m) / (m * (m - 1)) for cs in counts]
    p_j = [sum(cs[j] for cs in counts) / (n_sub * m) for j in range(2)]
    pe = sum(p * p for p in p_j)
    return None if pe == 1 else (sum(p_i) / n_sub - pe) / (1 - pe)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 5).flatmap(lambda m: st.lists(
    st.lists(st.sampled_from(["pass", "fail"]), min_size=m, max_size=m), min_size=1, max_size=30)))
def test_self_consistency_against_textbook_fleiss(rows):
    s = self_consistency(rows)
    want = _fleiss_brute(rows)
    assert s["fleiss_kappa"] == (None if want is None else pytest.approx(want))
    assert s["unanimous"] == pytest.approx(sum(len(set(r)) == 1 for r in rows) / len(rows))
    m = len(rows[0])
    pairs = [sum(r[i] == r[j] for i in range(m) for j in range(i + 1, m)) / (m * (m - 1) / 2)
             for r in rows]
    assert s["pairwise"] == pytest.approx(sum(pairs) / len(pairs))
