"""Run labels, case ids and metric names on the console are one line each (audit leftovers):
``queryeval compare`` printed labels raw, so ``--name $'B\\n::error::spoof'`` put
``::error::spoof`` at the start of a console line (a GitHub Actions workflow command); the
audit table printed case ids raw. Each test failed before the fix, at the default width and
at COLUMNS=40."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from queryeval.cli.app import main

HOSTILE = "B\n::error::spoof"
SHOWN = "'B\\n::error::spoof'"
ROOT = Path(__file__).resolve().parents[2]


def _starts_a_line(text: str) -> bool:
    return re.search(r"(?m)^\s*::", text) is not None


@pytest.fixture(params=[None, "40"], ids=["default-width", "COLUMNS=40"])
def consoles(request, monkeypatch):
    """The commands' consoles built afresh, at the pipe width or at COLUMNS=40."""
    import queryeval.cli.audit as audit_cmd
    import queryeval.cli.compare as compare_cmd
    from queryeval.cli.console import _console

    if request.param:
        monkeypatch.setenv("COLUMNS", request.param)
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
    made = _console()
    monkeypatch.setattr(compare_cmd, "console", made)
    monkeypatch.setattr(audit_cmd, "console", made)
    return made


@pytest.fixture(scope="module")
def labelled_runs(tmp_path_factory, examples_dir) -> list[Path]:
    tmp = tmp_path_factory.mktemp("hostile")
    suite, responses = examples_dir / "sdmx" / "suite", examples_dir / "sdmx" / "responses.jsonl"
    out = []
    for k, name in enumerate(["A", HOSTILE, "C x ::error::wrapped \r\x1b[31m\u202eX"]):
        assert main(["run", str(suite), "--responses", str(responses), "--out",
                     str(tmp / str(k)), "--name", name, "-q"]) == 0
        out.append(next((tmp / str(k)).rglob("batch_*.json")))
    return out


def test_one_line_escapes_what_breaks_a_line():
    from queryeval.errors import one_line

    assert one_line(HOSTILE, None) == SHOWN
    assert one_line("plain label", None) == "plain label"
    assert "\n" not in one_line("a\u2028b\x85c\r\td", None)


def test_two_run_compare_prints_labels_on_one_line(labelled_runs, consoles, capsys):
    assert main(["compare", str(labelled_runs[0]), str(labelled_runs[1]), "--resamples", "200",
                 "--details"]) == 0
    out = capsys.readouterr().out
    assert not _starts_a_line(out), out
    assert f"B = {SHOWN} (" in out  # the label escaped, the line around it as it was


def test_nway_compare_prints_labels_on_one_line(labelled_runs, consoles, capsys):
    assert main(["compare", *map(str, labelled_runs), "--resamples", "200", "--details"]) == 0
    out = capsys.readouterr().out
    assert not _starts_a_line(out), out
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
    assert "::error::spoof" in out  # shown, escaped, not dropped


def test_audit_prints_case_ids_on_one_line(tmp_path, consoles, capsys):
    for name in ("suite.yaml", "predictions.jsonl"):
        shutil.copy(ROOT / "examples" / "sql" / name, tmp_path / name)
    sys.path.insert(0, str(ROOT / "examples" / "sql"))
    try:
        from build_db import build
    finally:
        sys.path.remove(str(ROOT / "examples" / "sql"))
    build(tmp_path / "shop.sqlite")
    suite = tmp_path / "suite.yaml"
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text.replace("id: cheap-by-name",
                                  "id: " + json.dumps("q\n::error::spoof"), 1), encoding="utf-8")
    assert main(["audit", str(suite)]) == 0
    out = capsys.readouterr().out
    assert not _starts_a_line(out), out
    assert "'q\\n::error::spoof'" in out


@pytest.mark.parametrize("width", [120, 40])
def test_run_console_tables_print_group_and_metric_names_on_one_line(width):
    """The run's console tables (by group, overall): a tag or metric name from a suite is
    one line, as the vertical layout at 40 columns prints it too."""
    import io

    from queryeval.cli.console import LineConsole
    from queryeval.report.console import group_table, overall_table

    buf = io.StringIO()
    con = LineConsole(file=buf, width=width, force_terminal=False)
    con.print(group_table({"t\n::error::spoof": {"pass_rate": 0.5}}, "tag", ["pass_rate"]))
    con.print(overall_table({"overall_metrics": {"m\n::warning::x": 1.0}}))
    out = buf.getvalue()
    assert not _starts_a_line(out), out
    assert "'t\\n::error::spoof'" in out and "'m\\n::warning::x'" in out
