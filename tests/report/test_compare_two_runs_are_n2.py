"""Two runs are the N = 2 case of the one compare model: the two-run view (B against A)
reads the pair of the model's table, one output layer writes both views, one
``check_regression`` gates both. Figures hand-computed on 10 cases of two sub-questions."""

from __future__ import annotations

import json

import pytest
from rich.table import Table

import queryeval as qe
from queryeval.errors import ConfigError, GateFailure
from queryeval.report.compare import (
    Comparison,
    NWayComparison,
    check_regression,
    compare_many,
    compare_runs,
)
from queryeval.report.compare_output import console_renderables, write

pytestmark = pytest.mark.slow  # builds runs: about 20 s on the 2-core box

N = 10
CASES = [{"id": f"c{i}", "conversation": [{"role": "user", "content": f"q{i}?", "target": {
    "answers": [{"name": "n", "value": str(i)}, {"name": "m", "value": "1"}]}}]}
    for i in range(N)]
# exact sign-flip test, 10 equal non-zero differences: p = 2 / 2**10
P_RAW = 2 / 2 ** 10


def _responses(right: set[int]) -> list[dict]:
    return [{"id": f"c{i}", "response": f"@n[{i if i in right else 'x'}] @m[1]"}
            for i in range(N)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("n2")
    a = qe.evaluate(CASES, responses=_responses(set(range(N))), out=root / "a", name="good")
    b = qe.evaluate(CASES, responses=_responses(set()), out=root / "b", name="bad")
    return a.path, b.path


def test_two_run_view_is_the_pair_of_the_n2_table(runs):
    two = compare_runs(*runs)
    model = compare_many(list(runs))
    assert isinstance(two, Comparison) and isinstance(model, NWayComparison)
    # every case right in A; in B one of two sub-questions (m) right, so all_correct 0
    assert [(m.metric, m.mean_a, m.mean_b, m.verdict) for m in two.metrics] == [
        ("proportion_correct", 1.0, 0.5, "worse"), ("all_correct", 1.0, 0.0, "worse"),
        ("correct_subquestions", 2.0, 1.0, "count (not tested)"),
        ("subquestions", 2.0, 2.0, "count (not tested)")]
    # Holm over the 2 tested metrics, both p = 2/1024: 2 * 2/1024
    for name in ("proportion_correct", "all_correct"):
        m, test = two.metric(name), model.overall.test(name, 0, 1)
        assert m.p_randomization == test.result.p_randomization == P_RAW
        assert m.p_holm == test.p_adjusted == 2 * P_RAW
    # counts are shown in the two-run view, never tested in the table
    assert model.overall.counts == {"correct_subquestions", "subquestions"}
    assert {t.result.metric for t in model.overall.tests} == {"proportion_correct", "all_correct"}
    assert two.to_dict() == model.pair_view().to_dict()


def test_one_gate_for_both_views(runs, tmp_path):
    a, b = runs
    with pytest.raises(GateFailure) as two:
        check_regression(compare_runs(a, b))
    assert str(two.value) == (
        "significant regression: proportion_correct: 1.0000 (A) -> 0.5000 (B), difference "
        "-0.5000, Holm-adjusted p = 0.003906 < alpha 0.05 (10 case(s) regressed); all_correct: "
        "1.0000 (A) -> 0.0000 (B), difference -1.0000, Holm-adjusted p = 0.003906 < alpha 0.05 "
        "(10 case(s) regressed)")
    # three runs, baseline pairs: 2 pairs x 2 metrics in Holm's family; a against itself
    # gives p = 1 twice, so the two p = 2/1024 become 4 * 2/1024 = 0.0078125
    with pytest.raises(GateFailure) as three:
        check_regression(compare_many([a, b, a]))
    assert str(three.value) == (
        "significant regression against the baseline: b (bad) proportion_correct: 1.0000 -> "
        "0.5000, Holm-adjusted p = 0.007812 < alpha 0.05; b (bad) all_correct: 1.0000 -> "
        "0.0000, Holm-adjusted p = 0.007812 < alpha 0.05")
    with pytest.raises(GateFailure):
        qe.compare(a, b).check()
    check_regression(compare_runs(b, a))  # B better than A: no regression, no raise


def test_one_output_layer_writes_both_views(runs, tmp_path):
    two, model = compare_runs(*runs), compare_many(list(runs))
    doc2 = json.loads(write(two, tmp_path / "two.json", "json").read_text())
    docn = json.loads(write(model, tmp_path / "n.json", "json").read_text())
    assert doc2["comparison_schema"] == "queryeval.compare/1"
    assert docn["comparison_schema"] == "queryeval.compare-nway/1"
    assert doc2["regressions"] == ["proportion_correct", "all_correct"]
    assert [r["metric"] for r in docn["regressions"]] == ["proportion_correct", "all_correct"]
    assert doc2["verdicts"]["subquestions"] == "count (not tested)"
    assert write(model, tmp_path / "n.md", "md").read_text().startswith("## Compare answers")
    with pytest.raises(ConfigError, match="unknown output kind 'md'"):
        write(two, tmp_path / "two.md", "md")  # the B-against-A view has no table files
    # the console: a B − A table for two runs, runs as columns for the table
    def headers(comp) -> list[list[str]]:
        return [[c.header for c in r.columns] for r in console_renderables(comp)
                if isinstance(r, Table)]

    assert headers(two)[0] == ["metric", "n", "A", "B", "B − A", "95% CI", "p Holm", "verdict"]
    assert headers(model)[:2] == [["run", "label", "batch", "cases"], ["metric", "n", "a", "b"]]
