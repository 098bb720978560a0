"""--test-suite N on SQL: neighbour databases refute a prediction right by accident and keep
equivalent rewrites equal; a refutation's distinguishing database really tells the two
queries apart; three-valued verdicts (docs/test-suite.md)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import queryeval as qe
from helpers.testsuite_sql import build_example, case, records  # noqa: E402,F401


def bag(conn: sqlite3.Connection, sql: str) -> Counter:
    return Counter(tuple(r) for r in conn.execute(sql).fetchall())


def rebuild(db: Path, database: dict, out: Path) -> sqlite3.Connection:
    """A fresh sqlite file with ``db``'s schema and the recorded rows of a neighbour."""
    src = sqlite3.connect(db)
    ddl = [r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE type='table'")]
    src.close()
    conn = sqlite3.connect(out, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    for stmt in ddl:
        conn.execute(stmt)
    conn.execute("BEGIN")
    conn.execute("PRAGMA defer_foreign_keys=ON")  # emp refers to emp
    for table in ("dept", "emp"):
        part = database[table]
        assert part["total"] == len(part["rows"])  # small: every row was kept
        marks = ", ".join("?" for _ in part["columns"])
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", part["rows"])
    conn.execute("COMMIT")
    return conn


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("emp")
    build_example(folder)
    run = qe.evaluate(folder / "suite.yaml", responses=folder / "predictions.jsonl",
                      task="query", out=folder / "runs", test_suite=12, reports=True)
    return folder, run, records(run)


def test_right_by_accident_is_refuted_with_its_distinguishing_database(example_run, tmp_path):
    folder, run, recs = example_run
    rec = recs["high-earners"]
    # exactly right on the shipped database ...
    assert rec["scores"]["exact_match_f1"] == 1.0
    # ... and refuted by a neighbour, whose rows are on the record
    assert rec["scores"]["test_suite_match"] == 0.0
    refuted = rec["test_suite"]["refuted_by"]
    conn = rebuild(folder / "emp.sqlite", refuted["database"], tmp_path / "again.sqlite")
    gold, pred = bag(conn, rec["gold_query"]), bag(conn, rec["predicted_query"])
    assert gold != pred
    # the recorded results are those of the two queries there
    sample = refuted["result_sample"]
    assert Counter(tuple(r) for r in sample["gold"]["rows"]) == Counter(
        tuple(str(v) for v in k) for k in gold.elements())
    assert Counter(tuple(r) for r in sample["predicted"]["rows"]) == Counter(
        tuple(str(v) for v in k) for k in pred.elements())
    # the case's explanation says why, with the distinguishing database's rows (the tables
    # are equal on the shipped database: the refutation is the only difference)
    assert [i["kind"] for i in rec["explanation"]] == ["distinguishing"]
    assert rec["explanation"][0]["detail"] == refuted
    rows = {t: part["rows"] for t, part in refuted["database"].items()}
    assert json.dumps(rows, ensure_ascii=False, default=str)[:200] in rec["explanation"][0]["message"]
    # the same holds for the COUNT that agrees only on the shipped data
    count = recs["count-at-least-120"]
    assert (count["scores"]["exact_match_f1"], count["scores"]["test_suite_match"]) == (1.0, 0.0)


def test_equivalent_rewrites_stay_equal(example_run):
    _, _, recs = example_run
    for cid in ("not-at-most-100", "staff-and-departments", "sales-staff"):
        ts = recs[cid]["test_suite"]
        assert recs[cid]["scores"]["test_suite_match"] == 1.0, (cid, ts["reason"])
        assert ts["checked"] == ts["neighbours"] == 12
        assert ts["executions"] == 24  # gold and prediction on each neighbour


def test_overall_accuracy_and_counts(example_run):
    _, run, _ = example_run
    # hand count: 3 equal, 2 refuted, 0 unknown
    assert run.overall["test_suite_accuracy"] == pytest.approx(3 / 5)
    assert (run.overall["test_suite_refuted"], run.overall["test_suite_unknown"]) == (2, 0)
    assert run.overall["exact_match_f1"] == 1.0  # what execution accuracy alone says


def test_seed_variation_keeps_rewrites_equal(tmp_path):
    """Equivalent rewrites stay equal whatever the neighbours (other seeds, other N)."""
    build_example(tmp_path)
    cases = [c for c in records_of_suite(tmp_path) if c != "high-earners"]
    for seed, n in ((1, 4), (7, 6)):
        run = qe.evaluate(tmp_path / "suite.yaml", responses=tmp_path / "predictions.jsonl",
                          task="query", out=tmp_path / f"runs{seed}", test_suite=n,
                          test_suite_seed=seed)
        got = {c: r["scores"]["test_suite_match"] for c, r in records(run).items()}
        for cid in ("not-at-most-100", "staff-and-departments", "sales-staff"):
            assert got[cid] == 1.0, (seed, cid)
        assert cases


def records_of_suite(folder: Path) -> list[str]:
    return [json.loads(line)["case_id"]
            for line in (folder / "predictions.jsonl").read_text().splitlines()]


def test_without_the_option_nothing_changes(tmp_path):
    build_example(tmp_path)
    run = qe.evaluate(tmp_path / "suite.yaml", responses=tmp_path / "predictions.jsonl",
                      task="query", out=tmp_path / "runs")
    assert "test_suite_accuracy" not in run.overall
    assert all("test_suite_match" not in r["scores"] and "test_suite" not in r
               for r in records(run).values())


def test_unknown_when_the_prediction_fails_on_a_neighbour(tmp_path):
    """DuckDB: a CAST that the shipped codes survive fails on fuzzed text: no neighbour
    refutes it, some could not judge it: unknown (None), not counted in the accuracy."""
    import duckdb

    db = tmp_path / "codes.duckdb"
    conn = duckdb.connect(str(db))
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, code VARCHAR NOT NULL)")
    conn.execute("INSERT INTO t VALUES (1, '10'), (2, '20'), (3, '30')")
    conn.close()
    cases = [case("cast", str(db), "SELECT id FROM t WHERE code = '10'"),
             case("plain", str(db), "SELECT id FROM t WHERE code = '20'")]
    answers = [{"case_id": "cast", "query": "SELECT id FROM t WHERE CAST(code AS INTEGER) = 10"},
               {"case_id": "plain", "query": "SELECT id FROM t WHERE code = '20'"}]
    run = qe.evaluate(cases, responses=answers, task="query", out=tmp_path / "runs",
                      test_suite=6)
    recs = records(run)
    assert recs["cast"]["scores"]["exact_match_f1"] == 1.0
    assert recs["cast"]["scores"]["test_suite_match"] is None
    assert "failed" in recs["cast"]["test_suite"]["reason"]
    assert recs["plain"]["scores"]["test_suite_match"] == 1.0
    assert run.overall["test_suite_accuracy"] == 1.0  # the unknown case is not counted
    assert run.overall["test_suite_unknown"] == 1


def test_a_prediction_wrong_on_the_original_is_refuted_there(tmp_path):
    build_example(tmp_path)
    cases = [case("c", str(tmp_path / "emp.sqlite"), "SELECT name FROM emp")]
    run = qe.evaluate(cases, responses=[{"case_id": "c", "query": "SELECT id FROM emp"}],
                      task="query", out=tmp_path / "runs", test_suite=4)
    rec = records(run)["c"]
    assert rec["scores"]["test_suite_match"] == 0.0
    assert rec["test_suite"]["executions"] == 0  # no neighbour needed
    assert "original" in rec["test_suite"]["reason"]


def test_several_golds_any_gold_holds_on_every_neighbour(tmp_path):
    """An alternative gold that the prediction equals everywhere makes it 1."""
    build_example(tmp_path)
    src = str(tmp_path / "emp.sqlite")
    cases = [case("c", src, "SELECT name FROM emp WHERE salary > 100",
                  alternatives=["SELECT name FROM emp WHERE name IN ('bob', 'carol')"])]
    run = qe.evaluate(cases, responses=[{"case_id": "c", "query":
                                         "SELECT name FROM emp WHERE name IN ('carol', 'bob')"}],
                      task="query", out=tmp_path / "runs", test_suite=6)
    assert records(run)["c"]["scores"]["test_suite_match"] == 1.0


# --- property: every refutation is real -----------------------------------------------------
OPS = (">", ">=", "<", "<=", "=", "<>")
GOLD = st.tuples(st.sampled_from(OPS), st.sampled_from((80, 90, 100, 120, 150)))


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs=st.lists(st.tuples(GOLD, GOLD), min_size=3, max_size=3),
       seed=st.integers(0, 50))
