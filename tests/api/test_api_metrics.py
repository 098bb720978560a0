"""The metric families as pure functions with one argument order: ground truth, then output."""

from __future__ import annotations

import pytest

import queryeval as qe


def sel(*terms):
    return [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": i, "name": n} for i, n in terms]}]}]


def test_selection_score_is_target_first():
    target = sel(("MEX", "Mexico"), ("USA", "United States"))
    got = qe.metrics.selection.score(target, sel(("MEX", "Mexico"), ("FRA", "France")))
    assert (got.macro_precision, got.macro_recall) == (0.5, 0.5)
    # swapping the arguments swaps the roles: 1 of 3 selected right vs 1 of 2 found
    got = qe.metrics.selection.score(sel(("MEX", "Mexico")), target)
    assert (got.macro_precision, got.macro_recall) == (0.5, 1.0)


def test_answers_score_takes_a_mapping_or_pairs():
    a = qe.metrics.answers.score({"n": "3", "m": "4"}, "@n[3.0] @m[5]")
    b = qe.metrics.answers.score([("n", "3"), ("m", "4")], "@n[3.0] @m[5]", match="strict")
    assert (a.correct, a.total) == (1, 2)
    assert (b.correct, b.total) == (0, 2)


def test_fields_score_recall_mrr_passed():
    s = qe.metrics.fields.score(["b", "d"], ["a", "b", "c", "d"], n=3, field="item")
    assert (s.field, s.recall, s.passed) == ("item", 0.5, False)
    assert s.mrr == pytest.approx(0.5 / 2)  # (1/2 + 0) / 2 ground-truth values
    assert qe.metrics.fields.score("b;d", ["a", "b", "c", "d"]).passed


def test_tables_score_is_gold_first_and_ranking_score_is_evaluate():
    gold = {"head": ["x"], "rows": [["1"], ["2"]]}
    pred = {"head": ["x"], "rows": [["1"]]}
    assert qe.metrics.tables.score(gold, pred) == qe.metrics.tables.table_scores(gold, pred)
    assert qe.metrics.tables.score(gold, gold).exact_match_f1 == 1.0
    result = qe.metrics.ranking.score({"q": {"d1": 1}}, {"q": {"d2": 2.0, "d1": 1.0}}, ["mrr@10"])
    assert result.means["mrr@10"] == 0.5
    assert qe.metrics.ranking.score is qe.metrics.ranking.evaluate
