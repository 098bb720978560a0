"""A narrow terminal (COLUMNS=40) never cuts what the CLI shows: every number of a run's
metrics appears whole in the console summary (a table too wide becomes a vertical list), and
every option name of every command appears whole in its ``--help``. The real command runs in
a subprocess with COLUMNS fixed, so no test depends on the terminal it runs in."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, columns: int = 40) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    code = "import sys\nfrom queryeval.cli.app import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=300, check=False, env=env, cwd=REPO)


def shown(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def whole(token: str, text: str) -> bool:
    """``token`` appears in ``text`` not as part of a longer number or name."""
    return re.search(rf"(?<![\w.@-]){re.escape(token)}(?![\w.@-]|…)", text) is not None


RUNS = {
    "sdmx": (["examples/sdmx/suite", "--responses", "examples/sdmx/responses.jsonl"],
             "dimension", ["macro_precision", "mean_recall", "COUNTRY", "INDICATOR"]),
    "answers": (["examples/answers/questions.jsonl", "--labels", "examples/answers/labels.jsonl",
                 "--responses", "examples/answers/responses.jsonl", "--tables",
                 "examples/answers/tables"], "concept_group", ["psaq", "uasq"]),
    "retrieval": (["examples/retrieval/questions.csv", "--corpus",
                   "examples/retrieval/corpus.jsonl", "--k", "1,5,10"], "dataset",
                  ["recall@1", "recall@10", "avg_score_incorrect"]),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_run_summary_shows_every_number_whole_at_40_columns(name: str, tmp_path: Path):
    args, group, names = RUNS[name]
    proc = cli("run", *args, "--out", str(tmp_path), "--no-report")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    folder = re.search(r"^run log: (.+)$", out, re.M).group(1)
    log = re.search(r"^  (metrics_[\w-]+\.json)$", out, re.M).group(1)
    metrics = json.loads((Path(folder) / log).read_text())
    assert "…" not in out
    for token in names:
        assert whole(token, out), token
    # every figure the summary names is shown whole, next to its name
    checked = 0
    for key, value in metrics["overall_metrics"].items():
        row = re.search(rf"^(?:│ |\s*)({re.escape(key)})(?:\s+│\s+|: )(\S+)", out, re.M)
        if isinstance(value, (int, float)) and row:
            assert row.group(2) == shown(value), (key, row.group(2), value)
            checked += 1
    by = out[out.index("\nBy "):]  # the group figures' section
    for group_name, figures in metrics["group_metrics"].get(group, {}).items():
        assert whole(group_name, by), group_name
        for key, value in figures.items():
            if isinstance(value, (int, float)) and whole(key, by):
                assert whole(shown(value), by), (group_name, key, value)
                checked += 1
    assert checked >= 10
    if name == "sdmx":  # the audit saw "0.83…", "0.8…" in "By dimension"
        assert "    mean_precision: 0.8333" in out.splitlines()


def test_wide_terminal_keeps_the_table(tmp_path: Path):
    """At 200 columns the group figures stay a table (the vertical list is only a fallback)."""
    proc = cli("run", "examples/sdmx/suite", "--responses", "examples/sdmx/responses.jsonl",
               "--out", str(tmp_path), "--no-report", columns=200)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"│ COUNTRY\s+│\s+24 │\s+0 │\s+0\.8333 │\s+0\.8333 │", proc.stdout)
    assert "• dimension: COUNTRY" not in proc.stdout


def test_vertical_list_at_40_columns_pairs_headers_with_values(tmp_path: Path):
    proc = cli("run", "examples/sdmx/suite", "--responses", "examples/sdmx/responses.jsonl",
               "--out", str(tmp_path), "--no-report")
    lines = proc.stdout.splitlines()
    i = lines.index("• dimension: FREQ")
    assert lines[i + 1:i + 5] == ["    in_target: 2", "    not_in_target: 1",
                                  "    mean_precision: 0.6667", "    mean_recall: 1.0000"]


def _commands():
    import typer.main

    from queryeval.cli.app import app

    group = typer.main.get_command(app)
    out = {None: [o for p in group.params for o in (*p.opts, *p.secondary_opts)]}
    for name, cmd in group.commands.items():
        out[name] = [o for p in cmd.params if p.param_type_name == "option"
                     for o in (*p.opts, *p.secondary_opts)]
    return out


COMMANDS = _commands()


@pytest.mark.parametrize("command", list(COMMANDS), ids=lambda c: c or "queryeval")
def test_help_shows_every_option_name_whole_at_40_columns(command: str | None):
    proc = cli(*([command] if command else []), "--help")
    assert proc.returncode == 0, proc.stderr
    assert COMMANDS[command], command
    cut = [opt for opt in COMMANDS[command] if not whole(opt, proc.stdout)]
    assert cut == [], cut
