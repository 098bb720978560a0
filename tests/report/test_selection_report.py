"""Seed 000's task and report: multi-turn means, groups, the details cell in the seed's exact
format, and the xlsx opened with openpyxl (sheet names, cells, formats)."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from queryeval.report.selection_xlsx import details_text, write_selection_xlsx
from queryeval.suite import load_suite
from queryeval.tasks.base import TurnOutcome, get_task
from queryeval.tasks.selection.task import SelectionTask

SUITE = """\
id: gdp
name: gdp example
tags: [imf, weo]
conversation:
- role: user
  content: GDP please
  target:
    indicator_selection:
    - dataset_id: WEO
      dimensions:
      - dimension_name: INDICATOR
        values:
        - {id: GDP, name: gross domestic product}
        - {id: GDPPC, name: GDP per capita}
---
id: multi
name: two turns
tags: [weo]
conversation:
- role: user
  content: Unemployment in France
  target:
    indicator_selection:
    - dataset_id: WEO
      dimensions:
      - dimension_name: COUNTRY
        values: [{id: FRA, name: France}]
- role: assistant
  content: here
- role: user
  content: And Brazil?
  target:
    indicator_selection:
    - dataset_id: WEO
      dimensions:
      - dimension_name: COUNTRY
        values: [{id: BRA, name: Brazil}, {id: ARG, name: Argentina}]
