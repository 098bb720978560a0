"""Kill-and-resume soak, lean: a run is SIGKILLed at chosen points (mid-append, a random
time, while the final files and derived batches are written) and resumed until it is done;
the metrics equal an uninterrupted run and every case is in the results exactly once. The
harness is ``bench/soak.py`` (its full run: every task kind, 1,000+ cases, 25 kills)."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest

from queryeval.cli.app import main

_SPEC = importlib.util.spec_from_file_location(
    "queryeval_bench_soak", Path(__file__).resolve().parents[2] / "bench" / "soak.py")
soak = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = soak
_SPEC.loader.exec_module(soak)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "plan"), [
    ("retrieval", ["progress", "finish", "time"]),
    ("indicator_selection", ["progress", "progress", "finish"]),
])
def test_killed_runs_resume_to_the_uninterrupted_result(tmp_path, kind, plan):
    row = soak.soak_kind(kind, tmp_path, 200, kills=3, rng=random.Random(4), modes_plan=plan)
    assert row["kills"] == 3
    assert row["equal"], row
    assert (row["duplicates"], row["lost"]) == (0, 0)
    assert row["derived_ok"]
    if kind == "retrieval":
        assert row["derived"] == "2 ok"


def test_compare_catches_a_lost_a_duplicated_and_a_changed_case(tmp_path):
    """The soak's checker is not vacuous."""
    args = soak.build_selection(tmp_path, 40)
    ids = soak.suite_ids(args)
    for name in ("ref", "run"):
        assert main(["run", *args, "--out", str(tmp_path / name), "-q", "--no-report"]) == 0
    assert soak.compare(tmp_path / "ref", tmp_path / "run", ids) == {
        "equal": True, "duplicates": 0, "lost": 0, "derived": "-", "derived_ok": True}
    (jsonl,) = (tmp_path / "run").rglob("results_*.jsonl")
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join([*lines[1:], lines[2]]) + "\n")
    got = soak.compare(tmp_path / "ref", tmp_path / "run", ids)
    assert (got["lost"], got["duplicates"]) == (1, 1)
    (metrics,) = (tmp_path / "run").rglob("metrics_*.json")
    doc = json.loads(metrics.read_text())
    doc["overall_metrics"]["macro_recall"] += 1e-12
    metrics.write_text(json.dumps(doc))
    assert soak.compare(tmp_path / "ref", tmp_path / "run", ids)["equal"] is False


def test_a_kill_while_derived_batches_are_written_resumes_cleanly(tmp_path):
    """The state a SIGKILL leaves while retrieval writes its derived (smaller-k) batches: the
    run batch still ``running`` without their ids, one derived batch ``running``. Resuming the
    folder must pick the run (not the derived batch) and rewrite the same derived batches."""
    args = soak.build_retrieval(tmp_path, 60)
    out = tmp_path / "o"
    assert main(["run", *args, "--out", str(out), "-q", "--no-report"]) == 0
    run_batch, derived = soak.batches(out)
    assert len(derived) == 2
    before = {p.name: json.loads(p.with_name(p.name.replace("batch_", "metrics_")).read_text())["overall_metrics"]
              for p in derived}
    doc = json.loads(run_batch.read_text())
    doc["status"] = "running"
    del doc["derived_batches"]
    run_batch.write_text(json.dumps(doc))
    half = json.loads(derived[0].read_text())
    half["status"] = "running"
    derived[0].write_text(json.dumps(half))
    assert main(["run", "--resume", str(out), "-q"]) == 0
    run_batch2, derived2 = soak.batches(out)
    assert run_batch2 == run_batch and [p.name for p in derived2] == [p.name for p in derived]
    assert all(json.loads(p.read_text())["status"] == "complete" for p in derived2)
    after = {p.name: json.loads(p.with_name(p.name.replace("batch_", "metrics_")).read_text())["overall_metrics"]
             for p in derived2}
    for name in before:  # the same figures (timings aside)
        assert soak._strip_timing(after[name]) == soak._strip_timing(before[name])
    assert main(["run", "--resume", str(derived[0]), "-q"]) == 2  # a derived batch names its parent
