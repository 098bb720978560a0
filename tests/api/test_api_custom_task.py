"""Custom tasks: register_task, the queryeval.tasks entry-point group, and the worked example
(examples/custom_task: SQL answers scored by result-set equality with a numeric tolerance)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import ConfigError
from queryeval.registry import TASKS
from queryeval.tasks import base

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_task"


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the task registry (and entry points read afresh)."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in ("result_set", "system"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with TASKS.isolated():
        yield TASKS
    for name in ("result_set", "system"):  # the example's modules must not shadow later imports
        sys.modules.pop(name, None)


def test_example_task_with_and_without_tolerance(registry, tmp_path):
    from result_set import ResultSetTask
    from system import answer

    assert qe.register_task(ResultSetTask) is ResultSetTask
    strict = qe.evaluate(EXAMPLE / "suite.yaml", system=answer, task="result_set")
    loose = qe.evaluate(EXAMPLE / "suite.yaml", system=answer, task="result_set", rel_tol=0.01)
    # fruit-names and units-per-category match (row order differs); the average 3.7 vs 3.725
    # matches only within rel_tol 0.01; "expensive" misses kale (2 of 3 rows)
    assert strict.overall["match"] == 0.5 and loose.overall["match"] == 0.75
    assert strict.overall["row_recall"] == pytest.approx((1 + 0 + 1 + 2 / 3) / 4)
    assert loose.overall["row_recall"] == pytest.approx((1 + 1 + 1 + 2 / 3) / 4)
    assert loose.overall["row_precision"] == 1.0
    df = loose.to_pandas().set_index("id")
    assert df.loc["expensive", "row_recall"] == pytest.approx(2 / 3)
    assert loose.groups["tag"].loc["aggregate", "match"] == 1.0
    registry.remove("result_set")  # a later session that has not registered the task
    again = qe.load(loose.path)
    assert again.task is None and again.overall == loose.overall
    assert list(again.to_pandas()["match"]) == [1.0, 1.0, 1.0, 0.0]
    assert "match" in str(again)
    # the task's summary and report content, rendered by the report layer
    text = str(loose)
    assert "By tag" in text and "aggregate" in text
    (xlsx,) = [p for p in loose.report(tmp_path / "rep") if p.suffix == ".xlsx"]
    import openpyxl

    rows = list(openpyxl.load_workbook(xlsx).worksheets[0].values)
    header = list(rows[0])
    by_id = {r[header.index("case_id")]: r for r in rows[1:]}
    assert by_id["expensive"][header.index("row_recall")] == pytest.approx(2 / 3)


def test_registered_task_runs_from_the_cli(registry, tmp_path):
    from result_set import ResultSetTask

    qe.register_task(ResultSetTask)
    out = tmp_path / "out"
    assert main(["run", str(EXAMPLE / "suite.yaml"), "--task", "result_set", "--option",
                 "rel_tol=0.01", "--system", f"python:{EXAMPLE / 'system.py'}:answer",
                 "--out", str(out), "-q", "--no-report"]) == 0
    (metrics,) = out.rglob("metrics_*.json")
    assert json.loads(metrics.read_text())["overall_metrics"]["match"] == 0.75


def test_entry_point_group_finds_a_task_by_name(registry, tmp_path, monkeypatch):
    dist = tmp_path / "shop_tasks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shop-tasks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[queryeval.tasks]\nresult_set_ep = result_set:ResultSetTask\n"
        "broken = no_such_module_xyz:Task\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "result_set_ep" in base.task_names()
    task = base.get_task("result_set_ep", {"rel_tol": 0.5})
    assert type(task).__name__ == "ResultSetTask" and task.options.rel_tol == 0.5
    with pytest.raises(ConfigError, match=r"^cannot load task 'broken' from no_such_module_xyz:Task: "
                                          r"ModuleNotFoundError"):
        base.get_task("broken")


def test_registration_errors(registry):
    from result_set import ResultSetTask

    with pytest.raises(ConfigError, match="built in and cannot be replaced"):
        qe.register_task(ResultSetTask, "query")
    with pytest.raises(ConfigError, match="expects a Task subclass"):
        qe.register_task(dict)

    class Half(qe.Task):
        name = "half"

    with pytest.raises(ConfigError, match="^task 'half' does not implement: aggregate, "):
        qe.register_task(Half)
    qe.register_task(ResultSetTask)

    class Other(ResultSetTask):
        pass

    with pytest.raises(ConfigError, match="already registered"):
        qe.register_task(Other)
    assert qe.register_task(Other, replace=True) is Other
    assert base.task_class("result_set") is Other
    with pytest.raises(ConfigError, match=r"^task option rel_tol: "):
        base.get_task("result_set", {"rel_tol": -1})
