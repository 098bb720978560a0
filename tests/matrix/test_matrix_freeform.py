"""The freeform task in the cross-feature matrix (tests/helpers/matrix_checks.py): plain, repeats,
cached, resumed, with errors (score and skip), and judged runs, each checked against
hand-computed per-case ``passed`` values by every consumer (run model, pandas, metrics JSON,
results CSV, HTML, gates, viewer API) and compared two ways.

Six cases ``c<i>`` with reference ``<i>.5 km``; the bots answer in sentences that the ladder
decides by different rules (exact, unit, number) or leaves inconclusive."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

import queryeval as qe
from helpers.matrix_checks import (
    build_kind,
    built_once,
    check_compare,
    check_consumers,
    per_case_mean,
    write_lab,
)
from queryeval.cli.app import app
from queryeval.engines.judge import JudgeVerdict

N = 6
BOTS = '''
import re

def _i(request):
    return int(re.search(r"question (\\d+)\\?", str(request["question"])).group(1))

def _say(i, right):
    if not right:
        return {"response": "It is 99 km." if i % 2 == 0 else "I could not find it."}
    # c0: exact, c1: unit, c2 and c3: number, c4 and c5: unit
    form = ["{i}.5 km", "It is {i}500 m.", "It is {i}.5", "{i}.5 km long"][min(i, 3)] if i < 4 \\
        else "That is {i}500 metres."
    return {"response": form.format(i=i)}

def plain(request):             # right on c0..c3; c4 wrong (fail), c5 inconclusive
    return _say(_i(request), _i(request) < 4)

def repeated(request):          # case i right on repeats 0 .. i % 4
    return _say(_i(request), request.get("repeat", 0) <= _i(request) % 4)

def failing(request):           # c4's call fails; c5 inconclusive
    if _i(request) == 4:
        raise RuntimeError("backend down")
    return _say(_i(request), _i(request) < 4)
'''

PLAIN = {"c0": 1.0, "c1": 1.0, "c2": 1.0, "c3": 1.0, "c4": 0.0, "c5": 0.0}
REPEATED = {f"c{i}": float(Fraction(i % 4 + 1, 4)) for i in range(N)}
JUDGED = {**PLAIN, "c5": 1.0}  # the fake judge passes the inconclusive c5
EXPECTED = {
    "plain": (PLAIN, list(PLAIN)),
    "repeats": (REPEATED, list(PLAIN)),
    "cached": (PLAIN, list(PLAIN)),
    "resumed": (PLAIN, list(PLAIN)),
    "errors": (PLAIN, list(PLAIN)),
    "skip_errors": (PLAIN, ["c0", "c1", "c2", "c3", "c5"]),
    "judged": (JUDGED, list(PLAIN)),
}
KINDS = list(EXPECTED)
JUDGE = {"model": "fake-judge", "base_url": "http://127.0.0.1:9/v1"}


class PassC5:
    calls = 0

    def judge(self, item):
        PassC5.calls += 1
        return JudgeVerdict("pass" if item.case_id == "c5" else "fail", reason="fake",
                            model="fake-judge", prompt_version="p1")

    def close(self):
        pass


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix_freeform")
    return write_lab(root, BOTS, {f"c{i}": {"reference": {"answer": f"{i}.5 km"}}
                                  for i in range(N)})


def _build(kind: str, lab: Path) -> qe.Run:
    out = lab / "runs" / kind
    cases = str(lab / "cases.jsonl")
    spec = lambda fn: f"python:{lab / 'bots.py'}:{fn}"  # noqa: E731
    common = {"out": out, "reports": True, "retries": 0, "backoff": 0.0, "name": kind}
    if kind == "judged":
        mp = pytest.MonkeyPatch()
        mp.setattr("queryeval.engines.judge.make_judge", lambda options: PassC5())
        try:
            PassC5.calls = 0
            run = qe.evaluate(cases, system=spec("plain"), judge=JUDGE, **common)
        finally:
            mp.undo()
        assert PassC5.calls == 1  # only the inconclusive c5 went to the judge
        return run
    return build_kind(kind, cases, lab / "bots.py", lab / "runs", n=N)


@pytest.fixture(scope="module")
def built(lab):
    return built_once(lambda kind: _build(kind, lab))


@pytest.mark.parametrize("kind", KINDS)
def test_every_consumer(built, lab, kind):
    run, (values, counted) = built(kind), EXPECTED[kind]
    mean = check_consumers(run, "passed", values, overall="pass_rate", counted=counted,
                           viewer_root=lab / "runs" / kind)
    assert run.task_name == "freeform"
    # the console summary: the overall figure and the table by deciding rule
    text = str(run)
    assert re.search(rf"pass_rate\s*│\s*{mean:.4f}", text), text
    assert "By deciding rule" in text
    # the xlsx Overview: one row per attempt, its passed and decided_by
    ws = load_workbook(run.folder / f"report_{run.batch_id}.xlsx")["Overview"]
    head = [c.value for c in ws[1]]
    rows = [dict(zip(head, r, strict=True)) for r in ws.iter_rows(min_row=2, values_only=True)]
    assert per_case_mean([(r["case_id"], r["passed"] or 0.0) for r in rows]) == pytest.approx(values)
    assert all(r["decided_by"] for r in rows)
    if kind in ("errors", "skip_errors"):
        assert run.case_table().loc["c4", "verdict"] == "error"
    if kind == "repeats":
        assert run.metrics["repeats"]["overall"]["pass_rate"]["mean"] == pytest.approx(mean)


def test_decided_by_in_every_kind(built):
    recs = {r["case_id"]: r for r in built("plain").records}
    assert [recs[f"c{i}"]["decided_by"] for i in range(N)] == [
        "exact", "unit", "number", "number", "unit", "inconclusive"]
    assert recs["c4"]["passed"] is False and recs["c4"]["rule_verdict"] == "fail"
    judged = {r["case_id"]: r for r in built("judged").records}
    assert judged["c5"]["decided_by"] == "judge" and judged["c5"]["judge"]["reason"] == "fake"
    o = built("judged").overall
    assert (o["judge_decided"], o["inconclusive"]) == (1, 1)


def test_gates_on_the_cli_for_a_judged_run(lab, tmp_path, monkeypatch):
    """``queryeval run --fail-under pass_rate=…`` on a judged run (the judge given as the
    task option ``judge``): 5/6 = 0.8333 passes 0.83 and fails 0.84."""
    monkeypatch.setattr("queryeval.engines.judge.make_judge", lambda options: PassC5())
    args = ["run", str(lab / "cases.jsonl"), "--system", f"python:{lab / 'bots.py'}:plain",
            "--option", f"judge={json.dumps(JUDGE)}", "--out", str(tmp_path), "-q"]
    ok = CliRunner().invoke(app, [*args, "--fail-under", "pass_rate=0.83"])
    assert ok.exit_code == 0, ok.output
    low = CliRunner().invoke(app, [*args, "--fail-under", "pass_rate=0.84"])
    assert low.exit_code == 1 and "pass_rate = 0.8333 < 0.84" in str(low.exception)


def test_compare_plain_with_judged(built, tmp_path):
    check_compare(built("plain"), built("judged"), "passed", PLAIN, JUDGED, tmp_path)
