"""A judge-check whose judge decides no case measures nothing: it must not record an
"agreement on 0 labelled cases" (overwriting the check recorded before for that model and
prompt version, so that later runs say "Measured agreement on 0 labelled case(s)" instead of
warning that it is unmeasured), and the command exits 3 like a run whose calls all failed
(a newcomer's audit; each test failed on the code before its fix)."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from helpers.judge_fake import FakeJudgeServer
from queryeval.cli.app import main
from queryeval.engines.judge import JudgeOptions, recorded_agreement

DOWN = (400, {"Content-Type": "application/json"}, b'{"error": "model not loaded"}')


@pytest.fixture
def fake():
    server = FakeJudgeServer()  # pass iff the reference is in the response
    yield server
    server.close()


def _labels(tmp_path):
    rows = [{"id": f"q{i}", "question": f"question {i}?", "reference": f"v{i}",
             "response": f"it is v{i}" if i % 2 else "no idea",
             "label": "pass" if i < 3 else "fail"} for i in range(4)]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_check_that_decided_nothing_keeps_the_recorded_one(fake, tmp_path):
    path = _labels(tmp_path)
    good = qe.judge_agreement(path, fake.options(tmp_path))
    # judge q1, q3 pass; q0, q2 fail; people pass q0-q2: tp 1 (q1), fn 2, fp 1 (q3), tn 0
    assert good.n == 4 and good.figures["confusion"] == [[0, 1], [2, 1]]
    fake.script = lambda n, body: DOWN
    opts = fake.options(tmp_path, cache_dir=str(tmp_path / "cold"))
    bad = qe.judge_agreement(path, opts)
    assert bad.n == 0 and len(bad.undecided) == 4 and bad.recorded is None
    found = recorded_agreement(JudgeOptions(**opts))
    assert found["n"] == 4 and found["confusion"] == [[0, 1], [2, 1]]


def test_cli_exits_3_and_records_nothing_when_the_judge_decided_no_case(fake, tmp_path,
                                                                        capsys):
    path = _labels(tmp_path)
    fake.script = lambda n, body: DOWN
    out = tmp_path / "check.json"
    code = main(["judge-check", str(path), "--judge-model", "judge-test",
                 "--judge-base-url", fake.url, "--out", str(out),
                 "--checks-dir", str(tmp_path / "checks"), "--cache-dir", str(tmp_path / "c")])
    got = capsys.readouterr()
    assert code == 3, got.out + got.err
    assert "Traceback" not in got.out + got.err
    last = got.err.strip().splitlines()[-1]
    assert last.startswith("error: the judge decided none of the 4 labelled case(s)")
    assert "judge_call" in last and "nothing recorded" in last
    assert not (tmp_path / "checks").exists() or not list((tmp_path / "checks").glob("*.json"))
    assert json.loads(out.read_text())["n"] == 0  # the report is still written
    # a run with that judge still warns that its agreement is unmeasured
    assert recorded_agreement(JudgeOptions(model="judge-test", base_url=fake.url,
                                           checks_dir=str(tmp_path / "checks"))) is None