"""

GDP_SEL = [{"dataset_id": "WEO", "dimensions": [{"dimension_name": "INDICATOR", "values": [
    {"id": "GDP", "name": "gross domestic product"}, {"id": "GDPPC", "name": "GDP per capita"},
    {"id": "GDP_CONST", "name": "gross domestic product constant prices"}]}]}]


def country(*codes):
    names = {"FRA": "France", "BRA": "Brazil", "ARG": "Argentina"}
    return [{"dataset_id": "WEO", "dimensions": [{"dimension_name": "COUNTRY", "values": [
        {"id": c, "name": names[c]} for c in codes]}]}]


@pytest.fixture
def scored(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(SUITE)
    suite = load_suite(p)
    task = get_task("indicator_selection")
    gdp, multi = suite.cases
    assert task.requests(multi)[1]["messages"] == [
        {"role": "user", "content": "Unemployment in France"},
        {"role": "assistant", "content": "here"},
        {"role": "user", "content": "And Brazil?"},
    ]
    records = [
        task.score_case(gdp, [TurnOutcome(turn=0, output=GDP_SEL, attempts=1)]),
        task.score_case(multi, [
            TurnOutcome(turn=0, output=country("FRA"), attempts=1),
            TurnOutcome(turn=2, output=country("BRA", "FRA"), attempts=1),
        ]),
    ]
    return task, records


def test_multi_turn_case_is_the_mean_of_its_turns(scored):
    task, (gdp, multi) = scored
    # turn 0: P=1 R=1; turn 2: tp BRA, fp FRA, fn ARG -> P=1/2 R=1/2 ; case = 0.75 / 0.75
    assert [t["scores"]["macro_precision"] for t in multi["turns"]] == [1.0, 0.5]
    assert multi["scores"] == {"macro_precision": 0.75, "macro_recall": 0.75}
    assert gdp["scores"]["macro_precision"] == pytest.approx(2 / 3)


def test_aggregate_means_and_groups(scored):
    task, records = scored
    m = task.aggregate(records)
    o = m["overall_metrics"]
    assert o["macro_precision"] == pytest.approx((2 / 3 + 0.75) / 2)
    assert o["macro_recall"] == pytest.approx((1.0 + 0.75) / 2)
    # pooled: tp = 2 + 1 + 1 = 4, fp = 1 + 0 + 1 = 2, fn = 0 + 0 + 1 = 1
    assert (o["tp"], o["fp"], o["fn"]) == (4, 2, 1)
    assert o["micro_precision"] == pytest.approx(4 / 6) and o["micro_recall"] == pytest.approx(4 / 5)
    assert m["group_metrics"]["tag"]["imf"] == {"cases": 1, "macro_precision": pytest.approx(2 / 3),
                                                "macro_recall": 1.0}
    assert m["group_metrics"]["tag"]["weo"]["cases"] == 2
    country_stats = m["group_metrics"]["dimension"]["COUNTRY"]
    assert (country_stats["in_target"], country_stats["tp"], country_stats["fn"]) == (2, 2, 1)
    assert country_stats["mean_recall"] == 0.75


def test_rescore_reproduces_scores_from_the_record(scored):
    task, records = scored
    for r in records:
        assert task.rescore_record(r) == r


def test_details_cell_uses_the_seed_format(scored):
    _, (gdp, multi) = scored
    assert details_text(gdp) == (
        "WEO / INDICATOR\n"
        "[recall: 1.00, precision: 0.67]\n"
        "True Positives [2]\n"
        "  * GDP: gross domestic product\n"
        "  * GDPPC: GDP per capita\n"
        "False Negatives [0]\n"
        "False Positives [1]\n"
        "  * GDP_CONST: gross domestic product constant prices"
    )
    text = details_text(multi)
    assert text.startswith("=== turn 0: Unemployment in France\nWEO / COUNTRY\n[recall: 1.00, precision: 1.00]")
    assert "=== turn 2: And Brazil?\nWEO / COUNTRY\n[recall: 0.50, precision: 0.50]" in text


def test_dimensions_not_in_target_are_listed_separately(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(SUITE)
    task = get_task("indicator_selection")
    case = load_suite(p).cases[0]
    extra = GDP_SEL[:1] + [{"dataset_id": "WEO", "dimensions": [
        {"dimension_name": "FREQ", "values": [{"id": "A", "name": "Annual"}]}]}]
    record = task.score_case(case, [TurnOutcome(turn=0, output=extra)])
    assert details_text(record).endswith(
        "dimensions not in target\nWEO / FREQ\nFalse Positives [1]\n  * A: Annual")


def test_xlsx_sheets_cells_and_formats(scored, tmp_path: Path):
    task, records = scored
    metrics = task.aggregate(records)
    path = write_selection_xlsx(tmp_path / "report.xlsx", records, metrics,
                                verdict=SelectionTask.case_verdict)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["Overview", "Statistics"]
    ov = wb["Overview"]
    assert [c.value for c in ov[1]][:6] == ["id", "name", "tags", "macro recall", "macro precision",
                                           "indicator selection details"]
    assert ov.freeze_panes == "A2"
    assert ov["A2"].value == "gdp" and ov["C2"].value == "imf, weo"
    assert ov["D2"].value == 1.0 and ov["E2"].value == pytest.approx(2 / 3)
    assert ov["E2"].number_format == "0.00"
    assert ov["F2"].value == details_text(records[0]) and ov["F2"].alignment.wrap_text
    assert ov.column_dimensions["F"].width >= 60
    st = wb["Statistics"]
    assert st["A1"].value == "Data Query Metrics"
    rows = {r[0]: r[1] for r in st.iter_rows(min_row=3, max_row=11, values_only=True)}
    assert rows["macro precision"] == pytest.approx((2 / 3 + 0.75) / 2)
    assert rows["macro recall"] == pytest.approx(0.875)
    assert st["B3"].number_format == "0.00"
    titles = [r[0] for r in st.iter_rows(values_only=True) if r[0] in ("Per dimension", "Per dataset", "Per tag")]
    assert titles == ["Per dimension", "Per dataset", "Per tag"]


def test_run_log_drops_a_cut_short_last_line(tmp_path):
    from queryeval.run.log import RunLog

    log = RunLog.create(tmp_path, {"task": "indicator_selection"})
    log.append({"case_id": "a", "x": 1})
    log.append({"case_id": "b", "x": 2})
    log.append({"case_id": "a", "x": 3})  # a later record for the same case replaces it
    log.close()
    with open(log.paths.results_jsonl, "ab") as fh:
        fh.write(b'{"case_id": "c", "x"')
    again = RunLog.open(log.paths.batch)
    assert [(r["case_id"], r["x"]) for r in again.read_records()] == [("a", 3), ("b", 2)]
    again.read_records(repair=True)
    assert log.paths.results_jsonl.read_bytes().endswith(b'"x": 3}\n')
