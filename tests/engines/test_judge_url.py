"""A password in the judge's base URL (``http://user:secret@host/v1``) was written to the run
log (``evaluation_config.judge``), the HTML report and the recorded judge-check; like a
database URL with a password (docs/execution.md), it is now refused before anything is
written, pointing at ``--judge-api-key-env`` (a newcomer's audit; each test failed on the
code before its fix)."""

from __future__ import annotations

import json

import pytest

from queryeval.cli.app import main

URL = "http://user:s3cr3t@127.0.0.1:9/v1"


def _main(capsys, *args) -> tuple[int, list[str]]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, (out.out + out.err).strip().splitlines()


@pytest.mark.parametrize("how", ["flags", "option"])
def test_run_refuses_a_judge_url_with_a_password(capsys, tmp_path, how):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "r", "conversation": [{"role": "user", "content": "Why?",
                     "target": {"reference": {"answer": "a supply shortage"}}}]}) + "\n")
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "r", "response": "parts were short"}) + "\n")
    judge = (["--judge-model", "m", "--judge-base-url", URL] if how == "flags" else
             ["--option", "judge=" + json.dumps({"model": "m", "base_url": URL})])
    code, lines = _main(capsys, "run", cases, "--responses", responses, *judge,
                        "--out", tmp_path / "runs", "-q")
    assert code == 2 and len(lines) == 1, lines
    assert "password" in lines[0] and "--judge-api-key-env" in lines[0]
    assert "s3cr3t" not in lines[0]
    assert not (tmp_path / "runs").exists() or not any(
        "s3cr3t" in p.read_text(errors="replace") for p in (tmp_path / "runs").rglob("*") if p.is_file())


def test_judge_check_refuses_a_judge_url_with_a_password(capsys, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "a", "question": "q", "reference": "r",
                                  "response": "r", "label": "pass"}) + "\n")
    code, lines = _main(capsys, "judge-check", labels, "--judge-model", "m", "--judge-base-url",
                        URL, "--out", tmp_path / "check.json", "--checks-dir", tmp_path / "checks")
    assert code == 2 and len(lines) == 1 and "password" in lines[0], lines
    assert not (tmp_path / "checks").exists() and not (tmp_path / "check.json").exists()
