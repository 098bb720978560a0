"""A loopback fake OpenAI-compatible judge for the judge tests (no external network).

By default it answers deterministically: ``pass`` when the reference (the text between the
``<reference>`` tags of the user turn) appears in the response (case-insensitive), else
``fail``; ``script(n, body)`` overrides each reply (malformed replies, 429s, slow replies).
The server itself is tests/helpers/fake_openai.py's. Imported by the other ``test_judge_*`` files
and the matrix; it holds one sanity test.
"""

from __future__ import annotations

import json

import httpx

from helpers.judge_fake import FakeJudgeServer  # noqa: E402,F401


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
