"""The LLM judge client against the loopback fake judge: request shape, verdicts, malformed
replies, 429s with Retry-After, slow replies beyond the timeout, the on-disk cache."""

from __future__ import annotations

import json

import pytest

from helpers.judge_fake import FakeJudgeServer, completion, verdict_reply
from queryeval.engines.judge import (
    JudgeItem,
    JudgeOptions,
    judge_info,
    make_judge,
    recorded_agreement,
)
from queryeval.engines.judge.client import LLMJudge
from queryeval.engines.judge.prompt import (
    ANSWER_PROMPT,
    PROMPT_VERSION,
    QUERY_PROMPT,
    VERDICT_SCHEMA,
    parse_verdict,
)
from queryeval.errors import ConfigError


@pytest.fixture
def fake():
    server = FakeJudgeServer()
    yield server
    server.close()


def _judge(fake, tmp_path, sleeps=None, **kw) -> LLMJudge:
    opts = JudgeOptions(**fake.options(tmp_path, **kw))
    return LLMJudge(opts, sleep=(sleeps.append if sleeps is not None else lambda s: None))


ITEM = JudgeItem(case_id="c1", question="Mean fare?", reference="34.65",
                 response="The mean fare is 34.65 dollars.")


def test_request_shape_and_verdict(fake, tmp_path):
    with _judge(fake, tmp_path) as j:
        v = j.judge(ITEM)
    assert (v.verdict, v.passed, v.error, v.cached) == ("pass", True, None, False)
    assert v.model == "judge-test" and v.prompt_version == PROMPT_VERSION
    [req] = fake.requests
    body = req["body"]
    assert req["path"] == "/v1/chat/completions" and "authorization" not in {
        k.lower() for k in req["headers"]}
    assert body["model"] == "judge-test" and body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    assert body["messages"][0] == {"role": "system", "content": ANSWER_PROMPT}
    assert "<response>\nThe mean fare is 34.65 dollars.\n</response>" in body["messages"][1]["content"]


def test_fail_verdict_and_query_prompt(fake, tmp_path):
    item = JudgeItem(case_id="q", question="q?", reference="SELECT 1", response="SELECT 2",
                     kind="query", context="gold failed")
    with _judge(fake, tmp_path) as j:
        v = j.judge(item)
    assert v.verdict == "fail" and not v.passed
    msgs = fake.requests[0]["body"]["messages"]
    assert msgs[0]["content"] == QUERY_PROMPT and "<evidence>\ngold failed\n</evidence>" in msgs[1]["content"]


