"""A --test-suite value out of range is refused in one wording by run and audit, naming the
option as the user typed it (run said "task option test_suite: Input should ...")."""

from __future__ import annotations

import pytest

from helpers.testsuite_sql import build_example
from queryeval.cli.app import main


@pytest.mark.parametrize(("value", "words"), [("5000", "less than or equal to 1000"),
                                              ("-1", "greater than or equal to 0")])
def test_run_and_audit_refuse_an_out_of_range_test_suite_alike(tmp_path, capsys, value, words):
    build_example(tmp_path)
    suite = str(tmp_path / "suite.yaml")
    lines = []
    for args in (["run", suite, "--task", "query", "--responses",
                  str(tmp_path / "predictions.jsonl"), "--out", str(tmp_path / "runs"),
                  f"--test-suite={value}"],
                 ["audit", suite, f"--test-suite={value}"]):
        assert main(args) == 2
        captured = capsys.readouterr()
        lines.append((captured.out + captured.err).strip())
    assert lines[0] == lines[1] == f"error: --test-suite: input should be {words}"
    assert not (tmp_path / "runs").exists()


def test_the_flags_bound_is_the_task_options():
    import typer.main

    from queryeval.cli.app import app
    from queryeval.tasks.query.task import QueryTask

    bound = next(m.le for m in QueryTask.Options.model_fields["test_suite"].metadata
                 if hasattr(m, "le"))
    group = typer.main.get_command(app)
    for name in ("run", "audit"):  # run's task flags are built from the model (get_params)
        command = group.commands[name]
        param = next(p for p in command.get_params(command.context_class(command))
                     if "--test-suite" in p.opts)
        assert (param.min, param.max) == (0, bound)
