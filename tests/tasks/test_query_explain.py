"""A newcomer's audit of "why a table differs": a predicted column name is the system's
text, and the messages wrote it raw. ``SELECT name AS "n\\n::error::pwned"`` put
``::error::pwned`` at the start of a console line — a GitHub Actions workflow command when
the run is a CI step — and a multi-line message in every cell. Names are now shown on one
line (Python's repr when a name holds a control character). Failed before the fix."""

from __future__ import annotations

import sqlite3

import pytest

from helpers.ci_lab import cli
from queryeval.metrics.tables.explain import explain_tables

HOSTILE = "n\n::error::pwned"
GOLD = {"columns": ["salary", "name", "one"],
        "rows": [["10", "bob", "1"], ["20", "carol", "1"]]}


@pytest.mark.parametrize("pred", [
    {"columns": [HOSTILE, "s\rx"], "rows": [["bob", "10"], ["carol", "20"]]},  # missing
    {"columns": ["a", "b", "c", HOSTILE], "rows": [["10", "bob", "1", "x"],
                                                    ["20", "carol", "1", "y"]]},  # extra
    {"columns": [HOSTILE, "s", "o"], "rows": [["bob", "10", "1"], ["carol", "20", "1"]]},
    {"columns": ["s", HOSTILE, "o"], "rows": [["10", "bob", "1"], ["21", "carol", "1"]]},
])
def test_every_message_is_one_line_whatever_the_column_names(pred):
    items = explain_tables(GOLD, pred)
    assert items
    for item in items:
        assert "\n" not in item["message"] and "\r" not in item["message"], item
        assert HOSTILE not in item["message"]


def test_no_console_line_starts_a_workflow_command(tmp_path):
    db = tmp_path / "co.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE emp(name TEXT, salary REAL);"
                      "INSERT INTO emp VALUES ('ann', 100), ('bob', 120);")
    con.commit()
    con.close()
    (tmp_path / "s.yaml").write_text(
        "id: \"c\\n::warning::case\"\nconversation:\n- role: user\n  content: q\n  target:\n"
        "    query: {source: co.sqlite, gold: 'SELECT salary, name, 1 FROM emp'}\n")
    (tmp_path / "p.jsonl").write_text(
        '{"case_id": "c\\n::warning::case", "query": '
        '"SELECT name AS \\"n\\n::error::pwned\\", salary FROM emp"}\n')
    res = cli(["run", tmp_path / "s.yaml", "--responses", tmp_path / "p.jsonl",
               "--out", tmp_path / "runs"], env={"GITHUB_ACTIONS": "false"})
    assert res.exit_code == 0, res.output
    assert "Why tables differ" in res.stdout
    assert not [line for line in res.stdout.splitlines() if line.lstrip().startswith("::")]
