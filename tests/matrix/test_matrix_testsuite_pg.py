"""The cross-feature matrix for --test-suite on a PostgreSQL source (docs/test-suite.md,
"PostgreSQL"): ``test_suite_match`` per case and ``test_suite_accuracy`` overall in a plain
run, a run with repeats and a run with a failing call, read back by every consumer (run
model, pandas, metrics JSON, results CSV, HTML, gates, viewer API) and by both compares.
The values are hand-computed from examples/testsuite loaded into the test server: the same
two predictions are right by accident there as on the shipped sqlite file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="psycopg not installed (pip install 'queryeval[postgres]')")

import queryeval as qe  # noqa: E402
from helpers.matrix_checks import build_kind, check_compare, check_consumers  # noqa: E402
from helpers.matrix_testsuite import BOTS, FAILING, PLAIN  # noqa: E402
from helpers.testsuite_pg import EXAMPLE, GRANTS, suite_for  # noqa: E402

N = 5
REPEATS = 4
BOTS_PG = BOTS + '''
ORDER = list(QUESTIONS.values())

def repeated(request):          # case i: the shipped prediction on repeats 0 .. i % 4, then fixed
    i = ORDER.index(QUESTIONS[request["question"]])
    return right(request) if request.get("repeat", 0) <= i % 4 else fixed(request)
'''
ORDER = list(PLAIN)
# case i answers as shipped on (i % 4) + 1 of the 4 repeats and as fixed (1.0) on the rest
REPEATED = {c: (PLAIN[c] * (i % 4 + 1) + 1.0 * (REPEATS - (i % 4 + 1))) / REPEATS
            for i, c in enumerate(ORDER)}
KINDS = {"plain": PLAIN, "repeats": REPEATED, "errors": FAILING}


@pytest.fixture(scope="module")
def lab(tmp_path_factory, pg_server):
    root = tmp_path_factory.mktemp("tspgmatrix")
    db = pg_server.database("tspg_matrix", (EXAMPLE / "emp.sql").read_text() + GRANTS)
    suite_for(db["reader"], root)
    shutil.copy(EXAMPLE / "predictions.jsonl", root / "predictions.jsonl")  # the bots' answers
    (root / "bots.py").write_text(BOTS_PG)
    return root


@pytest.fixture(scope="module")
def built(lab):
    runs: dict[str, qe.Run] = {}

    def get(kind: str) -> qe.Run:
        if kind not in runs:
            runs[kind] = build_kind(kind, lab / "suite.yaml", lab / "bots.py", lab / "runs",
                                    n=len(PLAIN), plain="right", repeats=REPEATS,
                                    test_suite=N)
        return runs[kind]

    return get


def test_hand_computed_repeats():
    assert REPEATED == {"high-earners": 0.75, "not-at-most-100": 1.0,
                        "staff-and-departments": 1.0, "sales-staff": 1.0,
                        "count-at-least-120": 0.75}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_consumer_reads_test_suite_match_on_postgres(built, lab, kind):
    run = built(kind)
    expected = KINDS[kind]
    known = [c for c, v in expected.items() if v is not None]  # a failed call: no verdict
    mean = check_consumers(run, "test_suite_match", expected, overall="test_suite_accuracy",
                           counted=known, viewer_root=lab / "runs" / kind)
    assert mean == pytest.approx(sum(expected[c] for c in known) / len(known))
    assert run.overall["test_suite_unknown"] == len(expected) - len(known)
    if kind == "plain":
        assert run.overall["exact_match_f1"] == 1.0  # every prediction matches the original
        assert run.overall["test_suite_refuted"] == 2 and run.overall["test_suite_unknown"] == 0


def test_compare_plain_and_repeats_on_test_suite_match(built, tmp_path: Path):
    check_compare(built("plain"), built("repeats"), "test_suite_match", PLAIN, REPEATED,
                  tmp_path)
