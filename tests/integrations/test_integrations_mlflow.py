"""``--mlflow``: a run logged to a local MLflow file store, read back by MLflow's own client:
parameters, overall and group metrics (the metrics file's numbers), the run log and reports
as artifacts, the per-case verdicts (cases.json)."""

from __future__ import annotations

import json

import pytest

from helpers.ci_lab import FAILING, REPEATED, REPEATED_RATE, make_lab, run_cli

pytest.importorskip("mlflow")
from mlflow.tracking import MlflowClient  # noqa: E402

from queryeval.integrations.mlflow import metric_name  # noqa: E402


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return make_lab(tmp_path_factory.mktemp("mlflow"))


@pytest.fixture
def store(tmp_path, monkeypatch):
    # mlflow-skinny's file store is in maintenance mode: allowed explicitly (docs/ci.md)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return (tmp_path / "mlruns").as_uri()


def logged(store: str, experiment: str = "queryeval"):
    client = MlflowClient(tracking_uri=store)
    exp = client.get_experiment_by_name(experiment)
    (run,) = client.search_runs([exp.experiment_id])
    return client, run


def test_params_metrics_artifacts_and_verdicts(lab, tmp_path, store):
    res, batch = run_cli(lab, "failing", tmp_path / "runs", "--mlflow", "--mlflow-uri", store,
                         "--mlflow-experiment", "ci")
    assert res.exit_code == 0, res.output
    client, run = logged(store, "ci")
    assert f"mlflow: run {run.info.run_id}" in res.stdout
    batch_id = batch.stem.removeprefix("batch_")
    p = run.data.params
    assert (p["task"], p["label"], p["batch_id"], p["option.on_error"]) == (
        "answers", "failing", batch_id, "score")
    m = run.data.metrics
    # hand-computed: 4 of 6 cases right (c4's call failed, c5 wrong)
    assert m["psaq"] == pytest.approx(4 / 6) and m["errors"] == 1 and m["questions"] == 6
    assert m["group.concept_count.0.correct_questions"] == 4
    doc = json.loads(batch.with_name(f"metrics_{batch_id}.json").read_text())
    assert m["abq"] == doc["overall_metrics"]["abq"]  # the metrics file's number, unchanged
    names = {a.path for a in client.list_artifacts(run.info.run_id, "queryeval")}
    assert {f"queryeval/{k}_{batch_id}{s}" for k, s in (
        ("batch", ".json"), ("results", ".jsonl"), ("results", ".csv"), ("metrics", ".json"),
        ("report", ".html"), ("report", ".xlsx"))} | {"queryeval/cases.json"} <= names
    local = client.download_artifacts(run.info.run_id, "queryeval/cases.json", str(tmp_path))
    cases = json.loads(open(local, encoding="utf-8").read())["cases"]
    assert {c["case_id"]: c["verdict"] for c in cases} == FAILING
    assert run.info.status == "FINISHED"


def test_repeats_figures(lab, tmp_path, store):
    res, _ = run_cli(lab, "repeated", tmp_path / "runs", "--repeats", "4", "--mlflow",
                     "--mlflow-uri", store, "--no-report")
    assert res.exit_code == 0, res.output
    client, run = logged(store)
    # mean of the per-case pass rates: (1+2+3+4+1+2)/4/6
    assert run.data.metrics["repeats.pass_rate"] == pytest.approx(13 / 24)
    assert run.data.metrics["repeats.pass_at_4"] == pytest.approx(1.0)
    local = client.download_artifacts(run.info.run_id, "queryeval/cases.json", str(tmp_path))
    cases = json.loads(open(local, encoding="utf-8").read())["cases"]
    assert {c["case_id"]: c["verdict"] for c in cases} == REPEATED
    assert {c["case_id"]: c["pass_rate"] for c in cases} == REPEATED_RATE


def test_metric_names_mlflow_accepts():
    assert metric_name("recall@5") == "recall_at_5"
    assert metric_name("pass^3") == "pass_hat_3"
    assert metric_name("group.tag.a|b.x") == "group.tag.a_b.x"


def test_a_store_that_refuses_is_one_clear_line(lab, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    res, _ = run_cli(lab, "plain", tmp_path / "runs", "--mlflow", "--mlflow-uri",
                     (tmp_path / "mlruns").as_uri(), "--no-report",
                     env={"MLFLOW_ALLOW_FILE_STORE": None})
    if res.exit_code == 0:
        pytest.skip("this MLflow still accepts a file store without opting in")
    assert res.exit_code == 2
    assert res.stderr.startswith("error: --mlflow: ") and "Traceback" not in res.output
