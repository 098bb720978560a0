"""A prediction the test suite refutes names its refuting neighbour in JUnit and in
``qe.testing.check_case`` (both said only ``test_suite_match = 0`` / expected vs got): which
neighbour, its size, and the row counts gold and prediction gave there."""

from __future__ import annotations

import json

import pytest

from helpers.testsuite_sql import build_example

junitparser = pytest.importorskip("junitparser")


def _predictions(folder) -> dict[str, str]:
    rows = map(json.loads, (folder / "predictions.jsonl").read_text().splitlines())
    return {r["case_id"]: r["query"] for r in rows}


@pytest.fixture(scope="module")
def example_junit(tmp_path_factory):
    """The test-suite example run once with --junit: (records by case id, testcases)."""
    from queryeval.cli.app import main

    tmp_path = tmp_path_factory.mktemp("junit")
    folder = tmp_path / "emp"
    folder.mkdir()
    build_example(folder)
    assert main(["run", str(folder / "suite.yaml"), "--responses",
                 str(folder / "predictions.jsonl"), "--test-suite", "5", "--out",
                 str(tmp_path / "runs"), "-q", "--no-report", "--junit",
                 str(tmp_path / "j.xml")]) == 0
    [results] = (tmp_path / "runs").rglob("results_*.jsonl")
    records = {r["case_id"]: r for r in map(json.loads, results.read_text().splitlines())}
    cases = {c.name: c for s in junitparser.JUnitXml.fromfile(str(tmp_path / "j.xml")) for c in s}
    return records, cases


def _failure(cases: dict, case_id: str):
    [failure] = next(c for name, c in cases.items() if case_id in name).result
    return failure


def test_junit_names_the_refuting_neighbour(example_junit):
    records, cases = example_junit
    refuted = records["high-earners"]["test_suite"]["refuted_by"]
    sample = refuted["result_sample"]
    failure = _failure(cases, "high-earners")
    assert (f"(test suite: refuted by neighbour {refuted['neighbour']} ({refuted['rows']} rows): "
            "gold and prediction give different results there; there the gold gives "
            f"{sample['gold']['total']} row(s), the prediction {sample['predicted']['total']})"
            ) in failure.message


def test_check_case_names_the_refuting_neighbour(tmp_path):
    import queryeval as qe
    from queryeval.testing import check_case

    folder = tmp_path / "emp"
    folder.mkdir()
    build_example(folder)
    [case] = [p.values[0] for p in qe.testing.cases(folder / "suite.yaml")
              if p.id == "high-earners"]
    answer = _predictions(folder)["high-earners"]
    with pytest.raises(AssertionError) as err:
        check_case(case, lambda request: {"query": answer}, test_suite=5)
    assert "test suite: refuted by neighbour" in str(err.value)


def test_junit_names_the_differing_rows_when_the_counts_agree(example_junit):
    """COUNT(*) gives one row on both sides: '1 row(s), the prediction 1' said nothing of
    what differed; the message now names the first row of each side the other lacks."""
    records, cases = example_junit
    sample = records["count-at-least-120"]["test_suite"]["refuted_by"]["result_sample"]
    assert sample["gold"]["total"] == sample["predicted"]["total"] == 1
    gold_row, pred_row = sample["gold"]["rows"][0], sample["predicted"]["rows"][0]
    assert gold_row != pred_row
    failure = _failure(cases, "count-at-least-120")
    assert (f"there the gold gives 1 row(s), the prediction 1: gold row {json.dumps(gold_row)} "
            f"vs prediction row {json.dumps(pred_row)})") in failure.message