def test_api_key_sent_from_named_variable(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("QE_JUDGE_KEY", "sk-test")
    with _judge(fake, tmp_path, api_key_env="QE_JUDGE_KEY") as j:
        j.judge(ITEM)
    assert fake.requests[0]["headers"]["Authorization"] == "Bearer sk-test"
    monkeypatch.delenv("QE_JUDGE_KEY")
    with pytest.raises(ConfigError, match="QE_JUDGE_KEY"):
        _judge(fake, tmp_path, api_key_env="QE_JUDGE_KEY")


def test_malformed_then_good_is_retried(fake, tmp_path):
    replies = [completion("sure, it passes"), completion('{"verdict": "maybe", "reason": ""}'),
               verdict_reply("pass", "same number")]
    fake.script = lambda n, body: replies[n]
    with _judge(fake, tmp_path, malformed_retries=2) as j:
        v = j.judge(ITEM)
    assert (v.verdict, v.reason, v.error) == ("pass", "same number", None)
    assert len(fake.requests) == 3


def test_always_malformed_is_judge_malformed_never_a_pass(fake, tmp_path):
    fake.script = lambda n, body: completion('{"verdict": "PASS!"}')
    with _judge(fake, tmp_path, malformed_retries=2) as j:
        v = j.judge(ITEM)
        again = j.judge(ITEM)  # nothing was cached: asked again
    assert v.verdict is None and not v.passed
    assert v.error["kind"] == "judge_malformed" and "3 replies" in v.error["message"]
    assert again.error["kind"] == "judge_malformed"
    assert len(fake.requests) == 6


def test_not_a_chat_completion_counts_as_malformed(fake, tmp_path):
    fake.script = lambda n, body: (200, {}, b'{"choices": []}') if n == 0 else verdict_reply("fail")
    with _judge(fake, tmp_path, malformed_retries=1) as j:
        v = j.judge(ITEM)
    assert v.verdict == "fail" and len(fake.requests) == 2


def test_429_honours_retry_after(fake, tmp_path):
    fake.script = lambda n, body: (429, {"Retry-After": "7"}, b"slow down") if n < 2 \
        else verdict_reply("pass")
    sleeps: list[float] = []
    with _judge(fake, tmp_path, sleeps) as j:
        v = j.judge(ITEM)
    assert v.passed and sleeps == [7.0, 7.0] and len(fake.requests) == 3


def test_call_failure_after_retries_is_judge_call(fake, tmp_path):
    fake.script = lambda n, body: (503, {}, b"down")
    sleeps: list[float] = []
    with _judge(fake, tmp_path, sleeps, max_retries=2) as j:
        v = j.judge(ITEM)
    assert v.verdict is None and v.error["kind"] == "judge_call"
    assert "HTTP 503" in v.error["message"] and len(fake.requests) == 3
    assert sleeps == [1.0, 2.0]


def test_slow_reply_beyond_timeout_is_judge_call(fake, tmp_path):
    fake.delay = 1.0
    with _judge(fake, tmp_path, timeout_s=0.2, max_retries=1) as j:
        v = j.judge(ITEM)
    assert v.error is not None and v.error["kind"] == "judge_call"
    assert v.error["message"].startswith("timeout:") and len(fake.requests) == 2


def test_cache_second_run_makes_no_calls(fake, tmp_path):
    items = [JudgeItem(case_id=str(i), question="q", reference=str(i), response=f"x {i}")
             for i in range(6)]
    with _judge(fake, tmp_path) as j:
        first = j.judge_many(items)
    assert len(fake.requests) == 6
    with _judge(fake, tmp_path) as j:
        second = j.judge_many(items)
        assert j.calls == 0
    assert len(fake.requests) == 6
    assert [v.verdict for v in second] == [v.verdict for v in first] == ["pass"] * 6
    assert all(v.cached for v in second) and not any(v.cached for v in first)
    with _judge(fake, tmp_path) as j:  # use_cache=False (repeats): asked again, nothing stored
        j.judge(items[0], use_cache=False)
    assert len(fake.requests) == 7
    with _judge(fake, tmp_path, model="other-model") as j:  # the model is part of the key
        j.judge(items[0])
    assert len(fake.requests) == 8


def test_default_cache_under_queryeval_cache_dir(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "qc"))
    opts = JudgeOptions(model="m", base_url=fake.url)
    with make_judge(opts) as j:
        j.judge(ITEM)
    [f] = (tmp_path / "qc" / "judge").glob("*.json")
    stored = json.loads(f.read_text())
    assert stored["prompt_version"] == PROMPT_VERSION and stored["model"] == "m"


def test_parse_verdict_accepts_and_rejects():
    assert parse_verdict('{"verdict": "Pass ", "reason": "ok"}') == ("pass", "ok")
    assert parse_verdict('```json\n{"verdict": "fail", "reason": "no"}\n```') == ("fail", "no")
    for bad in ("pass", "[]", '{"verdict": "pass"}', '{"verdict": true, "reason": ""}',
                '{"verdict": "passed", "reason": ""}', ""):
        with pytest.raises(ValueError):
            parse_verdict(bad)


def test_judge_info_and_no_recorded_agreement(tmp_path):
    opts = JudgeOptions(model="m", base_url="http://127.0.0.1:1/v1",
                        checks_dir=str(tmp_path / "none"))
    info = judge_info(opts)
    assert info["prompt_version"] == PROMPT_VERSION and info["prompt"] == ANSWER_PROMPT
    assert info["prompts"] == {"answer": ANSWER_PROMPT, "query": QUERY_PROMPT}
    assert (info["model"], info["when"]) == ("m", "inconclusive")
    assert recorded_agreement(opts) is None


def test_bad_base_url_is_config_error(tmp_path):
    with pytest.raises(ConfigError, match="judge base URL"):
        make_judge(JudgeOptions(model="m", base_url="localhost:8080"))


def test_concurrency_cap(fake, tmp_path):
    fake.delay = 0.05
    items = [JudgeItem(case_id=str(i), question="q", reference=str(i), response=str(i))
             for i in range(8)]
    with _judge(fake, tmp_path, concurrency=2) as j:
        out = j.judge_many(items)
    assert all(v.passed for v in out) and len(fake.requests) == 8
    assert fake.max_in_flight == 2


@pytest.mark.parametrize("form, sent", [
    ("json_object", {"type": "json_object"}), ("none", None)])
def test_response_format_for_servers_without_schemas(fake, tmp_path, form, sent):
    with _judge(fake, tmp_path, response_format=form) as j:
        assert j.judge(ITEM).passed
    assert fake.requests[0]["body"].get("response_format") == sent
