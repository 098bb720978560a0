"""Console notes of a run with --repeats write a mean count as a figure (``:g``, as the
freeform and judge notes do), never a raw float such as 3.3333333333333335."""

from __future__ import annotations

import json

from helpers.audit import wide_table_suite
from helpers.testsuite_sql import EXAMPLE_ANSWERS, build_example
from queryeval.cli.app import main

ACCIDENT_THEN_RIGHT = EXAMPLE_ANSWERS + '''
def bot(request):  # high-earners: the accident on the first attempt only
    cid = QUESTIONS[request["question"]]
    if cid == "high-earners" and request["repeat"] > 0:
        return {"query": "SELECT name FROM emp WHERE salary > 100"}
    return {"query": ANSWERS[cid]}
'''


def test_test_suite_note_under_repeats_writes_the_mean_count_as_a_figure(tmp_path, capsys):
    build_example(tmp_path)
    (tmp_path / "bots.py").write_text(ACCIDENT_THEN_RIGHT)
    code = main(["run", str(tmp_path / "suite.yaml"), "--task", "query", "--test-suite", "5",
                 "--system", f"python:{tmp_path / 'bots.py'}:bot", "--repeats", "3",
                 "--out", str(tmp_path / "runs"), "--no-report"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    # refuted per attempt: 2 (both accidents), then 1, 1 (count-at-least-120 only)
    doc = json.loads(next((tmp_path / "runs").rglob("metrics_*.json")).read_text())
    assert abs(doc["overall_metrics"]["test_suite_refuted"] - 4 / 3) < 1e-12
    assert "1.33333 case(s) refuted, 0 unknown" in text
    assert "1.3333333333333333" not in text


def test_inexact_note_under_repeats_writes_the_mean_count_as_a_figure(tmp_path, capsys):
    db, suite = wide_table_suite(tmp_path)
    (tmp_path / "bot.py").write_text(  # an inexact search on the first attempt only
        "def bot(request):\n"
        "    if request['repeat'] == 0:\n"
        "        return {'query': 'SELECT f, e, d, c, b, a FROM w WHERE a < 2'}\n"
        "    return {'query': 'SELECT a, b, c, d, e, f FROM w'}\n")
    code = main(["run", str(suite), "--system", f"python:{tmp_path / 'bot.py'}:bot",
                 "--database", str(db), "--repeats", "3", "--option", "search_nodes=1",
                 "--out", str(tmp_path / "runs"), "--no-report"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    doc = json.loads(next((tmp_path / "runs").rglob("metrics_*.json")).read_text())
    assert abs(doc["overall_metrics"]["inexact_mapping_searches"] - 1 / 3) < 1e-12
    assert "exact: false for 0.333333 case(s)" in text
    assert "0.3333333333333333" not in text
