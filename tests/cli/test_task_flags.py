"""``queryeval run``'s task flags come from the tasks' options models (cli/task_flags.py):
the flags run had when they were written out by hand, each setting its option; a new flagged
field of a task is a new flag with no CLI edit; the values become task options by field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import pytest

from queryeval.cli import task_flags
from queryeval.cli.app import main
from queryeval.errors import ConfigError
from queryeval.tasks.base import Flag

SDMX = Path(__file__).resolve().parents[2] / "examples" / "sdmx"

BY_HAND = {  # the task flags cli/run.py declared one by one, and the option each set
    "--on-error": "on_error", "--match": "match", "--missing": "missing", "--compat": "compat",
    "--tables": "tables", "--export": "export", "--corpus": "corpus", "--k": "k",
    "--dataset": "dataset", "--min-score": "min_score", "--sampling": "sampling",
    "--random-seed": "random_seed", "--retriever": "retriever", "--model": "model",
    "--graph": "source", "--database": "source", "--endpoint": "source", "--rules": "rules",
    "--test-suite": "test_suite", "--data": "data", "--n": "n", "--tuning": "tuning",
    "--reformat": "reformat", "--reformat-model": "reformat.model",
    "--reformat-base-url": "reformat.base_url", "--reformat-key-env": "reformat.api_key_env",
    "--reformat-temperature": "reformat.temperature", "--judge-model": "judge.model",
    "--judge-base-url": "judge.base_url", "--judge-api-key-env": "judge.api_key_env",
    "--judge-when": "judge.when",
}


def values(**given) -> dict:
    """Flag values as the command receives them: every flag unset except ``given``."""
    out = {spec.dest: spec.default for spec in task_flags.specs().values()}
    out.update({f"task_{k}": v for k, v in given.items()})
    return out


def test_the_generated_flags_are_the_hand_written_ones():
    specs = task_flags.specs()
    assert {name: spec.target for name, spec in specs.items()} == BY_HAND
    assert [p.opts[0] for p in task_flags.click_params()] == list(specs)
    assert specs["--test-suite"].bounds == {"min": 0, "max": 1000}  # the model's ge/le
    assert specs["--reformat-base-url"].default == "https://api.openai.com/v1"
    assert "spider2" in str(specs["--compat"].base) and "infiagent" in str(specs["--compat"].base)
    assert specs["--model"].helps[0].startswith("Retrieval:") and specs["--model"].helps[1].startswith("Fields:")


def test_values_become_task_options_by_field():
    assert task_flags.task_options(values(), {}) == {}
    got = task_flags.task_options(values(k="1,5", dataset=["a", "b"], graph=[Path("g1.ttl"),
                                         Path("g2.ttl")], n=["item=5", "type=2"],
                                         tables=Path("t"), on_error="skip"), {"x": 1})
    assert got == {"x": 1, "k": "1,5", "dataset": ["a", "b"], "source": "g1.ttl,g2.ttl",
                   "n": {"item": 5, "type": 2}, "tables": "t", "on_error": "skip"}
    assert task_flags.task_options(values(n=["5"]), {}) == {"n": 5}
    with pytest.raises(ConfigError, match=r"^give one of --graph, --database or --endpoint$"):
        task_flags.task_options(values(graph=[Path("g.ttl")], database="x.db"), {})
    with pytest.raises(ConfigError, match=r"^--k 5 and --option k=10 disagree: give one$"):
        task_flags.task_options(values(k="5"), {"k": 10})
    assert task_flags.task_options(values(k="5"), {"k": 5}) == {"k": "5"}


def test_flag_groups():
    with pytest.raises(ConfigError, match=r"^the LLM judge needs --judge-model and "):
        task_flags.task_options(values(judge_model="m"), {})
    judge = task_flags.task_options(values(judge_model="m", judge_base_url="http://h/v1",
                                           judge_api_key_env=""), {"judge": {"when": "always"}})
    assert judge == {"judge": {"when": "always", "model": "m", "base_url": "http://h/v1"}}
    # --reformat switches its group on, with the nested model's defaults; '' is no key
    assert task_flags.task_options(values(reformat_model="m"), {}) == {}
    with pytest.raises(ConfigError, match=r"^--reformat needs --reformat-model$"):
        task_flags.task_options(values(reformat=True), {})
    on = task_flags.task_options(values(reformat=True, reformat_model="m",
                                        reformat_key_env=""), {})
    assert on == {"reformat": {"model": "m", "base_url": "https://api.openai.com/v1",
                               "api_key_env": None, "temperature": 0.0}}


def test_a_new_flagged_option_needs_no_cli_edit(tmp_path, monkeypatch):
    """A field with a Flag added to a built-in task's options is a flag of ``queryeval run``
    (listed in its help, its range from the field) that reaches the task's options."""
    from pydantic import Field

    from queryeval.tasks.selection.task import SelectionOptions, SelectionTask

    class Wider(SelectionOptions):
        min_overlap: Annotated[float | None, Flag("Selection: the overlap a match needs.")] = \
            Field(default=None, ge=0, le=1)

    monkeypatch.setattr(SelectionTask, "Options", Wider)
    task_flags.specs.cache_clear()
    task_flags.click_params.cache_clear()
    try:
        assert task_flags.specs()["--min-overlap"].bounds == {"min": 0, "max": 1}
        out = tmp_path / "out"
        assert main(["run", str(SDMX / "suite"), "--responses", str(SDMX / "responses.jsonl"),
                     "--min-overlap", "0.25", "--out", str(out), "-q", "--no-report"]) == 0
        (batch,) = out.rglob("batch_*.json")
        options = json.loads(batch.read_text())["evaluation_config"]["task_options"]
        assert options["min_overlap"] == 0.25
        assert main(["run", str(SDMX / "suite"), "--responses", str(SDMX / "responses.jsonl"),
                     "--min-overlap", "2", "--out", str(out), "-q"]) == 2  # the model's le=1
    finally:
        monkeypatch.undo()
        task_flags.specs.cache_clear()
        task_flags.click_params.cache_clear()
    assert "--min-overlap" not in task_flags.specs()
