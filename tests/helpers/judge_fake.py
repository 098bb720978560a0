"""What the tests of judge fake share with other test files: ``FakeJudgeServer``, ``contains_rule``, ``values_rule``, ``verdict_reply`` (moved here from test_judge_fake.py)."""

from __future__ import annotations

import json
import re

from helpers.fake_openai import FakeChatServer, Reply, completion


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
    """The fake server (tests/helpers/fake_openai.py) answering by :func:`contains_rule` by default."""

    def __init__(self) -> None:
        super().__init__(lambda n, body: contains_rule(body))

    def options(self, tmp_path, **kw) -> dict:
        """Judge options pointing here, caches under ``tmp_path``."""
        return {"model": "judge-test", "base_url": self.url,
                "cache_dir": str(tmp_path / "judge-cache"),
                "checks_dir": str(tmp_path / "judge-checks"), **kw}
