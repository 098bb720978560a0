"""The viewer index's headline: the first four entries of kind ``figure`` (what app.js
shows) are the task's rates (retrieval: recall@k, hit_rate@k, MRR, nDCG), for a plain run and a run with repeats alike; a retriever's
similarity score (declared unbounded) and a count averaged over the repeats (a float in the
metrics JSON) are never taken for a rate."""

from __future__ import annotations

from pathlib import Path

import pytest

import queryeval as qe

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from helpers.viewer_headline import EX, flaky_retriever  # noqa: E402,F401
from queryeval.viewer.server import create_app  # noqa: E402


def _index_row(out: Path, batch_id: str) -> dict:
    client = TestClient(create_app(out, resamples=200), base_url="http://127.0.0.1")
    rows = client.get("/api/runs").json()["runs"]
    return next(r for r in rows if r["id"] == batch_id)


def _headline(row: dict) -> list[str]:  # as app.js picks them
    return [k for k in row["metrics"] if row["metric_kinds"].get(k) == "figure"][:4]


@pytest.mark.parametrize("repeats", [1, 3])
def test_index_headline_is_the_rates_with_and_without_repeats(tmp_path, repeats):
    run = qe.evaluate(str(EX / "questions.csv"), system=flaky_retriever,
                      corpus=str(EX / "corpus.jsonl"), k=[1, 5, 10], repeats=repeats,
                      out=tmp_path / "o", reports=False)
    overall = run.metrics["overall_metrics"]
    if repeats > 1:  # the counts are means over the repeats: floats in the JSON
        assert isinstance(overall["successful_retrievals"], float)
    assert overall["incorrect_retrievals_analysis"]["avg_score_incorrect"] > 1  # not a rate
    row = _index_row(tmp_path / "o", run.batch_id)
    assert _headline(row) == ["recall@10", "hit_rate@10", "mrr@10", "ndcg@10"]
    kinds = row["metric_kinds"]
    # a count averaged over the repeats is named so (display only: the JSON keeps its name)
    mean = " (mean over repeats)" if repeats > 1 else ""
    assert kinds[f"successful_retrievals{mean}"] == kinds["total_questions"] == "count"
    assert kinds[f"incorrect_retrievals_analysis.incorrect_retrievals_count{mean}"] == "count"
    assert kinds["incorrect_retrievals_analysis.avg_score_incorrect"] == "score"
    assert kinds["mean_retrieval_time_ms"] == "time"
