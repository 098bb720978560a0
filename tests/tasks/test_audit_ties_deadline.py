"""``queryeval audit``'s tie-order and near-deadline checks (tasks/query/audit.py) on small
hand-made suites: a gold whose ``ORDER BY … LIMIT`` cuts through tied rows, one that does
not, and a gold close to a tiny deadline (its execution time fixed by the test)."""

from __future__ import annotations

import json

import pytest

from helpers.audit_ties_deadline import _db, _suite  # noqa: E402,F401
from queryeval.cli.app import main
from queryeval.tasks.query.audit import near_deadline, tie_at_limit


def test_a_limit_through_tied_rows_is_found(tmp_path, capsys):
    db = _db(tmp_path)
    suite = _suite(tmp_path, {
        "tie": "SELECT name FROM s ORDER BY score DESC LIMIT 2",  # rows 2, 3 tie on 80
        "no-tie": "SELECT name FROM s ORDER BY score DESC LIMIT 1",  # 90 vs 80
        "tie-broken": "SELECT name FROM s ORDER BY score DESC, name LIMIT 2",
        "offset-tie": "SELECT name FROM s ORDER BY score DESC LIMIT 1 OFFSET 2",  # 80|80
        "alias-key": "SELECT name, score AS pts FROM s ORDER BY pts DESC LIMIT 2",
        "distinct": "SELECT DISTINCT name, score FROM s ORDER BY 2 DESC LIMIT 2",
        "union": "SELECT name, score FROM s UNION SELECT 'eve', 10 ORDER BY score DESC LIMIT 2",
        "distinct-unprojected": "SELECT DISTINCT name FROM s ORDER BY score DESC LIMIT 2",
        "unordered": "SELECT name FROM s",
    })
    report = tmp_path / "a.json"
    args = ["audit", str(suite), "--database", str(db), "--json", str(report)]
    assert main(args) == 0
    found = {r["case_id"]: r for r in json.loads(report.read_text(encoding="utf-8"))["golds"]}
    assert {c: r["status"] for c, r in found.items()} == {
        "tie": "tie_order", "no-tie": "ok", "tie-broken": "ok", "offset-tie": "tie_order",
        "alias-key": "tie_order", "distinct": "tie_order", "union": "tie_order",
        "distinct-unprojected": "ok",  # not checkable: a key outside DISTINCT's columns
        "unordered": "ok"}
    assert found["tie"]["tie_order"] == {"rows": [2, 3], "key": ["80"], "uncut_rows": 4}
    # at OFFSET 2 the cut before the window (rows 2 | 3) ties; LIMIT's cut (3 | 4) does not
    assert found["offset-tie"]["tie_order"]["rows"] == [2, 3]
    assert "tie_order" not in found["no-tie"] and "tie_order" not in found["tie-broken"]
    assert "rows 2 and 3 of the uncut result tie" in found["tie"]["reason"]
    assert main([*args, "--fail-on-broken"]) == 1  # a tie is a broken gold
    out = " ".join(capsys.readouterr().out.split())
    assert "5 broken" in out
    assert "tie_order" not in found["distinct-unprojected"]


def test_tie_check_on_sparql_and_its_limits():
    table = {"head": {"vars": ["s", "v"]}, "results": {"bindings": [
        {"s": {"value": "a"}, "v": {"value": "3"}}, {"s": {"value": "b"}, "v": {"value": "2"}},
        {"s": {"value": "c"}, "v": {"value": "2.0"}}]}}
    ran = []

    def execute(q):
        ran.append(q)
        return table

    q = "PREFIX ex: <http://e/> SELECT ?s ?v WHERE { ?s ex:v ?v } ORDER BY DESC(?v) LIMIT 2"
    # 2 and 2.0 are one number under the clean rules: rows 2 and 3 tie
    assert tie_at_limit(q, "sparql", execute) == {"rows": [2, 3], "key": ["2"],
                                                  "uncut_rows": 3}
    assert ran == ["PREFIX ex: <http://e/> SELECT ?s ?v WHERE { ?s ex:v ?v } ORDER BY DESC(?v)"]
    assert tie_at_limit(q.replace("LIMIT 2", "LIMIT 1"), "sparql", execute) == {}
    # not checkable: no ORDER BY, a sort key that is not a projected variable, a failure
    assert tie_at_limit("SELECT ?s WHERE { ?s ?p ?o } LIMIT 2", "sparql", execute) is None
    assert tie_at_limit("SELECT ?s WHERE { ?s ?p ?o } ORDER BY STR(?o) LIMIT 2", "sparql",
                        execute) is None
    assert tie_at_limit(q, "sparql", lambda _q: None) is None


@pytest.mark.parametrize(("elapsed", "timeout_s", "expected"), [
    ([30.0, 40.0], 0.05, {"elapsed_ms": 40.0, "deadline_ms": 50.0, "share": 0.8}),
    ([10.0, 25.0], 0.05, None),  # exactly half: not over
    ([None, 26.0], 0.05, {"elapsed_ms": 26.0, "deadline_ms": 50.0, "share": 0.52}),
    ([None, None], 0.05, None),
])
def test_near_deadline_rule(elapsed, timeout_s, expected):
    got = near_deadline(elapsed, timeout_s)
    assert got == (None if expected is None else pytest.approx(expected))


def test_a_gold_near_a_tiny_deadline_is_reported(tmp_path, monkeypatch):
    """The gold's two executions are timed by the test (a wrapper sets elapsed_ms), so the
    finding does not depend on the machine's speed."""
    from queryeval.tasks.query.task import QueryTask

    real = QueryTask._execute

    def timed(self, source, query):
        table, info = real(self, source, query)
        if info.get("status") == "ok":
            info = {**info, "elapsed_ms": 40.0 if "score" in query else 1.0}
        return table, info

    monkeypatch.setattr(QueryTask, "_execute", timed)
    db = _db(tmp_path)
    suite = _suite(tmp_path, {"slow": "SELECT name FROM s WHERE score > 75",
                              "quick": "SELECT name FROM s"})
    report = tmp_path / "a.json"
    assert main(["audit", str(suite), "--database", str(db), "--query-timeout", "0.05",
                 "--json", str(report), "--fail-on-broken"]) == 0  # a warning, not broken
    found = {r["case_id"]: r for r in json.loads(report.read_text(encoding="utf-8"))["golds"]}
    assert found["slow"]["near_deadline"] == {"elapsed_ms": 40.0, "deadline_ms": 50.0,
                                              "share": pytest.approx(0.8)}
    assert found["slow"]["warnings"] == ["close to the deadline: 40 ms of 50 ms (80%)"]
    assert found["slow"]["status"] == "ok"
    assert "near_deadline" not in found["quick"] and found["quick"]["warnings"] == []
