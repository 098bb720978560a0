"""The results CSV carries each case's cluster as its last column (docs/compare.md): a
case's ``cluster:``, blank for a case that is its own, on every row of a plain, repeated,
cached and resumed run (tests/helpers/matrix_checks.py), of a multi-row task (the answers task: one
row per sub-answer) and of a derived batch (retrieval: one per k); the other columns are
those of a run without it."""

from __future__ import annotations

import csv
import json

import pytest

from helpers.matrix_checks import build_kind, built_once, check_cluster_column, run_file, write_lab

N = 6
BOTS = '''
import re

def _i(request):
    return int(re.search(r"question (\\d+)\\?", str(request)).group(1))

def plain(request):
    return {"response": "@n[%d] @m[x]" % _i(request)}

def repeated(request):
    i = _i(request)
    return {"response": "@n[%d] @m[x]" % (i if request.get("repeat", 0) <= i % 2 else 99)}
'''
CLUSTERS = {"c0": "f1", "c1": "f1", "c2": "f2", "c3": "f2", "c4": "f3", "c5": None}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = write_lab(tmp_path_factory.mktemp("csv_cluster"), BOTS,
                     {f"c{i}": {"answers": [{"name": "n", "value": str(i)},
                                            {"name": "m", "value": "x"}]} for i in range(N)})
    cases = [json.loads(line) for line in (root / "cases.jsonl").read_text().splitlines()]
    for case in cases:
        if CLUSTERS[case["id"]]:
            case["cluster"] = CLUSTERS[case["id"]]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return root


@pytest.fixture(scope="module")
def built(lab):
    return built_once(lambda kind: build_kind(kind, str(lab / "cases.jsonl"), lab / "bots.py",
                                              lab / "runs", n=N, keep=2, repeats=2))


@pytest.mark.parametrize("kind", ["plain", "repeats", "cached", "resumed"])
def test_every_row_carries_its_cluster(built, kind):
    run = built(kind)
    assert {r["case_id"]: r.get("cluster") for r in run.records} == CLUSTERS
    assert run.overall["errors"] == 0 and run.overall["abq"] == pytest.approx(
        1.0 if kind != "repeats" else 0.75)  # repeat 1 is wrong on c0, c2, c4
    check_cluster_column(run)
    with open(run_file(run, "results", ".csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    # two sub-answers a case: two rows a case (and attempt), each with the case's cluster
    assert len(rows) == 2 * N * (2 if kind == "repeats" else 1)
    assert sorted((r["case_id"], r["cluster"]) for r in rows if r["name"] == "n") == sorted(
        (c, v or "") for c, v in CLUSTERS.items() for _ in range(2 if kind == "repeats" else 1))


def test_derived_batches_carry_the_cluster_too(tmp_path):
    """The retrieval example: each question's cluster is its document; the k = 1 and k = 5
    batches derived from the k = 1,5,10 run have the same column."""
    from pathlib import Path

    import queryeval as qe

    ex = Path(__file__).resolve().parents[2] / "examples" / "retrieval"
    run = qe.evaluate(str(ex / "questions.csv"), corpus=str(ex / "corpus.jsonl"), k=[1, 5, 10],
                      out=tmp_path / "runs", reports=False)
    docs = {r["qa_pair_id"]: r["cluster"] for r in run.records}
    assert len(set(docs.values())) > 1
    files = sorted(run.folder.glob("results_*.csv"))
    assert len(files) == 3
    for path in files:
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            assert reader.fieldnames[-1] == "cluster"
            assert {r["cluster"] == docs[r["qa_pair_id"]] for r in reader} == {True}
