"""A file name holding ESC or a newline (a name is data) stays one visible line in the
CLI's error and warning lines: the error printed the newline raw (two lines), a warning
printed both raw (an ESC sequence reached the terminal)."""

from __future__ import annotations

import json
from pathlib import Path

from queryeval.cli.app import main

CASES = Path(__file__).resolve().parents[2] / "examples" / "freeform" / "cases.jsonl"
HOSTILE = "evil\x1b[31mred\nFAKE.jsonl"


def test_an_error_naming_a_hostile_file_is_one_line(tmp_path, capsys):
    path = tmp_path / HOSTILE
    path.write_text("garbage\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err
    shown = str(path).replace("\x1b", "\\x1b").replace("\n", "\\n")
    assert err.splitlines() == [f"error: {shown}:1: invalid JSON: Expecting value (column 1)"]


def test_a_warning_naming_a_hostile_file_is_one_visible_line(tmp_path, capsys):
    path = tmp_path / HOSTILE
    path.write_text(json.dumps({"id": "nobody", "response": "x"}) + "\n")
    assert main(["run", str(CASES), "--responses", str(path), "--out", str(tmp_path / "runs"),
                 "--no-report", "-q"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err
    [line] = [w for w in err.splitlines() if w.startswith("warning: ")]
    shown = str(path).replace("\x1b", "\\x1b").replace("\n", "\\n")
    assert line == (f"warning: {shown}: 0 of 1 response ids match the suite's case ids, e.g. "
                    "'nobody' in the file vs 'capital' in the suite")
