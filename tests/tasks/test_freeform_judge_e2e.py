"""The free-form task with the real judge client (issue 27): the shipped example suite through
``queryeval run --judge-*`` against the loopback fake judge. Under the default the judge is
asked about the inconclusive cases only; under ``always`` about every answered case."""

from __future__ import annotations

import json

import pytest

from helpers.freeform_judge_e2e import EXAMPLE  # noqa: E402,F401
from helpers.judge_fake import FakeJudgeServer, verdict_reply


@pytest.fixture
def fake():
    server = FakeJudgeServer()
    server.script = lambda n, body: verdict_reply("pass", "same meaning")
    yield server
    server.close()


def _run(tmp_path, fake, when: str | None) -> tuple[dict, list[dict]]:
    from queryeval.cli.app import main

    out = tmp_path / (when or "default")
    args = ["run", str(EXAMPLE / "cases.jsonl"), "--responses",
            str(EXAMPLE / "responses.jsonl"), "--out", str(out), "-q",
            "--judge-model", "m", "--judge-base-url", fake.url]
    assert main(args + (["--judge-when", when] if when else [])) == 0
    [metrics] = out.rglob("metrics_*.json")
    [results] = out.rglob("results_*.jsonl")
    return (json.loads(metrics.read_text())["overall_metrics"],
            [json.loads(line) for line in results.read_text().splitlines()])


def test_default_asks_the_judge_about_the_inconclusive_cases_only(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    # without a judge: which cases no rule decides
    from queryeval.cli.app import main

    assert main(["run", str(EXAMPLE / "cases.jsonl"), "--responses",
                 str(EXAMPLE / "responses.jsonl"), "--out", str(tmp_path / "bare"), "-q"]) == 0
    [bare] = (tmp_path / "bare").rglob("results_*.jsonl")
    bare = [json.loads(line) for line in bare.read_text().splitlines()]
    inconclusive = {r["case_id"] for r in bare if r["decided_by"] == "inconclusive"}
    passed = sum(r["passed"] for r in bare)
    assert inconclusive  # the example has a case no rule decides

    overall, records = _run(tmp_path, fake, None)
    assert len(fake.requests) == len(inconclusive)
    judged = {r["case_id"] for r in records if r["decided_by"] == "judge"}
    assert judged == inconclusive
    assert all(r["judge"]["verdict"] == "pass" and r["judge"]["reason"] == "same meaning"
               for r in records if r["case_id"] in judged)
    assert overall["judge_decided"] == len(inconclusive)
    assert overall["pass_rate"] == pytest.approx((passed + len(inconclusive)) / len(records))


def test_always_asks_about_every_answered_case(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    answered = [r for r in map(json.loads, (EXAMPLE / "responses.jsonl").read_text().splitlines())
                if (r.get("response") or "").strip()]
    overall, records = _run(tmp_path, fake, "always")
    assert len(fake.requests) == len(answered)
    assert overall["judge_decided"] == len(answered)
