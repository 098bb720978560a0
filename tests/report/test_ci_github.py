"""GitHub Actions: the step summary (read back by markdown-it, a CommonMark/GFM parser), the
workflow commands (decoded by GitHub's escaping rules) and examples/ci/github-workflow.yml
(valid YAML whose queryeval commands and options exist)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from helpers.ci_lab import FAILING, NAMES, REPEATED, REPEATED_RATE, cli, make_lab, run_cli
from queryeval.report.github import command, escape_data, escape_property

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return make_lab(tmp_path_factory.mktemp("gh"))


def tables(markdown: str) -> list[list[list[str]]]:
    """Every GFM table as rows of cell texts, as a Markdown renderer reads them."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    out, row, cell = [], None, None
    for t in tokens:
        if t.type == "table_open":
            out.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            cell = ""
        elif t.type == "inline" and cell is not None:
            cell = "".join(c.content for c in t.children if c.type in ("text", "code_inline"))
        elif t.type in ("th_close", "td_close"):
            row.append(cell)
            cell = None
        elif t.type == "tr_close":
            out[-1].append(row)
    return out


def decode(line: str) -> tuple[str, dict, str]:
    """A workflow command as the runner parses it: ``::level props::message``."""
    m = re.fullmatch(r"::(\w+)(?: ([^:]*))?::(.*)", line)
    assert m, line

    def unescape(s: str, prop: bool) -> str:
        if prop:
            s = s.replace("%3A", ":").replace("%2C", ",")
        return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")

    props = dict(p.split("=", 1) for p in (m[2] or "").split(",") if p)
    return m[1], {k: unescape(v, True) for k, v in props.items()}, unescape(m[3], False)


def test_escaping_follows_githubs_rules():
    assert escape_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert escape_property("x: y, z%\n") == "x%3A y%2C z%25%0A"
    line = command("error", "50% of\ncases", title="gate: a,b")
    assert line == "::error title=gate%3A a%2Cb::50%25 of%0Acases"
    assert decode(line) == ("error", {"title": "gate: a,b"}, "50% of\ncases")
    # '::' in a value cannot end the properties early
    assert "::" not in escape_property("a::b")


@given(st.text(), st.text(min_size=1))
def test_any_text_survives_a_workflow_command(message, title):
    line = command("warning", message, title=title)
    assert "\n" not in line and "\r" not in line
    assert decode(line) == ("warning", {"title": title}, message)


def test_run_step_summary_and_annotations(lab, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    res, _ = run_cli(lab, "failing", tmp_path / "runs", "--fail-under", "psaq=0.9",
                     "--fail-under", "abq=0.5", env=env)
    assert res.exit_code == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended
    metrics, gates, cases = tables(text)
    assert ["psaq", "0.6667"] in metrics and ["errors", "1"] in metrics
    assert gates[1:] == [["psaq", "0.6667", "0.9", "FAIL"], ["abq", "0.6667", "0.5", "pass"]]
    got = {r[0]: r[2] for r in cases[1:]}
    assert got == {c: v for c, v in FAILING.items() if v != "pass"}
    row = next(r for r in cases[1:] if r[0] == "c4")
    assert row[4] == "call failed: RuntimeError: backend down: 100% <gone> second line"
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("::")]
    decoded = [decode(ln) for ln in lines]
    assert decoded == [("error", {"title": "queryeval quality gate"},
                        "psaq = 0.6667 < 0.9"),
                       ("warning", {"title": "queryeval run"}, "1 of 6 calls failed")]
    # off outside Actions, and with --no-github
    res, _ = run_cli(lab, "failing", tmp_path / "r2", "--fail-under", "psaq=0.9")
    assert "::error" not in res.stdout
    res, _ = run_cli(lab, "failing", tmp_path / "r3", "--fail-under", "psaq=0.9",
                     "--no-github", env={"GITHUB_ACTIONS": "true"})
    assert "::error" not in res.stdout


def test_step_summary_escapes_case_names(lab, tmp_path):
    summary = tmp_path / "s.md"
    res, _ = run_cli(lab, "wrong", tmp_path / "runs", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert res.exit_code == 0, res.output
    *_, cases = tables(summary.read_text())
    names = {r[0]: r[1] for r in cases[1:]}
    assert names["c1"] == NAMES[1]  # one cell, shown as written: no markup, no HTML
    assert "<name>" not in summary.read_text()


def test_repeats_summary_has_verdicts_and_pass_rates(lab, tmp_path):
    summary = tmp_path / "s.md"
    res, _ = run_cli(lab, "repeated", tmp_path / "runs", "--repeats", "4",
                     env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert res.exit_code == 0, res.output
    *_, cases = tables(summary.read_text())
    assert {r[0]: r[2] for r in cases[1:]} == {c: v for c, v in REPEATED.items() if v != "pass"}
    assert {r[0]: float(r[3]) for r in cases[1:]} == {
        c: v for c, v in REPEATED_RATE.items() if c != "c3"}


def test_compare_summary_and_regression_annotation(lab, tmp_path):
    root = make_lab(tmp_path / "ten", n=10)
    a = run_cli(root, "right", root / "a")[1]
    b = run_cli(root, "wrong", root / "b")[1]
    summary = tmp_path / "s.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    res = cli(["compare", a, b, "-q", "--resamples", "2000", "--fail-on-regression"], env=env)
    assert res.exit_code == 1
    text = summary.read_text()
    assert "worse on 2: proportion\\_correct, all\\_correct" in text
    (table,) = tables(text)
    row = next(r for r in table if r[0] == "all_correct")
    assert row[1:5] == ["10", "1.0000", "0.0000", "-1.0000"] and row[7].endswith("regression")
    errors = [decode(ln) for ln in res.stdout.splitlines() if ln.startswith("::error")]
    assert [e[2].split(":")[0] for e in errors] == ["proportion_correct", "all_correct"]
    assert errors[1][2].startswith("all_correct: wrong is significantly worse than right "
                                   "(B - A = -1.0000, Holm p = 0.0020")
    # without --fail-on-regression a regression is a warning
    res = cli(["compare", a, b, "-q", "--resamples", "2000"], env=env)
    assert res.exit_code == 0
    assert any(ln.startswith("::warning title=queryeval regression::all_correct")
               for ln in res.stdout.splitlines())


def _queryeval_commands(script: str) -> list[list[str]]:
    joined = script.replace("\\\n", " ")
    return [shlex.split(line.strip())[1:] for line in joined.splitlines()
            if line.strip().startswith("queryeval ")]


def test_example_workflow_parses_and_its_commands_exist():
    import typer.main

    from queryeval.cli.app import app

    doc = yaml.safe_load((REPO / "examples" / "ci" / "github-workflow.yml").read_text())
    assert doc[True] if True in doc else doc["on"]  # YAML 1.1 reads `on:` as True
    group = typer.main.get_command(app)
    calls = [c for job in doc["jobs"].values() for step in job["steps"] if "run" in step
             for c in _queryeval_commands(step["run"])]
    assert {c[0] for c in calls} >= {"run", "compare"}
    for args in calls:
        cmd = group.commands[args[0]]
        opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for token in args[1:]:
            if token.startswith("-"):
                assert token.split("=")[0] in opts, f"queryeval {args[0]}: no option {token}"
