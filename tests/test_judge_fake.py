"""A loopback fake OpenAI-compatible judge for the judge tests (no external network).

By default it answers deterministically: ``pass`` when the reference (the text between the
``<reference>`` tags of the user turn) appears in the response (case-insensitive), else
``fail``; ``script(n, body)`` overrides each reply (malformed replies, 429s, slow replies).
The server itself is tests/fake_openai.py's. Imported by the other ``test_judge_*`` files
and the matrix; it holds one sanity test.
"""

from __future__ import annotations

import json
import re

import httpx

from fake_openai import FakeChatServer, Reply, completion


def verdict_reply(verdict: str, reason: str = "fake") -> Reply:
    return completion(json.dumps({"verdict": verdict, "reason": reason}))


def _block(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return m.group(1) if m else ""


def contains_rule(body: dict) -> Reply:
    user = body["messages"][-1]["content"]
    ref, resp = _block(user, "reference"), _block(user, "response")
    ok = bool(ref) and ref.lower() in resp.lower()
    return verdict_reply("pass" if ok else "fail", f"reference {'found' if ok else 'absent'}")


def values_rule(n: int, body: dict) -> Reply:
    """pass when every reference value ("name: value" lines) is a word of the response."""
    user = body["messages"][-1]["content"]
    ref = re.search(r"<reference>\n(.*?)\n</reference>", user, re.DOTALL)[1]
    resp = re.search(r"<response>\n(.*?)\n</response>", user, re.DOTALL)[1]
    words = set(re.findall(r"\d+(?:\.\d+)?|\w+", resp.lower()))
    ok = all(line.split(": ", 1)[1].lower() in words for line in ref.splitlines())
    return verdict_reply("pass" if ok else "fail", "values found" if ok else "value missing")


class FakeJudgeServer(FakeChatServer):
    """The fake server (tests/fake_openai.py) answering by :func:`contains_rule` by default."""

    def __init__(self) -> None:
        super().__init__(lambda n, body: contains_rule(body))

    def options(self, tmp_path, **kw) -> dict:
        """Judge options pointing here, caches under ``tmp_path``."""
        return {"model": "judge-test", "base_url": self.url,
                "cache_dir": str(tmp_path / "judge-cache"),
                "checks_dir": str(tmp_path / "judge-checks"), **kw}


def test_fake_server_answers_by_containment():
    fake = FakeJudgeServer()
    try:
        msgs = [{"role": "user", "content": "<reference>\n42\n</reference>\n"
                 "<response>\nit is 42.\n</response>"}]
        r = httpx.post(fake.url + "/chat/completions", json={"messages": msgs})
        content = json.loads(r.json()["choices"][0]["message"]["content"])
        assert content["verdict"] == "pass"
    finally:
        fake.close()
