"""Seed 000 set metrics: the seed's worked example and every documented edge case,
with expectations computed by hand in the comments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.metrics.sets import micro_scores, precision, recall, score_selection, set_confusion

GDP = {"id": "GDP", "name": "gross domestic product"}
GDPPC = {"id": "GDPPC", "name": "GDP per capita"}
GDP_CONST = {"id": "GDP_CONST", "name": "gross domestic product constant prices"}
MEX = {"id": "MEX", "name": "Mexico"}
USA = {"id": "USA", "name": "United States"}


def sel(dataset="IMF.RES:WEO", **dims):
    return {"dataset_id": dataset,
            "dimensions": [{"dimension_name": d, "values": v} for d, v in dims.items()]}


def test_seed_worked_example():
    # Target GDP, GDPPC; selected GDP, GDPPC, GDP_CONST -> P = 2/3, R = 1.0
    score = score_selection([sel(INDICATOR=[GDP, GDPPC])], [sel(INDICATOR=[GDP, GDPPC, GDP_CONST])])
    (d,) = score.dimensions
    assert d.tp == [("GDP", "gross domestic product"), ("GDPPC", "GDP per capita")]
    assert d.fp == [("GDP_CONST", "gross domestic product constant prices")]
    assert d.fn == []
    assert d.precision == pytest.approx(2 / 3)
    assert round(d.precision, 2) == 0.67
    assert d.recall == 1.0
    assert score.macro_precision == pytest.approx(2 / 3)
    assert score.macro_recall == 1.0


def test_macro_is_mean_over_dimensions():
    # INDICATOR: P=1/2 R=1/1; COUNTRY: P=1/1 R=1/2 -> macro P = 0.75, macro R = 0.75
    target = [sel(INDICATOR=[GDP], COUNTRY=[MEX, USA])]
    selected = [sel(INDICATOR=[GDP, GDPPC], COUNTRY=[MEX])]
    s = score_selection(target, selected)
    assert [(d.dimension, d.precision, d.recall) for d in s.dimensions] == [
        ("INDICATOR", 0.5, 1.0), ("COUNTRY", 1.0, 0.5)]
    assert s.macro_precision == 0.75
    assert s.macro_recall == 0.75


def test_match_requires_exact_id_and_name_pair():
    # same id, different name: a false positive and a false negative
    s = score_selection([sel(COUNTRY=[MEX])], [sel(COUNTRY=[{"id": "MEX", "name": "mexico"}])])
    (d,) = s.dimensions
    assert (len(d.tp), len(d.fp), len(d.fn)) == (0, 1, 1)
    assert (d.precision, d.recall) == (0.0, 0.0)


def test_absent_target_dimension_counts_as_false_positives_and_enters_precision():
    # target has INDICATOR only; the system also selects FREQ=A
    # INDICATOR P=1 R=1; FREQ (not in target) P=0, recall None
    # macro P = (1 + 0) / 2 = 0.5 ; macro R = 1.0 (FREQ has nothing to recall)
    target = [sel(INDICATOR=[GDP])]
    selected = [sel(INDICATOR=[GDP], FREQ=[{"id": "A", "name": "Annual"}])]
    s = score_selection(target, selected)
    extra = s.not_in_target
    assert [(d.dimension, d.in_target, d.precision, d.recall, len(d.fp)) for d in extra] == [
        ("FREQ", False, 0.0, None, 1)]
    assert s.macro_precision == 0.5
    assert s.macro_recall == 1.0
    # option: dimensions not in target stay out of the macro average
    s2 = score_selection(target, selected, include_extra=False)
    assert s2.macro_precision == 1.0 and len(s2.not_in_target) == 1


def test_empty_target_values_is_the_same_as_absent():
    target = [sel(INDICATOR=[GDP], COUNTRY=[])]
    selected = [sel(INDICATOR=[GDP], COUNTRY=[MEX])]
    s = score_selection(target, selected)
    country = [d for d in s.dimensions if d.dimension == "COUNTRY"][0]
    assert not country.in_target and country.precision == 0.0 and country.recall is None


def test_nothing_selected_for_a_target_dimension_scores_zero_precision():
    # documented zero-division rule: 0/0 precision on a dimension that was asked for is 0.0
    s = score_selection([sel(INDICATOR=[GDP], COUNTRY=[MEX])], [])
    assert [(d.precision, d.recall) for d in s.dimensions] == [(0.0, 0.0), (0.0, 0.0)]
    assert (s.macro_precision, s.macro_recall) == (0.0, 0.0)


def test_no_target_no_selection_is_perfect_and_no_target_with_selection_is_not():
    assert (score_selection([], []).macro_precision, score_selection([], []).macro_recall) == (1.0, 1.0)
    s = score_selection([], [sel(COUNTRY=[MEX])])
    assert (s.macro_precision, s.macro_recall) == (0.0, 1.0)
    assert score_selection([], [sel(COUNTRY=[MEX])], include_extra=False).macro_precision == 1.0


def test_multi_dataset_keys_on_dataset_and_dimension():
    # the right term under the wrong dataset is a FP there and a FN in the target's dataset
    target = [sel("A", INDICATOR=[GDP]), sel("B", INDICATOR=[GDPPC])]
    selected = [sel("A", INDICATOR=[GDP, GDPPC])]
    s = score_selection(target, selected)
    got = {(d.dataset_id, d.dimension): (d.precision, d.recall) for d in s.dimensions}
    assert got == {("A", "INDICATOR"): (0.5, 1.0), ("B", "INDICATOR"): (0.0, 0.0)}
    assert s.macro_precision == 0.25 and s.macro_recall == 0.5


def test_duplicates_count_once_and_split_dataset_entries_merge():
    target = [sel(INDICATOR=[GDP]), sel(INDICATOR=[GDPPC])]  # same dataset listed twice
    selected = [sel(INDICATOR=[GDP, GDP, GDPPC])]
    (d,) = score_selection(target, selected).dimensions
    assert (len(d.tp), len(d.fp), len(d.fn)) == (2, 0, 0)


def test_zero_division_helpers():
    assert precision(0, 0) == 0.0 and precision(0, 0, zero_division=1.0) == 1.0
    assert recall(0, 0) == 1.0 and recall(1, 3) == 0.25


def test_micro_scores_pool_counts():
    s1 = score_selection([sel(INDICATOR=[GDP])], [sel(INDICATOR=[GDP, GDPPC])])  # tp1 fp1
    s2 = score_selection([sel(COUNTRY=[MEX, USA])], [sel(COUNTRY=[MEX])])  # tp1 fn1
    m = micro_scores([*s1.dimensions, *s2.dimensions])
    assert (m["tp"], m["fp"], m["fn"]) == (2, 1, 1)
    assert m["micro_precision"] == pytest.approx(2 / 3) and m["micro_recall"] == pytest.approx(2 / 3)
    assert micro_scores([])["micro_precision"] == 1.0


terms = st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("xy")), max_size=8)


@given(terms, terms)
def test_confusion_matches_set_algebra(selected, target):
    tp, fp, fn = set_confusion(target, selected)
    assert set(tp) == set(selected) & set(target)
    assert set(fp) == set(selected) - set(target)
    assert set(fn) == set(target) - set(selected)
    assert len(tp) + len(fp) == len(set(selected)) and len(tp) + len(fn) == len(set(target))
