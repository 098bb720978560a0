"""``queryeval judge-check`` against a hostile judge endpoint: the judge's reason and the
error body of a failed call are its text, shown on the console; a newline in either must
not start a line (``::error::``, ``::add-mask::`` are GitHub Actions commands on any line of
a step's output), at any terminal width (a table too wide is printed as lines)."""

from __future__ import annotations

import json

import pytest

from helpers.ci_lab import cli
from helpers.fake_openai import FakeChatServer, completion


def hostile(n: int, body: dict) -> tuple:
    user = body["messages"][-1]["content"]
    if "question 0?" in user:  # a failed call: its body is in the error message
        return 400, {}, b"bad request\n::error::PWNED-BODY\n::add-mask::x"
    return completion(json.dumps({"verdict": "pass",
                                  "reason": "fine\n::error::PWNED-REASON\r::warning::y"}))


@pytest.mark.parametrize("columns", ["200", "30"])
def test_judge_text_never_starts_a_console_line(tmp_path, columns):
    rows = [{"id": f"q{i}\n::error::PWNED-ID", "question": f"question {i}?", "reference": "1",
             "response": "1", "label": "fail"} for i in range(3)]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    server = FakeChatServer(hostile)
    try:
        res = cli(["judge-check", labels, "--judge-model", "m", "--judge-base-url", server.url,
                   "--out", tmp_path / "check.json", "--no-record",
                   "--cache-dir", tmp_path / "c"], env={"COLUMNS": columns})
    finally:
        server.close()
    assert "PWNED-REASON" in res.stdout and "PWNED-BODY" in res.stdout  # shown, as data
    for line in (res.stdout + "\n" + res.stderr).replace("\r", "\n").splitlines():
        assert not line.lstrip().startswith("::"), line
