"""A cached neighbour set with no neighbour is built again, not reused: 4491f97's relative
cache folder made every candidate fail in the sandboxed worker and left such sets in
./.queryeval-cache (any failure of every candidate would: a worker that cannot open them,
a loaded machine timing the gold out), and the fixed code read them back -- every case of
every later run "unknown" until the user found and deleted the cache."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.testsuite_sql import build_example
from queryeval.cli.app import main


def overall(runs: Path) -> dict:
    metrics = sorted(runs.rglob("metrics_*.json"), key=lambda p: p.stat().st_mtime_ns)
    return json.loads(metrics[-1].read_text())["overall_metrics"]


def test_an_empty_cached_neighbour_set_is_rebuilt(tmp_path, monkeypatch):
    build_example(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "testsuite"
    args = ["run", "suite.yaml", "--task", "query", "--responses", "predictions.jsonl",
            "--test-suite", "5", "-q", "--no-report"]
    assert main([*args, "--out", "first"]) == 0
    manifests = list(cache.rglob("manifest.json"))
    assert len(manifests) == 4  # five cases, two with the same gold
    for manifest in manifests:  # as the old code left them: no neighbour kept
        doc = json.loads(manifest.read_text())
        for nb in doc["neighbours"]:
            (manifest.parent / nb["file"]).unlink()
        manifest.write_text(json.dumps({**doc, "neighbours": []}))
    assert main([*args, "--out", "second"]) == 0
    o = overall(tmp_path / "second")
    # the example's verdicts (docs/test-suite.md): two right by accident, three equal
    assert (o["test_suite_refuted"], o["test_suite_unknown"]) == (2, 0)
    assert o["test_suite_accuracy"] == 3 / 5
    assert all(json.loads(m.read_text())["neighbours"] for m in cache.rglob("manifest.json"))
