"""``--compat infiagent`` implies ``missing=skip`` (InfiAgent's rule); an explicit
``--missing wrong`` beside it was silently overridden (the run scored with skip). It is now
one line naming both options, exit 2; ``--missing skip`` beside it is accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from queryeval.cli.app import main

ANSWERS = Path(__file__).resolve().parents[2] / "examples" / "answers"


def run(tmp_path, *extra: str) -> int:
    return main(["run", str(ANSWERS / "questions.jsonl"), "--labels",
                 str(ANSWERS / "labels.jsonl"), "--responses", str(ANSWERS / "responses.jsonl"),
                 "--tables", str(ANSWERS / "tables"), "--out", str(tmp_path / "runs"),
                 "--no-report", "-q", *extra])


@pytest.mark.parametrize("args", [("--compat", "infiagent", "--missing", "wrong"),
                                  ("--option", "compat=infiagent", "--option", "missing=wrong")])
def test_missing_wrong_beside_compat_infiagent_is_refused(tmp_path, capsys, args):
    assert run(tmp_path, *args) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: task options: compat=infiagent skips missing answers, as InfiAgent does; "
        "missing=wrong contradicts it: give one of the two"]
    assert not (tmp_path / "runs").exists()


def test_missing_skip_beside_compat_infiagent_is_what_compat_alone_gives(tmp_path):
    assert run(tmp_path / "a", "--compat", "infiagent", "--missing", "skip") == 0
    assert run(tmp_path / "b", "--compat", "infiagent") == 0
    figures = []
    for sub in ("a", "b"):
        (metrics,) = (tmp_path / sub / "runs").glob("*/metrics_*.json")
        overall = json.loads(metrics.read_text())["overall_metrics"]
        figures.append({k: overall[k] for k in ("psaq", "abq", "uasq")})
    assert figures[0] == figures[1]
    # examples/answers: 8 questions, one without a response (skipped): 4 of 7 all right
    assert figures[0]["abq"] == pytest.approx(4 / 7)
