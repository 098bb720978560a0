"""A query suite whose golds all fail scores no case: the run exits 2 with one line naming
the suite, the first case and its gold's error (it exited 0 with every metric '—'); the run log
is still written. With one gold that runs, the run exits 0 and counts the failed gold."""

from __future__ import annotations

import json
import sqlite3


def _suite(tmp_path, golds: dict[str, str]):
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE items (name TEXT, price REAL)")
        con.executemany("INSERT INTO items VALUES (?, ?)", [("pen", 0.5), ("ink", 2.0)])
    docs = []
    for case_id, gold in golds.items():
        docs.append(f"""id: {case_id}
conversation:
- role: user
  content: List the items.
  target:
    query:
      source: shop.sqlite
      gold: {gold}
""")
    suite = tmp_path / "suite.yaml"
    suite.write_text("---\n".join(docs))
    preds = tmp_path / "predictions.jsonl"
    preds.write_text("".join(json.dumps({"case_id": c, "query": "SELECT name FROM items"}) + "\n"
                             for c in golds))
    return suite, preds


def _run(tmp_path, suite, preds) -> int:
    from queryeval.cli.app import main

    return main(["run", str(suite), "--responses", str(preds), "--out", str(tmp_path / "o"),
                 "-q", "--no-report"])


def test_every_gold_failing_exits_2_naming_the_first(tmp_path, capsys):
    suite, preds = _suite(tmp_path, {"only": "SELEC name FROM items"})
    assert _run(tmp_path, suite, preds) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{suite}: record only: gold: every gold query failed (1 of 1 cases)" in err
    assert "could not parse" in err
    [metrics] = (tmp_path / "o").rglob("metrics_*.json")  # the run log is complete
    overall = json.loads(metrics.read_text())["overall_metrics"]
    assert overall["gold_failures"] == 1 and overall["cases"] == 0


def test_a_gold_that_runs_keeps_exit_0(tmp_path, capsys):
    suite, preds = _suite(tmp_path, {"bad": "SELEC name FROM items",
                                     "good": "SELECT name FROM items"})
    assert _run(tmp_path, suite, preds) == 0
    [metrics] = (tmp_path / "o").rglob("metrics_*.json")
    overall = json.loads(metrics.read_text())["overall_metrics"]
    assert overall["gold_failures"] == 1 and overall["cases"] == 1
    assert overall["exact_match_f1"] == 1.0