def test_property_every_refutation_reexecuted_differs(tmp_path_factory, pairs, seed):
    folder = tmp_path_factory.mktemp("prop")
    build_example(folder)
    src = str(folder / "emp.sqlite")
    cases, answers = [], []
    for i, ((gop, gc), (pop, pc)) in enumerate(pairs):
        cases.append(case(f"c{i}", src, f"SELECT name, salary FROM emp WHERE salary {gop} {gc}"))
        answers.append({"case_id": f"c{i}",
                        "query": f"SELECT name, salary FROM emp WHERE salary {pop} {pc}"})
    run = qe.evaluate(cases, responses=answers, task="query", out=folder / "runs",
                      test_suite=5, test_suite_seed=seed)
    for i, rec in enumerate(records(run).values()):
        match = rec["scores"]["test_suite_match"]
        refuted = rec["test_suite"].get("refuted_by")
        if refuted is not None:
            assert match == 0.0
            conn = rebuild(folder / "emp.sqlite", refuted["database"], folder / f"r{i}.sqlite")
            assert bag(conn, rec["gold_query"]) != bag(conn, rec["predicted_query"])
            conn.close()
        if match == 1.0:  # equal everywhere: then equal on the original too
            conn = sqlite3.connect(src)
            assert bag(conn, rec["gold_query"]) == bag(conn, rec["predicted_query"])
            conn.close()
