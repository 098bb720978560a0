"""``queryeval audit`` (gold queries run twice as predictions) and the shipped SQL example
(examples/sql: comparison modes end to end)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers.audit import ROOT, _sql_example, wide_table_suite  # noqa: E402,F401
from helpers.query_task import run_records
from queryeval.cli.app import main

SPARQL_EXAMPLE = ROOT / "examples" / "sparql"


def _run_prediction(tmp_path: Path, suite: Path, case_id: str, query: str
                    ) -> tuple[Path, dict]:
    """Run ``suite`` with one recorded prediction; the responses file and the records."""
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"case_id": case_id, "query": query}) + "\n", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--out", str(out), "-q"]) == 0
    return preds, run_records(out)[1]


def test_shipped_sql_example_exercises_every_comparison_mode(tmp_path):
    suite = _sql_example(tmp_path)
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(tmp_path / "predictions.jsonl"),
                 "--out", str(out), "-q"]) == 0
    metrics, recs = run_records(out)
    s = {cid: r["scores"] for cid, r in recs.items()}
    # gold ORDER BY name: apple, carrot, onion; predicted DESC: LCS 1 of 3 rows
    cheap = recs["cheap-by-name"]
    assert cheap["comparison"]["ordered"] is True
    assert s["cheap-by-name"]["row_matching_f1"] == 1.0
    assert s["cheap-by-name"]["exact_match_f1"] == pytest.approx(1 / 3)
    assert cheap["order_score"] == pytest.approx(1 / 3)
    # ROUND(price * 1.2, 2) vs price * 1.2: 9.99 * 1.2 = 11.988 vs 11.99, within abs_tol 0.01
    assert recs["gross-prices"]["comparison"]["abs_tol"] == 0.01
    assert s["gross-prices"]["exact_match_f1"] == 1.0
    # the prediction returns ids: the alternative gold (number 1) matches
    assert recs["spices"]["gold_matched"] == 1 and s["spices"]["perfect_match"] == 1.0
    # quantity is optional: the names alone are a perfect answer
    assert s["sold-on-jan-3"]["row_matching_f1"] == 1.0 and s["sold-on-jan-3"]["arity_f1"] == 1.0
    assert s["top-seller"]["perfect_match"] == 1.0
    o = metrics["overall_metrics"]
    assert o["exact_match_f1"] == pytest.approx((1 / 3 + 4) / 5)


def test_tolerance_is_what_makes_the_gross_prices_match(tmp_path):
    suite = _sql_example(tmp_path)
    text = suite.read_text(encoding="utf-8").replace("      abs_tol: 0.01\n", "")
    suite.write_text(text, encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(tmp_path / "predictions.jsonl"),
                 "--out", str(out), "-q"]) == 0
    _, recs = run_records(out)
    # 6 items; only saffron differs: 9.99 * 1.2 = 11.988 against ROUND(...) = 11.99 -> 5/6
    assert recs["gross-prices"]["scores"]["row_matching_f1"] == pytest.approx(5 / 6)
    assert recs["gross-prices"]["comparison"]["abs_tol"] == 0.0


def test_audit_of_the_shipped_examples_finds_every_gold_sound(tmp_path):
    suite = _sql_example(tmp_path)
    report = tmp_path / "sql.json"
    assert main(["audit", str(suite), "--json", str(report), "--fail-on-broken"]) == 0
    found = json.loads(report.read_text(encoding="utf-8"))["golds"]
    assert [(r["case_id"], r["gold"]) for r in found] == [
        ("cheap-by-name", 0), ("gross-prices", 0), ("spices", 0), ("spices", 1),
        ("sold-on-jan-3", 0), ("top-seller", 0)]
    assert all(r["status"] == "ok" and r["ceiling"]["exact_match_f1"] == 1.0 for r in found)
    assert [r["rows"] for r in found] == [3, 6, 2, 2, 3, 1]
    report = tmp_path / "sparql.json"
    assert main(["audit", str(SPARQL_EXAMPLE / "suite.yaml"), "--json", str(report),
                 "--store-dir", str(tmp_path / "stores"), "--fail-on-broken"]) == 0
    found = json.loads(report.read_text(encoding="utf-8"))["golds"]
    assert len(found) == 8 and {r["status"] for r in found} == {"ok"}
    assert found[0]["case_id"] == "ahus" and found[0]["rows"] == 2


def test_audit_reports_each_kind_of_broken_gold(tmp_path, capsys):
    db = tmp_path / "t.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
    con.commit()
    con.close()
    golds = {
        "fine": "SELECT x FROM t ORDER BY x",
        "syntax": "SELEC x FROM t",
        "empty": "SELECT x FROM t WHERE x > 9",
        "too-many": "SELECT a.x, b.x FROM t a, t b",
        "random": "SELECT x, abs(random()) AS r FROM t",
        "slow": "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
                "SELECT count(*) FROM c",
        "first-row": "SELECT x FROM t LIMIT 1",
    }
    suite = tmp_path / "s.yaml"
    suite.write_text("".join(
        f"---\nid: {cid}\nconversation:\n- role: user\n  content: question {cid}\n  target:\n    query:\n"
        f"      gold: \"{q}\"\n" for cid, q in golds.items()), encoding="utf-8")
    report = tmp_path / "a.json"
    args = ["audit", str(suite), "--database", str(db), "--max-rows", "5",
            "--query-timeout", "0.5", "--json", str(report)]
    assert main(args) == 0  # findings alone do not fail the command
    status = {r["case_id"]: r for r in json.loads(report.read_text(encoding="utf-8"))["golds"]}
    assert {cid: r["status"] for cid, r in status.items()} == {
        "fine": "ok", "syntax": "refused", "empty": "empty", "too-many": "row_limit",
        "random": "nondeterministic", "slow": "timeout", "first-row": "ok"}
    assert status["first-row"]["warnings"] == ["LIMIT/OFFSET without ORDER BY"]
    assert status["fine"]["warnings"] == []
    assert status["random"]["ceiling"]["row_matching_f1"] < 1.0
    assert status["fine"]["ceiling"] == {"arity_f1": 1.0, "entity_set_f1": 1.0,
                                         "row_matching_f1": 1.0, "exact_match_f1": 1.0,
                                         "mapping_exact": True}
    assert main([*args, "--fail-on-broken"]) == 1
    assert "5 broken" in capsys.readouterr().out.replace("\n", " ")


def test_gold_tables_and_bad_table_widths(tmp_path):
    suite = _sql_example(tmp_path)
    suite.write_text(
        "id: veg\nconversation:\n- role: user\n  content: vegetables and prices\n  target:\n"
        "    query:\n      source: shop.sqlite\n      gold: SELECT name FROM items WHERE 0\n"
        "      gold_tables:\n      - columns: [name, price]\n"
        "        rows: [[carrot, 0.50], [onion, '.4']]\n", encoding="utf-8")
    preds, recs = _run_prediction(tmp_path, suite, "veg", "SELECT name, price FROM items "
                                  "WHERE category = 'vegetable'")
    # the empty gold query scores 0; the gold table (0.50 = 0.5, .4 = 0.4) scores 1
    assert recs["veg"]["gold_matched"] == 1 and recs["veg"]["scores"]["perfect_match"] == 1.0
    suite.write_text(suite.read_text(encoding="utf-8").replace("[onion, '.4']", "[onion]"),
                     encoding="utf-8")
    assert main(["run", str(suite), "--responses", str(preds), "--out", str(tmp_path / "o"),
                 "-q"]) == 2


@pytest.mark.parametrize(("explicit", "matched", "exact", "ordered"), [
    ("", 1, 1.0, False),  # each gold decides: the unordered alternative is a perfect match
    # the case's flag holds for every gold: the alternative's rows come out as carrot, onion,
    # apple; against onion, carrot, apple their LCS is 2 (the sorted gold's is 1)
    ("      ordered: true\n", 1, 2 / 3, True),
])
def test_each_gold_decides_whether_its_order_counts(tmp_path, explicit, matched, exact, ordered):
    suite = _sql_example(tmp_path)
    # gold sorted by name (apple, carrot, onion); the alternative and the gold table unsorted
    suite.write_text(
        "id: cheap\nconversation:\n- role: user\n  content: items under 1 euro\n  target:\n"
        "    query:\n      source: shop.sqlite\n"
        "      gold: SELECT name FROM items WHERE price < 1 ORDER BY name\n"
        "      alternatives: [SELECT name FROM items WHERE price < 1]\n"
        f"{explicit}", encoding="utf-8")
    _, recs = _run_prediction(tmp_path, suite, "cheap",
                              "SELECT name FROM items WHERE price < 1 ORDER BY name DESC")
    rec = recs["cheap"]
    assert rec["gold_matched"] == matched
    assert rec["scores"]["exact_match_f1"] == pytest.approx(exact)
    assert rec["comparison"]["ordered"] is ordered


def test_tolerance_with_buildingqa_rules_is_a_config_error(tmp_path, capsys):
    suite = _sql_example(tmp_path)
    code = main(["run", str(suite), "--responses", str(tmp_path / "predictions.jsonl"),
                 "--out", str(tmp_path / "o"), "--rules", "buildingqa", "--option",
                 "abs_tol=0.1", "-q"])
    assert code == 2
    assert "abs_tol / rel_tol need --rules clean" in capsys.readouterr().err
    # a case's own abs_tol is set aside under buildingqa rules (was: unscorable, every F1 0)
    out = tmp_path / "b"
    assert main(["run", str(suite), "--responses", str(tmp_path / "predictions.jsonl"),
                 "--out", str(out), "--rules", "buildingqa", "-q", "--no-report"]) == 0
    rec = run_records(out)[1]["gross-prices"]
    assert rec["comparison"]["abs_tol"] == 0.0
    assert rec["scores"]["row_matching_f1"] == pytest.approx(5 / 6)


def test_exact_false_is_shown_in_console_html_and_csv(tmp_path, capsys):
    db, suite = wide_table_suite(tmp_path)
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"case_id": "wide", "query": "SELECT f, e, d, c, b, a FROM w WHERE a < 2"}\n',
                     encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--database", str(db),
                 "--out", str(out), "--option", "search_nodes=1"]) == 0
    metrics, recs = run_records(out)
    assert recs["wide"]["mapping_exact"] is False
    assert metrics["overall_metrics"]["inexact_mapping_searches"] == 1
    console = " ".join(capsys.readouterr().out.split())
    assert "exact: false for 1 case(s)" in console
    html = next(out.rglob("report_*.html")).read_text(encoding="utf-8")
    assert html.count("<b>exact: false</b>") == 1
    lines = next(out.rglob("results_*.csv")).read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    assert lines[1].split(",")[header.index("mapping_exact")] == "False"
    # next to exact: false, the proven ceiling (record, CSV, hence the xlsx, and HTML)
    rec = recs["wide"]
    row, bound = rec["scores"]["row_matching_f1"], rec["row_f1_bound"]
    assert row <= bound <= 1.0
    # at search_nodes=1 the row figure already reaches its ceiling: the HTML says it is
    # optimal, only ties between equally good mappings were left (not "best found 0.8189,
    # no mapping can exceed 0.8189 … may be below the optimum")
    assert row == bound and f"row F1 {row:.4f} is optimal" in html
    assert "no mapping can exceed it" in html and "those of the best mapping found" not in html
    assert float(lines[1].split(",")[header.index("row_f1_bound")]) == bound
    # below its ceiling, both figures are shown
    from queryeval.report.html_details import query_details

    rec = {**rec, "row_f1_bound": 0.9, "scores": {**rec["scores"], "row_matching_f1": 0.5}}
    assert "best found 0.5000, no mapping can exceed 0.9000" in query_details(rec)
    # the search needs at least one node
    assert main(["run", str(suite), "--responses", str(preds), "--database", str(db),
                 "--out", str(out), "--option", "search_nodes=0", "-q"]) == 2
