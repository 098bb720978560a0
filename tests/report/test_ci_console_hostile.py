"""Workflow-command injection through the console of ``queryeval run`` in GitHub Actions:
the runner reads ``::error::``, ``::add-mask::``, ``::stop-commands::`` from any line of the
step's stdout and stderr, so a run label, a case id, a case name or a failed call's message
holding a newline must never start a line. Only our own annotations (title ``queryeval
...``) may."""

from __future__ import annotations

import json
import re

from helpers.ci_lab import cli

BOT = '''
import re

def evil(request):
    i = int(re.search(r"question (\\d+)\\?", str(request)).group(1))
    if i == 1:
        raise RuntimeError("down\\n::error::PWNED-MESSAGE\\n::add-mask::x")
    return {"response": "@n[x]\\n::error::PWNED-RESPONSE\\n::stop-commands::tok"}
'''
OURS = re.compile(r"::(error|warning) title=queryeval [a-z ]+::[^\r\n]*")


def hostile_lab(root):
    (root / "bots.py").write_text(BOT, encoding="utf-8")
    with open(root / "cases.jsonl", "w", encoding="utf-8") as fh:
        for i in range(3):
            fh.write(json.dumps({
                "id": f"c{i}\n::error::PWNED-ID{i}", "name": "n\n::warning::PWNED-NAME\r::x::y",
                "conversation": [{"role": "user", "content": f"question {i}?",
                                  "target": {"answers": [{"name": "n", "value": str(i)}]}}]}) + "\n")


def test_no_untrusted_text_starts_a_line_of_the_run_console(tmp_path):
    hostile_lab(tmp_path)
    res = cli(["run", tmp_path / "cases.jsonl", "-s", f"python:{tmp_path / 'bots.py'}:evil",
               "-o", tmp_path / "out", "--retries", "0", "--backoff", "0",
               "--name", "lab\n::error::PWNED-LABEL", "--fail-under", "psaq=0.5"],
              env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "sum.md")})
    assert res.exit_code == 1  # the gate fails; the run went to the end
    assert "PWNED-LABEL" in res.stdout and "PWNED-ID1" in res.stderr  # shown, as data
    for stream in (res.stdout, res.stderr):
        for line in re.split(r"\r\n|\r|\n", stream):
            if line.lstrip().startswith("::"):
                assert OURS.fullmatch(line.strip()), line
    assert sum(1 for line in res.stdout.splitlines() if OURS.fullmatch(line)) == 2


def test_a_task_note_holding_untrusted_text_is_one_line():
    # the query task's "why tables differ" notes quote case ids and explanation messages
    from rich.console import Console

    from queryeval.report.console import render_summary
    from queryeval.tasks.content import Note

    console = Console(width=60, record=True, color_system=None)
    for item in render_summary([Note("  c1\n::error::PWNED: a\r\n::add-mask::x", "warning")], {}):
        console.print(item)
    text = console.export_text()
    assert "PWNED" in text
    assert not any(line.lstrip().startswith("::") for line in text.splitlines()), text


def test_the_step_summary_stays_small_with_megabyte_case_ids(tmp_path):
    # GitHub drops a step summary over 1 MiB: 2 MB case ids and names took it all
    big = "x" * 2_000_000
    with open(tmp_path / "cases.jsonl", "w", encoding="utf-8") as fh:
        for i in range(2):
            fh.write(json.dumps({"id": f"c{i}{big}", "name": big, "conversation": [{
                "role": "user", "content": f"question {i}?",
                "target": {"answers": [{"name": "n", "value": str(i)}]}}]}) + "\n")
    (tmp_path / "bots.py").write_text("def wrong(request):\n    return {'response': '@n[x]'}\n")
    summary = tmp_path / "sum.md"
    res = cli(["run", tmp_path / "cases.jsonl", "-s", f"python:{tmp_path / 'bots.py'}:wrong",
               "-o", tmp_path / "out", "-q", "--no-report"],
              env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert res.exit_code == 0, res.output[-2000:]
    text = summary.read_text(encoding="utf-8")
    assert len(text.encode()) < 64 * 1024
    assert text.count("| c0xxx") == 1 and text.count("| c1xxx") == 1  # both cases listed
