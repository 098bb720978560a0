"""The N-way compare of runs decided with ``--stop-when-decided``: like the two-run compare,
it shows each such run's decision and anytime-valid interval (JSON ``sequential``, and a
warning on the console, in Markdown, xlsx and HTML) and names the run's baseline by its
letter when it is another compared run; runs without the option are compared as before."""

from __future__ import annotations

import json

import queryeval as qe
from helpers.run_sequential import files, seq_run  # noqa: F401 - lab is a fixture
from queryeval.cli.app import main
from queryeval.run.sequential import summary_line


def _note(seq: dict, who: str, base: str, against: str = "") -> str:
    return (f"{who} stopped when decided{against}: {summary_line(seq, f'{who} − {base}')}; "
            "the CIs and p-values below assume a fixed number of cases, the anytime-valid "
            "interval allows for the stopping")


def test_every_output_shows_each_decided_run(lab, decided, tmp_path, capsys):
    good, bad = decided["seq"]["good"], decided["seq"]["bad"]
    assert (good["decision"], bad["decision"]) == ("better", "worse")
    out = {k: tmp_path / f"c.{k}" for k in ("json", "md", "xlsx", "html")}
    assert main(["compare", str(lab["base"]), str(decided["good"]), str(decided["bad"]),
                 "--resamples", "200", "--json", str(out["json"]), "--markdown",
                 str(out["md"]), "--xlsx", str(out["xlsx"]), "--html", str(out["html"])]) == 0
    console = capsys.readouterr().out
    doc = json.loads(out["json"].read_text())
    assert doc["sequential"] == [{"run": 1, "letter": "b", **good},
                                 {"run": 2, "letter": "c", **bad}]
    want = [_note(good, "b", "a"), _note(bad, "c", "a")]
    assert [w for w in doc["warnings"] if "stopped when decided" in w] == want
    low, high = good["interval"]
    assert f"interval for b − a [{low:+.3f}, {high:+.3f}]" in want[0] and low > 0
    assert f"{good['cases_used']} of {good['cases']} cases called" in want[0]
    flat = " ".join(console.split())  # the console wraps at its width
    assert "b stopped when decided: sequential: better vs baseline on pass" in flat
    assert "c stopped when decided: sequential: worse vs baseline on pass" in flat
    from queryeval.report.markdown import md

    assert f"- warning: {md(want[0])}" in out["md"].read_text()
    from openpyxl import load_workbook

    cells = [r[0] for r in load_workbook(out["xlsx"], read_only=True)["Compare"]
             .iter_rows(values_only=True)]
    assert f"warning: {want[1]}" in cells
    assert "b stopped when decided: sequential: better" in out["html"].read_text()


def test_a_baseline_among_the_runs_is_named_by_its_letter(lab, decided, tmp_path):
    # the decided run first, its baseline second: a's baseline is b
    comp = qe.compare(decided["good"], lab["base"], decided["bad"], resamples=200)
    good, bad = decided["seq"]["good"], decided["seq"]["bad"]
    assert comp.raw.sequential == {0: good, 2: bad}
    notes = [w for w in comp.warnings if "stopped when decided" in w]
    assert notes == [_note(good, "a", "b", " (its baseline was b, not a)"),
                     _note(bad, "c", "b", " (its baseline was b, not a)")]


def test_a_baseline_not_compared_is_named_by_its_path(lab, decided):
    comp = qe.compare(decided["good"], decided["bad"], resamples=200)  # two runs
    bad = decided["seq"]["bad"]
    assert comp.raw.sequential == bad
    assert _note(bad, "B", "its baseline", f" (its baseline was {bad['baseline']}, not A)") \
        in comp.warnings
    multi = qe.compare(decided["good"], decided["bad"], lab["base"], pairs="all",
                       resamples=200)
    assert _note(decided["seq"]["good"], "a", "c", " (its baseline was c, not a)") \
        in multi.warnings


def test_runs_without_the_option_have_no_sequential_part(lab, decided, tmp_path):
    comp = qe.compare(lab["base"], lab["base"], lab["base"], resamples=200)
    assert comp.raw.sequential == {}
    doc = json.loads(comp.write(tmp_path / "n.json").read_text())
    assert "sequential" not in doc
    assert not any("stopped when decided" in w for w in comp.warnings)
