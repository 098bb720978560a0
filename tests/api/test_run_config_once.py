"""One RunConfig, built once: ``queryeval run`` builds it from its options and the run
receives that very object (``qe.evaluate(config)``), so every setting given on the command
line reaches the batch file. (``--cluster-by`` was once built into the settings and dropped
on the way, since the command unpacked the config into keywords that the API rebuilt.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import ConfigError
from queryeval.run.config import RunConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ANSWERS = EXAMPLES / "answers"
SDMX = EXAMPLES / "sdmx"

NOT_ON_THE_COMMAND_LINE = {
    "system_name": "a Python object's name for the call cache (qe.evaluate(system_name=...))",
    "executor": "ray needs a Ray cluster; its one other value, local, is the default",
}


def _batch(folder: Path) -> dict:
    (batch,) = folder.rglob("batch_*.json")
    return json.loads(batch.read_text(encoding="utf-8"))["evaluation_config"]


@pytest.fixture
def one_config(monkeypatch):
    """The configs the command line made and the ones the run started with."""
    import queryeval.run.config as run_config
    import queryeval.run.evaluate as run_evaluate

    made, started = [], []
    make, start = run_config.make_config, run_evaluate.start_run

    def making(**values):
        made.append(make(**values))
        return made[-1]

    def starting(config, **kwargs):
        started.append(config)
        return start(config, **kwargs)

    monkeypatch.setattr(run_config, "make_config", making)
    monkeypatch.setattr(run_evaluate, "start_run", starting)
    return made, started


def test_every_run_config_field_set_on_the_command_line_reaches_the_batch(tmp_path, one_config):
    made, started = one_config
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert main(["run", str(ANSWERS / "questions.jsonl"), "--labels", str(ANSWERS / "labels.jsonl"),
                 "--responses", str(ANSWERS / "responses.jsonl"), "--task", "answers",
                 "--out", str(a), "--concurrency", "3", "--timeout", "7.5", "--retries", "1",
                 "--backoff", "0.25", "--match", "strict", "--no-report",
                 "--max-error-rate", "0.5", "--name", "lab", "--cluster-by", "file_name",
                 "--repeats", "2", "--pass-k", "1,2", "-q"]) == 0
    cache = tmp_path / "cache"
    system = f"python:{SDMX / 'system.py'}:select"
    assert main(["run", str(SDMX / "suite"), "--system", system, "--isolate", "--cache",
                 "--cache-dir", str(cache), "--cache-max-mb", "64", "--system-version", "v1",
                 "--ray-address", "ray://head:10001", "--out", str(b), "-q", "--no-report"]) == 0
    assert main(["run", str(SDMX / "suite"), "--system", system, "--stop-when-decided",
                 "--baseline", str(b), "--alpha", "0.1", "--margin", "0.2", "--metric", "pass",
                 "--out", str(c), "-q", "--no-report"]) == 0
    assert len(made) == len(started) == 3
    assert all(s is m for s, m in zip(started, made, strict=True))  # passed on, never rebuilt
    got = {**_batch(a), **{k: v for k, v in _batch(b).items() if k not in ("suite", "out")},
           "sequential": _batch(c).get("sequential"), "out_a": _batch(a)["out"]}
    expected = {
        "suite": str(ANSWERS / "questions.jsonl"), "labels": str(ANSWERS / "labels.jsonl"),
        "task": "answers", "responses": str(ANSWERS / "responses.jsonl"),
        "out": str(a), "concurrency": 3, "timeout": 7.5, "retries": 1, "backoff": 0.25,
        "reports": False, "max_error_rate": 0.5, "name": "lab", "cluster_by": "file_name",
        "repeats": 2, "pass_k": [1, 2],
        "system": system, "isolate": True, "cache": True, "cache_dir": str(cache),
        "cache_max_mb": 64.0, "system_version": "v1", "ray_address": "ray://head:10001",
        "sequential": {"baseline": str(b), "alpha": 0.1, "margin": 0.2, "metric": "pass",
                       "seed": 0},
    }
    a_batch = _batch(a)
    for key in ("suite", "labels", "task", "responses", "concurrency", "timeout", "retries",
                "backoff", "reports", "max_error_rate", "name", "cluster_by", "repeats",
                "pass_k"):
        assert a_batch[key] == expected[key], key
    assert Path(a_batch["out"]) == a
    assert a_batch["task_options"]["match"] == "strict"  # a task flag: task_options
    for key in ("system", "isolate", "cache", "cache_dir", "cache_max_mb", "system_version",
                "ray_address"):
        assert got[key] == expected[key], key
    assert got["sequential"] == expected["sequential"]
    covered = {*expected, "task_options"}
    assert set(RunConfig.model_fields) == covered | set(NOT_ON_THE_COMMAND_LINE)


def test_evaluate_takes_one_run_config(tmp_path):
    """``qe.evaluate(config)``: the same run as the keywords; a setting given beside the
    config is refused (it would be ignored, or win silently)."""
    config = RunConfig(suite=str(ANSWERS / "questions.jsonl"), labels=str(ANSWERS / "labels.jsonl"),
                       responses=str(ANSWERS / "responses.jsonl"), out=str(tmp_path / "one"),
                       reports=False, cluster_by="file_name", task_options={"match": "strict"})
    one = qe.evaluate(config, progress=False)
    two = qe.evaluate(ANSWERS / "questions.jsonl", labels=ANSWERS / "labels.jsonl",
                      responses=ANSWERS / "responses.jsonl", out=tmp_path / "two",
                      cluster_by="file_name", match="strict", progress=False)
    assert one.overall == two.overall and one.overall["questions"] == 8
    assert one.overall["match"] == "strict"
    assert one.batch["evaluation_config"]["cluster_by"] == "file_name"
    assert one.batch["evaluation_config"]["task_options"]["match"] == "strict"
    assert {r.cluster for r in one.results.cases} == {r.cluster for r in two.results.cases}
    with pytest.raises(ConfigError, match=r"^evaluate\(RunConfig\) takes the run's settings "
                                          r"from the config; drop concurrency, k "):
        qe.evaluate(config, concurrency=2, k=5)
