"""``$QUERYEVAL_CACHE_DIR`` is the root of every queryeval cache (the judge's replies, the
test suite's neighbours, embeddings, SPARQL stores, each in its subfolder); the call cache
used the root itself, so once any other cache had written there, ``--cache`` was refused
("not a queryeval call cache (no CACHEDIR.TAG marker) and not empty"), exit 2, for good
(a newcomer's audit; the test failed on the code before its fix)."""

from __future__ import annotations

import json

import pytest

from helpers.judge_fake import FakeJudgeServer
from queryeval.cli.app import main

CASES = [("capital", "Paris", "paris."), ("reason", "a supply shortage", "it was a supply shortage")]


@pytest.fixture
def fake():
    server = FakeJudgeServer()
    yield server
    server.close()


def test_call_cache_beside_the_judges_cache(fake, tmp_path, monkeypatch, capsys):
    root = tmp_path / "qcache"
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(root))
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join(json.dumps({"id": cid, "conversation": [{
        "role": "user", "content": f"{cid}?", "target": {"reference": {"answer": ans}}}]})
        + "\n" for cid, ans, _ in CASES))
    (tmp_path / "bot.py").write_text(
        "R = " + repr({cid: resp for cid, _, resp in CASES}) + "\n"
        "def answer(req):\n    return {'response': R[req['case_id']]}\n")
    common = ["run", str(suite), "--system", f"python:{tmp_path / 'bot.py'}:answer",
              "--judge-model", "judge-test", "--judge-base-url", fake.url,
              "--out", str(tmp_path / "runs"), "--no-report", "-q"]
    assert main(common) == 0          # the judge caches its reply under $QUERYEVAL_CACHE_DIR
    assert list((root / "judge").glob("*.json"))
    capsys.readouterr()
    cached = [*common, "--cache", "--system-version", "v1"]
    for hits in (0, 2):
        code = main(cached)
        out = capsys.readouterr()
        assert code == 0, out.out + out.err
        metrics = json.loads(max((tmp_path / "runs").rglob("metrics_*.json"),
                                 key=lambda p: p.stat().st_mtime_ns).read_text())
        assert metrics["cache"]["hits"] == hits
        assert metrics["overall_metrics"]["pass_rate"] == 1.0  # exact; the judge passes reason
    assert metrics["cache"]["folder"] == str(root / "calls")
