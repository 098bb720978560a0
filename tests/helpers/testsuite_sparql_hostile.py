"""What the tests of testsuite sparql hostile share with other test files: ``RUNAWAY``, ``run_example`` (moved here from test_testsuite_sparql_hostile.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from queryeval.cli.app import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sparql"


RUNAWAY = ("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . "
           "?m ?n2 ?o . ?p ?q ?r }")


def run_example(tmp_path: Path, monkeypatch) -> list[dict]:
    """The records of ``queryeval run examples/sparql --test-suite 3`` (the cache under
    ``tmp_path / "cache"``)."""
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    ex = Path(shutil.copytree(EXAMPLES, tmp_path / "ex"))
    out = tmp_path / "runs"
    assert main(["run", str(ex / "suite.yaml"), "--responses", str(ex / "predictions.jsonl"),
                 "--out", str(out), "-q", "--no-report", "--test-suite", "3"]) == 0
    return [json.loads(line) for f in out.rglob("results_*.jsonl")
            for line in f.read_text(encoding="utf-8").splitlines()]
