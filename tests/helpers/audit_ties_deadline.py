"""What the tests of audit ties deadline share with other test files: ``_db``, ``_suite`` (moved here from test_audit_ties_deadline.py)."""

from __future__ import annotations

import sqlite3

# scores: ann 90, bob 80, cat 80, dan 70 -> ORDER BY score DESC LIMIT 2 keeps bob or cat
ROWS = "('ann', 90), ('bob', 80), ('cat', 80), ('dan', 70)"


def _db(tmp_path):
    db = tmp_path / "t.sqlite"
    con = sqlite3.connect(db)
    con.executescript(f"CREATE TABLE s(name TEXT, score INTEGER); INSERT INTO s VALUES {ROWS};")
    con.commit()
    con.close()
    return db


def _suite(tmp_path, golds):
    suite = tmp_path / "s.yaml"
    suite.write_text("".join(
        f"---\nid: {cid}\nconversation:\n- role: user\n  content: question {cid}\n  target:\n    query:\n"
        f"      gold: \"{q}\"\n" for cid, q in golds.items()), encoding="utf-8")
    return suite
