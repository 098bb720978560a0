"""Hostile golds and predictions through ``--test-suite`` on PostgreSQL (docs/test-suite.md,
"PostgreSQL").

A gold comes from the suite file and its mutants are derived from it; on PostgreSQL they
and the predictions run in the sandboxed neighbour worker (:mod:`..neighbours.pg_worker`),
never in the evaluating process, and every query runs in a READ ONLY transaction that is
rolled back, under ``statement_timeout``. With the query checks on the policy refuses the
corpus; **with them off** (``base.QUERY_CHECKS = False``) the worker and the server still
hold: the real tables are byte-for-byte unchanged, a sequence does not move, no large
object is made, no advisory lock stays, no temporary table outlives the run, and a runaway
ends at its deadline.
"""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg",
                              reason="psycopg not installed (pip install 'queryeval[postgres]')")

import queryeval as qe  # noqa: E402
from helpers.sandbox import needs_sandbox  # noqa: E402
from helpers.testsuite_pg import EXAMPLE, GRANTS, fingerprint, records, temp_tables  # noqa: E402
from queryeval.engines.query import QueryExecutionError, QueryTimeout  # noqa: E402
from queryeval.engines.query import postgres as pg_module  # noqa: E402
from queryeval.engines.query.neighbours import pg_neighbours  # noqa: E402
from queryeval.engines.query.neighbours.pg import PgRunner  # noqa: E402
from queryeval.engines.query.sandbox import unavailable_layers  # noqa: E402

SETUP = (EXAMPLE / "emp.sql").read_text(encoding="utf-8") + """
CREATE SEQUENCE ticket;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE ticket TO reader;
""" + GRANTS

CORPUS = [
    "WITH x AS (INSERT INTO dept VALUES (9, 'mallory') RETURNING id) SELECT id FROM x",
    "WITH x AS (DELETE FROM emp RETURNING name) SELECT name FROM x",
    "SELECT nextval('ticket')",
    "SELECT setval('ticket', 1000)",
    "SELECT lo_import('/etc/hostname')",
    "SELECT lo_create(4242)",
    "SELECT pg_advisory_lock(42)",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT name FROM emp FOR UPDATE",
    "COPY dept TO STDOUT",
    "SELECT 1; DROP TABLE emp",
]


@pytest.fixture(scope="module")
def shop(pg_server):
    return pg_server.database("tspg_hostile", SETUP)


def _state(admin_url: str) -> dict:
    with psycopg.connect(admin_url, autocommit=True) as con:
        return {"tables": fingerprint(admin_url),
                "sequence": con.execute("SELECT last_value, is_called FROM ticket").fetchone(),
                "large objects": con.execute(
                    "SELECT count(*) FROM pg_largeobject_metadata").fetchone()[0],
                "advisory locks": con.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()[0]}


def test_hostile_golds_change_nothing_on_the_server(shop, tmp_path, checks):
    before = _state(shop["admin"])
    got = {}
    for q in CORPUS:
        try:
            pg_neighbours(shop["reader"], q, 3, cache_dir=tmp_path / "c", timeout_s=5)
            got[q] = "ok"
        except QueryExecutionError as exc:
            got[q] = type(exc).__name__
    assert _state(shop["admin"]) == before
    assert temp_tables(shop["admin"]) == []
    if checks:  # the policy refuses each before anything is sent
        assert set(got.values()) == {"QueryRefused"}, got
    else:  # the server: writes to tables and sequences fail in the READ ONLY transaction;
        # what it lets through (lo_create) is rolled back, the lock released (state above)
        writes = [q for q in CORPUS if "INSERT" in q or "DELETE" in q or "val(" in q
                  or "DROP" in q or "FOR UPDATE" in q]
        assert all(got[q] != "ok" for q in writes), got


def test_hostile_predictions_on_the_neighbours_change_nothing(shop, tmp_path, checks):
    """The same corpus as predictions of a case whose gold is fine: they fail on the
    original (so no neighbour runs them) or on the neighbours; nothing changes either way,
    and a prediction that writes is never counted equal."""
    before = _state(shop["admin"])
    cases = [{"id": f"c{i}", "conversation": [{"role": "user", "content": q, "target": {
        "query": {"gold": "SELECT name FROM emp WHERE salary > 100"}}}]}
        for i, q in enumerate(CORPUS)]
    run = qe.evaluate(cases, responses=[{"case_id": f"c{i}", "query": q}
                                        for i, q in enumerate(CORPUS)],
                      task="query", out=tmp_path / "runs", test_suite=3, source=shop["reader"])
    recs = records(run)
    assert all(r["scores"]["test_suite_match"] != 1.0 for r in recs.values()), recs
    del run
    import gc

    gc.collect()
    assert _state(shop["admin"]) == before
    assert temp_tables(shop["admin"]) == []


def test_a_runaway_gold_ends_at_its_deadline(shop, tmp_path, checks):
    runaway = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
               "SELECT count(*) FROM r")
    with pytest.raises(QueryTimeout):
        pg_neighbours(shop["reader"], runaway, 3, cache_dir=tmp_path / "c", timeout_s=1)
    assert temp_tables(shop["admin"]) == []


def test_nothing_runs_in_the_evaluating_process(shop, tmp_path, monkeypatch):
    """With the PostgreSQL session's ``run`` made to fail in this process, neighbours are
    still built and a run still scores: every query ran in a worker."""

    def ran_here(self, *args, **kwargs):
        raise AssertionError("a query ran in the evaluating process")

    monkeypatch.setattr(pg_module.PostgresSession, "run", ran_here)
    built = pg_neighbours(shop["reader"], "SELECT name FROM emp WHERE salary > 100", 3,
                          seed=1, cache_dir=tmp_path / "c")
    assert len(built.neighbours) == 3 and built.executions > 0
    cases = [{"id": "c", "conversation": [{"role": "user", "content": "c", "target": {
        "query": {"gold": "SELECT name FROM emp WHERE salary > 100"}}}]}]
    run = qe.evaluate(cases, responses=[{"case_id": "c", "query": "SELECT name FROM emp "
                                         "WHERE name IN ('bob', 'carol')"}],
                      task="query", out=tmp_path / "runs", test_suite=3, source=shop["reader"])
    assert records(run)["c"]["scores"]["test_suite_match"] == 0.0


@needs_sandbox
def test_the_neighbour_worker_is_sandboxed(shop):
    with PgRunner(shop["reader"]) as runner:
        runner.start()
        assert runner.sandbox and unavailable_layers(runner.sandbox) == []
