"""The cross-feature matrix for a case whose scoring overran (issue 34, item 6): with a cell
budget a result passes, that case is an error with no figure on every consumer (run model,
pandas, metrics JSON, results CSV, HTML report, gates, viewer API) while the other cases keep
theirs, and the means are over the scored cases only.

Three text-to-SQL cases on a 400-row table: ``big`` returns 1,200 cells (over the budget of
1,000), ``right`` matches its gold exactly (1), ``wrong`` returns other rows (exact match 0).
"""

from __future__ import annotations

import json
import sqlite3

import queryeval as qe
from helpers.matrix_checks import check_consumers

CASES = {"big": ("SELECT a, b, c FROM w", "SELECT a, b, c FROM w"),
         "right": ("SELECT a FROM w WHERE a < 5", "SELECT a FROM w WHERE a < 5"),
         "wrong": ("SELECT a FROM w WHERE a < 5", "SELECT a FROM w WHERE a > 395")}


def test_an_unscored_case_has_no_figure_on_any_surface(tmp_path):
    db = tmp_path / "w.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE w(a INTEGER, b TEXT, c REAL)")
    conn.executemany("INSERT INTO w VALUES (?, ?, ?)", [(i, f"v{i % 13}", i / 4) for i in range(400)])
    conn.commit()
    conn.close()
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": cid, "conversation": [{
        "role": "user", "content": cid, "target": {"query": {"source": str(db), "gold": g}}}]})
        + "\n" for cid, (g, _) in CASES.items()))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"case_id": cid, "query": p}) + "\n"
                             for cid, (_, p) in CASES.items()))
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs", reports=True,
                      options={"score_max_cells": 1000})
    mean = check_consumers(run, "exact_match_f1", {"big": None, "right": 1.0, "wrong": 0.0},
                           counted=["right", "wrong"], viewer_root=tmp_path / "runs")
    assert mean == 0.5
    assert run.overall["errors"] == 1 and run.overall["errors_by_kind"] == {"scoring": 1}
    page = (run.folder / f"report_{run.batch_id}.html").read_text()
    assert "not scored: gold: the result has 1,200 cells" in page
