"""The cross-feature matrix for ``--compat spider|bird`` (docs/tables.md, "Execution
accuracy"): ``execution_accuracy`` per case and overall in the run kinds (plain, repeats,
cached, resumed after a kill, with a failing call), read back by every consumer (run model,
pandas, metrics JSON, results CSV, HTML, gates, viewer API) and by both compares. The
expected values are the references' own verdicts (the oracles of
tests/tasks/test_execution_accuracy.py) on the pairs."""

from __future__ import annotations

import json

import pytest

from helpers.execution_accuracy import (
    FIGURE,
    PAIRS,
    bird_execute_model,
    build_db,
    mini_execute_model,
    spider2_compare_pandas_table,
    spider2_sqlite_csv,
    ts_eval_exec_match,
)
from helpers.matrix_checks import build_kind, check_compare, check_consumers, write_lab

CHOSEN = ("permuted", "text-1-vs-1", "subquery-order", "bag-vs-set", "distinct-gold",
          "bad-utf8", "same")
REPEATS = 4
BOTS = '''
import json
from pathlib import Path

PAIRS = json.loads((Path(__file__).parent / "pairs.json").read_text())
BY_QUESTION = {f"question {i}?": cid for i, cid in enumerate(PAIRS)}

def plain(request):
    return {"query": PAIRS[BY_QUESTION[request["question"]]][1]}

def gold(request):
    return {"query": PAIRS[BY_QUESTION[request["question"]]][0]}

def repeated(request):          # the prediction on even repeats, the gold query on odd ones
    return plain(request) if request.get("repeat", 0) % 2 == 0 else gold(request)

def failing(request):           # the call for "same" fails
    if BY_QUESTION[request["question"]] == "same":
        raise RuntimeError("backend down")
    return plain(request)
'''


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("execmatrix")
    db = build_db(root / "t.sqlite")
    pairs = {c: PAIRS[c] for c in CHOSEN}
    (root / "pairs.json").write_text(json.dumps(pairs))
    write_lab(root, BOTS, {c: {"query": {"gold": g, "source": str(db)}}
                           for c, (g, _p) in pairs.items()})
    return root


def _expected(lab, mode: str) -> dict[str, float]:
    db = str(lab / "t.sqlite")
    if mode == "spider":
        return {c: float(ts_eval_exec_match(db, PAIRS[c][1], PAIRS[c][0])) for c in CHOSEN}
    if mode == "bird-soft-f1":
        return {c: float(mini_execute_model(db, PAIRS[c][1], PAIRS[c][0])) for c in CHOSEN}
    if mode == "spider2":  # no chosen gold sorts at the top level: order ignored
        out = {}
        for c in CHOSEN:
            gold = spider2_sqlite_csv(db, PAIRS[c][0], lab / "s2" / c, "gold.csv")
            pred = spider2_sqlite_csv(db, PAIRS[c][1], lab / "s2" / c, "pred.csv")
            out[c] = 0.0 if pred is None else float(
                spider2_compare_pandas_table(pred, gold, None, True))
        return out
    return {c: float(bird_execute_model(db, PAIRS[c][1], PAIRS[c][0])) for c in CHOSEN}


@pytest.fixture(scope="module")
def built(lab):
    runs = {}

    def get(kind: str, mode: str):
        key = (kind, mode)
        if key not in runs:
            runs[key] = build_kind(kind, lab / "cases.jsonl", lab / "bots.py",
                                   lab / f"runs-{mode}", n=len(CHOSEN), keep=3,
                                   repeats=REPEATS, cache_dir=lab / f"cache-{mode}",
                                   task="query", options={"compat": mode})
        return runs[key]

    return get


@pytest.mark.parametrize("mode", ["spider", "bird"])
@pytest.mark.parametrize("kind", ["plain", "repeats", "cached", "resumed", "errors"])
def test_every_consumer_reads_execution_accuracy(lab, built, kind, mode):
    want = _expected(lab, mode)
    assert 0 < sum(want.values()) < len(want)
    if kind == "repeats":  # half the attempts the prediction, half the gold query (1.0)
        want = {c: (v + 1.0) / 2 for c, v in want.items()}
    if kind == "errors":  # a failed call scores 0, as every execution figure
        want = {**want, "same": 0.0}
    check_consumers(built(kind, mode), FIGURE[mode], want,
                    viewer_root=lab / f"runs-{mode}" / kind)


@pytest.mark.parametrize("mode", ["bird-soft-f1", "spider2"])
@pytest.mark.parametrize("kind", ["plain", "errors"])
def test_every_consumer_reads_the_further_modes(lab, built, kind, mode):
    want = _expected(lab, mode)
    assert 0 < sum(want.values()) < len(want)
    if kind == "errors":
        want = {**want, "same": 0.0}
    check_consumers(built(kind, mode), FIGURE[mode], want, viewer_root=lab / f"runs-{mode}" / kind)


def test_compare_spider_against_bird(lab, built, tmp_path):
    check_compare(built("plain", "spider"), built("plain", "bird"), "execution_accuracy",
                  _expected(lab, "spider"), _expected(lab, "bird"), tmp_path)
