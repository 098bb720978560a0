"""The issue's two confusing cases end to end (``queryeval run`` on the shipped shop
database): swapped columns (every row ✓, exact-match F1 0, "fail") and an ORDER BY
difference (every row ✓, exact 0.3333) now say why, in the console, the CSV/xlsx, the HTML
report and the viewer's API, all from the record's one ``explanation``."""

from __future__ import annotations

import csv
import html as htmllib
import json

import pytest

from helpers.audit import _sql_example
from helpers.query_task import run_records
from queryeval.cli.app import main

SWAPPED = "SELECT price, name FROM items WHERE price < 1"
SUITE = """---
id: swapped
conversation:
- role: user
  content: Cheap items and their prices?
  target:
    query:
      source: shop.sqlite
      gold: SELECT name, price FROM items WHERE price < 1
---
id: cheap-by-name
conversation:
- role: user
  content: Items under 1 euro in alphabetical order.
  target:
    query:
      source: shop.sqlite
      gold: SELECT name FROM items WHERE price < 1 ORDER BY name
---
id: right
conversation:
- role: user
  content: Spices?
  target:
    query:
      source: shop.sqlite
      gold: SELECT name FROM items WHERE category = 'spice'
"""
PREDICTIONS = [
    {"case_id": "swapped", "query": SWAPPED},
    {"case_id": "cheap-by-name", "query": "SELECT name FROM items WHERE price < 1 ORDER BY name DESC"},
    {"case_id": "right", "query": "SELECT i.name FROM items AS i WHERE i.category = 'spice'"},
]


@pytest.fixture
def ran(tmp_path, capsys):
    suite = _sql_example(tmp_path)
    suite.write_text(SUITE, encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps(p) + "\n" for p in PREDICTIONS), encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--out", str(out)]) == 0
    console = " ".join(capsys.readouterr().out.split())
    metrics, recs = run_records(out)
    return out, console, metrics, recs


def test_the_record_says_why(ran):
    _, _, metrics, recs = ran
    swapped, ordered, right = recs["swapped"], recs["cheap-by-name"], recs["right"]
    # the figures that confused the team, unchanged
    assert swapped["scores"]["row_matching_f1"] == 1.0
    assert swapped["scores"]["exact_match_f1"] == 0.0
    assert all(swapped["result_sample"]["gold"]["matched"])
    assert ordered["scores"]["exact_match_f1"] == pytest.approx(1 / 3)
    assert all(ordered["result_sample"]["gold"]["matched"])
    # and now the reason
    assert [i["kind"] for i in swapped["explanation"]] == ["column_order"]
    assert swapped["explanation"][0]["detail"]["mapping"] == [["name", "name"],
                                                              ["price", "price"]]
    assert [i["kind"] for i in ordered["explanation"]] == ["row_order"]
    # gold apple, carrot, onion; predicted onion, carrot, apple: the first row differs
    assert ordered["explanation"][0]["detail"] == {"first_row": 1}
    assert right["explanation"] == []
    assert metrics["differences"]["cases_by_kind"] == {"column_order": 1, "row_order": 1}


def test_console_csv_html_and_viewer_show_it(ran):
    out, console, _, recs = ran
    why_swapped = recs["swapped"]["explanation"][0]["message"]
    why_order = recs["cheap-by-name"]["explanation"][0]["message"]
    assert "Why tables differ (cases per reason): column order 1, row order 1" in console
    assert f"swapped: {why_swapped}" in console
    assert f"cheap-by-name: {why_order}" in console
    with open(next(out.rglob("results_*.csv")), newline="", encoding="utf-8") as fh:
        rows = {r["case_id"]: r for r in csv.DictReader(fh)}
    assert rows["swapped"]["why"] == why_swapped and rows["right"]["why"] == ""
    page = next(out.rglob("report_*.html")).read_text(encoding="utf-8")
    assert page.count("why the tables differ") == 2
    assert htmllib.escape(why_swapped, quote=True) in page or \
        htmllib.escape(why_swapped, quote=False) in page
    from openpyxl import load_workbook

    book = load_workbook(next(out.rglob("report_*.xlsx")), read_only=True)
    cells = {str(c) for ws in book.worksheets for row in ws.iter_rows(values_only=True)
             for c in row if c is not None}
    assert why_order in cells
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from queryeval.viewer.server import create_app

    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    client = TestClient(create_app(out, resamples=100), base_url="http://127.0.0.1")
    doc = client.get(f"/api/runs/{bid}/case", params={"id": "swapped"}).json()
    assert doc["record"]["explanation"] == recs["swapped"]["explanation"]
    doc = client.get(f"/api/runs/{bid}/case", params={"id": "cheap-by-name"}).json()
    assert doc["record"]["explanation"][0]["message"] == why_order
    app_js = client.get("/static/app.js")  # the page shows the record's list as written
    assert app_js.status_code == 200 and "rec.explanation.map" in app_js.text


def test_no_distinguishing_item_without_a_refutation():
    """The distinguishing item comes from a test-suite refutation only (its end-to-end check:
    tests/engines/test_testsuite_sql.py::test_right_by_accident_is_refuted_with_its_distinguishing_database)."""
    from queryeval.tasks.query.explain import explanation

    gold = {"columns": ["n"], "rows": [["bob"]]}
    for suite in (None, {"match": 1.0, "reason": "equal"}, {"refuted_by": "not a dict"}):
        rec = {"predicted_execution": {"status": "ok"}, **({"test_suite": suite} if suite else {})}
        assert explanation(rec, gold, gold, {"ordered": False}, ["n"], "clean") == []


def test_a_failed_prediction_says_why(tmp_path):
    suite = _sql_example(tmp_path)
    suite.write_text(SUITE, encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"case_id": "right", "query": "SELECT nope FROM items"}) + "\n",
                     encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--out", str(out), "-q"]) == 0
    _, recs = run_records(out)
    (item,) = recs["right"]["explanation"]
    assert item["kind"] == "no_result" and item["detail"]["status"] == "failed"


def test_hostile_cells_in_an_explanation_are_escaped():
    from queryeval.metrics.tables.explain import explain_tables
    from queryeval.report.html_details import query_details

    gold = {"columns": ["v"], "rows": [["ok"]]}
    pred = {"columns": ["v"], "rows": [["<script>alert(1)</script>"]]}
    items = explain_tables(gold, pred)
    assert "<script>alert(1)</script>" in items[0]["message"]  # recorded as data
    rec = {"gold_query": "q", "predicted_query": "p", "question": "?", "explanation": items,
           "touched": {"message": "used table(s) the gold does not: <b>x</b>"}}
    page = query_details(rec)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>x</b>" not in page and "what the query touched" in page
