"""``queryeval run --cluster-by FIELD`` reaches the run: each record carries the case's
cluster (the command line built it into its settings but did not pass it on, so the option
was silently ignored)."""

from __future__ import annotations

import json
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "freeform"


def test_cluster_by_on_the_command_line_clusters_the_records(tmp_path):
    from queryeval.cli.app import main

    cases = [json.loads(line) for line in (EXAMPLE / "cases.jsonl").read_text().splitlines()]
    for i, case in enumerate(cases):
        case["metadata"] = {"source": f"doc{i % 2}"}
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
    assert main(["run", str(suite), "--responses", str(EXAMPLE / "responses.jsonl"),
                 "--out", str(tmp_path / "runs"), "-q", "--no-report",
                 "--cluster-by", "source"]) == 0
    [results] = (tmp_path / "runs").rglob("results_*.jsonl")
    clusters = {r["case_id"]: r.get("cluster") for r in map(json.loads,
                                                            results.read_text().splitlines())}
    assert clusters == {c["id"]: f"doc{i % 2}" for i, c in enumerate(cases)}
