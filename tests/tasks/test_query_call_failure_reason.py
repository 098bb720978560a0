"""The query task's reason for a case whose call failed names the failure (a timeout is a
timeout, an exception an exception), not "the system returned no query", which it said for
both."""

from __future__ import annotations

import sqlite3
import time


def _suite(tmp_path):
    with sqlite3.connect(tmp_path / "shop.sqlite") as con:
        con.execute("CREATE TABLE items (name TEXT)")
        con.execute("INSERT INTO items VALUES ('pen')")
    docs = [f"""id: {c}
conversation:
- role: user
  content: {c}
  target:
    query:
      source: shop.sqlite
      gold: SELECT name FROM items
""" for c in ("slow", "raises")]
    (tmp_path / "suite.yaml").write_text("---\n".join(docs))
    return tmp_path / "suite.yaml"


def _system(request: dict) -> dict:
    question = request["question"]
    if question == "slow":
        time.sleep(3)
    if question == "raises":
        raise RuntimeError("model overloaded")
    return {"query": "SELECT name FROM items"}


def test_reasons_name_the_failed_call(tmp_path):
    import queryeval as qe

    run = qe.evaluate(str(_suite(tmp_path)), system=_system, out=str(tmp_path / "runs"),
                      timeout=0.5, retries=0, reports=False)
    reasons = {r["case_id"]: r["predicted_execution"]["reason"] for r in run.records}
    assert reasons["slow"].startswith("the call to the system failed (timeout)")
    assert reasons["raises"].startswith("the call to the system failed (")
    assert "model overloaded" in reasons["raises"]
