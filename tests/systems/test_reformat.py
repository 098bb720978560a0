"""The reformat step against a fake OpenAI-compatible server on loopback (no external network)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from helpers.fake_openai import FakeChatServer, completion
from queryeval.errors import ConfigError
from queryeval.systems.reformat import (
    ReformatConfig,
    ReformatItem,
    Reformatter,
    build_messages,
    cache_key,
    reformat_all,
)


class FakeServer(FakeChatServer):
    """The fake server (tests/helpers/fake_openai.py), by default answering a fixed reformatted text."""

    def __init__(self) -> None:
        super().__init__(lambda n, body: completion("@mean_fare[34.65]"))


@pytest.fixture
def server() -> Iterator[FakeServer]:
    s = FakeServer()
    yield s
    s.close()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def _config(server: FakeServer, tmp_path, **kw) -> ReformatConfig:
    base = dict(base_url=server.url, model="gpt-test", api_key_env="QE_TEST_KEY",
                temperature=0.0, cache_dir=tmp_path / "cache", max_retries=3)
    base.update(kw)
    return ReformatConfig(**base)


ITEM = ReformatItem(id="0", question="Calculate the mean fare.",
                    format="@mean_fare[mean_fare_value] rounded to two decimals.",
                    response="The mean fare is about 34.65 dollars.")


def test_request_shape_and_reply(server, tmp_path, monkeypatch, sleeps):
    monkeypatch.setenv("QE_TEST_KEY", "sk-secret")
    with Reformatter(_config(server, tmp_path, temperature=0.2), sleep=sleeps.append) as r:
        res = r.reformat(ITEM)
    assert res.ok and res.text == "@mean_fare[34.65]" and res.attempts == 1 and not res.cached
    [req] = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-secret"
    body = req["body"]
    assert body["model"] == "gpt-test" and body["temperature"] == 0.2
    assert body["max_tokens"] == 2048
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[0]["content"] == ITEM.question and msgs[1]["content"] == ITEM.response
    assert ITEM.format in msgs[2]["content"] and "@answer_name[answer]" in msgs[2]["content"]
    assert msgs == build_messages(ITEM.question, ITEM.response, ITEM.format)
    assert sleeps == []


def test_cache_second_run_makes_no_requests(server, tmp_path, monkeypatch):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    items = [ReformatItem(id=str(i), question=f"q{i}", format="@a[v]", response=f"r{i}")
             for i in range(5)]
    server.script = lambda n, body: completion(f"@a[{body['messages'][0]['content']}]")
    first = reformat_all(_config(server, tmp_path), items)
    assert [x.text for x in first] == [f"@a[q{i}]" for i in range(5)]
    assert len(server.requests) == 5
    files = sorted((tmp_path / "cache").glob("*.json"))
    assert len(files) == 5
    key = cache_key("gpt-test", build_messages("q0", "r0", "@a[v]"), 0.0)
    assert json.loads((tmp_path / "cache" / f"{key}.json").read_text())["content"] == "@a[q0]"
    assert not list((tmp_path / "cache").glob(".tmp-*"))

    second = reformat_all(_config(server, tmp_path), items)
    assert len(server.requests) == 5  # zero new requests
    assert [x.text for x in second] == [x.text for x in first]
    assert all(x.cached and x.attempts == 0 for x in second)
    # another temperature (or model) is another key: a call again
    reformat_all(_config(server, tmp_path, temperature=0.7), items[:1])
    assert len(server.requests) == 6


def test_500_then_success_is_retried(server, tmp_path, monkeypatch, sleeps):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    server.script = lambda n, body: (
        (500, {}, b"boom") if n < 2 else completion("@mean_fare[34.65]")
    )
    with Reformatter(_config(server, tmp_path, backoff_base_s=0.5), sleep=sleeps.append) as r:
        res = r.reformat(ITEM)
    assert res.ok and res.text == "@mean_fare[34.65]" and res.attempts == 3
    assert sleeps == [0.5, 1.0]  # exponential backoff
    assert len(server.requests) == 3


def test_429_honours_retry_after(server, tmp_path, monkeypatch, sleeps):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    server.script = lambda n, body: (
        (429, {"Retry-After": "7"}, b"slow down") if n == 0 else completion("@a[1]")
    )
    with Reformatter(_config(server, tmp_path), sleep=sleeps.append) as r:
        assert r.reformat(ITEM).text == "@a[1]"
    assert sleeps == [7.0]


def test_permanent_400_recorded_not_retried_not_cached(server, tmp_path, monkeypatch, sleeps):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    bad = ReformatItem(id="bad", question="bad", format="@a[v]", response="x")
    server.script = lambda n, body: (
        (400, {}, b'{"error": "context too long"}') if body["messages"][0]["content"] == "bad"
        else completion("@a[1]")
    )
    with Reformatter(_config(server, tmp_path), sleep=sleeps.append) as r:
        results = r.reformat_many([ITEM, bad])
    assert [x.id for x in results] == ["0", "bad"]
    assert results[0].text == "@a[1]"
    err = results[1].error
    assert results[1].text is None and err["kind"] == "http_status"
    assert "HTTP 400" in err["message"] and "context too long" in err["message"]
    assert results[1].attempts == 1 and sleeps == []
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1  # failures are not cached


def test_retries_exhausted_on_5xx(server, tmp_path, monkeypatch, sleeps):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    server.script = lambda n, body: (503, {}, b"down")
    with Reformatter(_config(server, tmp_path, max_retries=2), sleep=sleeps.append) as r:
        res = r.reformat(ITEM)
    assert res.error["kind"] == "http_status" and "HTTP 503" in res.error["message"]
    assert res.attempts == 3 and len(server.requests) == 3 and sleeps == [1.0, 2.0]


def test_connection_refused_is_retried_then_recorded(tmp_path, sleeps):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = ReformatConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env=None,
                         cache_dir=tmp_path / "c", max_retries=2)
    with Reformatter(cfg, sleep=sleeps.append) as r:
        res = r.reformat(ITEM)
    assert res.error["kind"] == "connection" and res.attempts == 3 and len(sleeps) == 2


def test_malformed_reply_recorded(server, tmp_path, monkeypatch, sleeps):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    server.script = lambda n, body: (200, {}, b'{"choices": []}')
    with Reformatter(_config(server, tmp_path), sleep=sleeps.append) as r:
        res = r.reformat(ITEM)
    assert res.error["kind"] == "malformed" and res.attempts == 1


def test_missing_response_is_not_sent(server, tmp_path, monkeypatch):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    items = [ReformatItem(id="a", question="q", format="f", response=None),
             ReformatItem(id="b", question="q", format="f", response="")]
    res = reformat_all(_config(server, tmp_path), items)
    assert [(x.text, x.error, x.attempts) for x in res] == [(None, None, 0), (None, None, 0)]
    assert server.requests == []


def test_concurrency_limit(server, tmp_path, monkeypatch):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    server.delay = 0.05
    items = [ReformatItem(id=str(i), question=f"q{i}", format="f", response="r")
             for i in range(8)]
    res = reformat_all(_config(server, tmp_path, concurrency=2, cache_dir=None), items)
    assert all(x.ok for x in res) and len(server.requests) == 8
    assert server.max_in_flight == 2


def test_config_errors(server, tmp_path, monkeypatch):
    monkeypatch.delenv("QE_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="QE_TEST_KEY"):
        Reformatter(_config(server, tmp_path))
    with pytest.raises(ConfigError, match="concurrency"):
        _config(server, tmp_path, concurrency=0)
    with pytest.raises(ConfigError, match="http"):
        _config(server, tmp_path, base_url="localhost:8000")


def test_no_key_env_sends_no_authorization(server, tmp_path):
    cfg = _config(server, tmp_path, api_key_env=None, max_tokens=None)
    assert reformat_all(cfg, [ITEM])[0].ok
    [req] = server.requests
    assert "Authorization" not in req["headers"] and "max_tokens" not in req["body"]


def test_corrupt_cache_file_is_a_miss(server, tmp_path, monkeypatch):
    monkeypatch.setenv("QE_TEST_KEY", "k")
    cfg = _config(server, tmp_path)
    key = cache_key(cfg.model, build_messages(ITEM.question, ITEM.response, ITEM.format), 0.0)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"{key}.json").write_text("{truncated")
    res = reformat_all(cfg, [ITEM])
    assert res[0].ok and not res[0].cached and len(server.requests) == 1
    assert reformat_all(cfg, [ITEM])[0].cached  # rewritten by the good reply
