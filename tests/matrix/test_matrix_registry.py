"""The registry in the cross-feature matrix: a suite format and a kind of system installed
as entry points (a temporary dist-info on ``sys.path``, as ``pip install`` leaves one), run
through the one-RunConfig path (``qe.evaluate(RunConfig)``, what ``queryeval run`` does) and
from the command line, errors scored and skipped: every consumer (run model, pandas,
metrics JSON, results CSV, HTML report, gates, viewer) gives the hand-computed per-case
values (``matrix_checks.check_consumers``)."""

from __future__ import annotations

import sys

import pytest

import queryeval as qe
from helpers.matrix_checks import check_consumers
from queryeval.registry import FORMATS, SYSTEMS, TASKS
from queryeval.run.config import RunConfig

PLUGIN = '''
"""A suite format (question<TAB>gold answer lines, .qa) and a system kind (canned:...)."""
from pathlib import Path

from queryeval.suite.common import Suite, hash_files
from queryeval.suite.loader import SuiteFormat
from queryeval.suite.models import Case
from queryeval.systems.base import System


def load(path, *, labels, corpus):
    cases = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        question, gold = line.split("\\t")
        cases.append(Case.model_validate({"id": f"q{i}", "conversation": [
            {"role": "user", "content": question, "target": {"reference": {"answer": gold}}}]}))
    return Suite(cases=cases, sources=[Path(path)], hash=hash_files([Path(path)]),
                 origin={c.id: (str(path), n) for n, c in enumerate(cases, 1)})


QA = SuiteFormat("qa", "question<TAB>answer lines", load, suffixes=(".qa",))
ANSWERS = {"What is 2+2?": "4", "Capital of France?": "Lyon", "Largest planet?": "Jupiter"}


class Canned(System):
    name = "canned"

    def call(self, request, timeout):
        question = request["messages"][-1]["content"]
        if question not in ANSWERS:
            raise RuntimeError("no canned answer")
        return {"response": ANSWERS[question]}


def build(spec, *, isolate, concurrency):
    return Canned()
'''
QUESTIONS = [("What is 2+2?", "4"), ("Capital of France?", "Paris"),
             ("Largest planet?", "Jupiter"), ("please fail", "x")]
PASSED = {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 0.0}  # q4: the call fails (scored 0)
EXPECTED = {"plain": list(PASSED), "skip_errors": ["q1", "q2", "q3"]}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("registry_lab")
    (root / "qa_plugin.py").write_text(PLUGIN, encoding="utf-8")
    dist = root / "qa_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: qa-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[queryeval.formats]\nqa = qa_plugin:QA\n"
                                           "[queryeval.systems]\ncanned = qa_plugin:build\n")
    (root / "suite.qa").write_text("".join(f"{q}\t{a}\n" for q, a in QUESTIONS))
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(root))
    with TASKS.isolated(), FORMATS.isolated(), SYSTEMS.isolated():
        yield root
    mp.undo()
    sys.modules.pop("qa_plugin", None)


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_plugin_format_and_system_reach_every_consumer(lab, kind):
    options = {"on_error": "skip"} if kind == "skip_errors" else {}
    config = RunConfig(suite=str(lab / "suite.qa"), system="canned:v1", out=str(lab / kind),
                       retries=0, backoff=0.0, name=kind, task_options=options)
    run = qe.evaluate(config, progress=False)
    assert run.task_name == "freeform" and run.overall["errors"] == 1
    mean = check_consumers(run, "passed", PASSED, overall="pass_rate", counted=EXPECTED[kind],
                           viewer_root=lab / kind)
    assert mean == pytest.approx(2 / 4 if kind == "plain" else 2 / 3)


def test_the_command_line_gives_the_same_run(lab):
    from queryeval.cli.app import main

    out = lab / "cli"
    assert main(["run", str(lab / "suite.qa"), "--system", "canned:v1", "--out", str(out),
                 "--retries", "0", "--on-error", "skip", "-q"]) == 0
    run = qe.load(next(out.rglob("batch_*.json")))
    check_consumers(run, "passed", PASSED, overall="pass_rate", counted=EXPECTED["skip_errors"])
