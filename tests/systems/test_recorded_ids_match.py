"""Recorded responses whose case ids match none of the suite's: one warning saying so with an
id from each side, not only N "no recorded response" errors (docs/systems.md)."""

from __future__ import annotations

import json
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sdmx"


def _shifted_responses(tmp_path) -> tuple[Path, int]:
    """The example's responses with every case id given a prefix (a different id column)."""
    rows = [json.loads(line) for line in (EXAMPLE / "responses.jsonl").read_text().splitlines()]
    for r in rows:
        r["case_id"] = "q-" + r["case_id"]
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, len(rows)


def test_no_matching_id_is_one_warning_naming_an_id_of_each_side(tmp_path, capsys):
    from queryeval.cli.app import main

    path, n = _shifted_responses(tmp_path)
    first_file_id = json.loads(path.read_text().splitlines()[0])["case_id"]
    main(["run", str(EXAMPLE / "suite"), "--responses", str(path), "--out", str(tmp_path / "o"),
          "-q", "--no-report"])
    err = " ".join(capsys.readouterr().err.split())  # whatever the terminal width
    assert f"0 of {n} response ids match the suite's case ids" in err
    assert f"e.g. {first_file_id!r} in the file vs" in err
    assert first_file_id[2:] in err  # the suite's id of the same case: its first case


def test_in_memory_reader_says_the_same(tmp_path):
    from queryeval.suite.loader import load_suite
    from queryeval.systems.recorded import RecordedSystem
    from queryeval.tasks.base import get_task

    path, n = _shifted_responses(tmp_path)
    task = get_task("indicator_selection", {})
    records = [(i + 1, json.loads(line)) for i, line in enumerate(path.read_text().splitlines())]
    system = RecordedSystem._load_in_memory(path, task, records)
    suite = load_suite(EXAMPLE / "suite")
    warnings = system.bind({c.id: task.scored_turns(c) for c in suite.cases})
    assert len(warnings) == 1
    assert f"0 of {n} response ids match" in warnings[0]
    assert repr(records[0][1]["case_id"]) in warnings[0]


def test_some_matching_ids_keep_the_count_warning(tmp_path):
    from queryeval.suite.loader import load_suite
    from queryeval.systems.recorded import RecordedSystem
    from queryeval.tasks.base import get_task

    lines = (EXAMPLE / "responses.jsonl").read_text().splitlines()
    extra = json.loads(lines[0])
    extra["case_id"] = "not-in-the-suite"
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(lines + [json.dumps(extra)]) + "\n")
    task = get_task("indicator_selection", {})
    system = RecordedSystem.load(path, task)
    suite = load_suite(EXAMPLE / "suite")
    warnings = system.bind({c.id: task.scored_turns(c) for c in suite.cases})
    assert warnings == [f"{path}: 1 response(s) for case ids not in the suite were ignored"]
