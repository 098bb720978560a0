"""Finishing a run in one pass: the parent's records are read once for its aggregate, its CSV
and every derived batch (retrieval's smaller k); each derived batch's records are read once
for its aggregate. The files are byte for byte those of the separate passes (the path a run
with repeats keeps: ``_write_tables`` then ``_write_variants``)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.run import finish as finish_mod
from queryeval.run.log import RunLog
from queryeval.run.records import RecordStream, csv_order
from queryeval.tasks.base import get_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "retrieval"


def _batches(out: Path) -> tuple[Path, list[Path]]:
    docs = {p: json.loads(p.read_text()) for p in out.rglob("batch_*.json")}
    parent = [p for p, d in docs.items() if "derived_from" not in d]
    derived = sorted(p for p, d in docs.items() if "derived_from" in d)
    assert len(parent) == 1
    return parent[0], derived


def _files(batch: Path) -> dict[str, bytes]:
    bid = batch.stem.removeprefix("batch_")
    out = {}
    for name in (f"results_{bid}.jsonl", f"results_{bid}.csv", f"metrics_{bid}.json"):
        data = (batch.parent / name).read_bytes()
        if name.startswith("metrics_"):  # the time the file was written
            data = re.sub(rb'"timestamp": "[^"]*"', b'"timestamp": "T"', data)
        out[name] = data
    return out


def _run(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "run"
    assert main(["run", str(EXAMPLES / "questions.csv"), "--responses", str(EXAMPLES / "responses.jsonl"),
                 "--out", str(out), "--no-report", "-q", *extra]) == 0
    return out


@pytest.mark.parametrize("extra", [["--k", "1,5,10"], ["--k", "1,2,3", "--min-score", "0.2"]])
def test_each_results_file_is_read_once(tmp_path, monkeypatch, extra):
    reads: dict[str, int] = {}
    original = RecordStream.__iter__

    def counting(self):
        reads[self.path.name] = reads.get(self.path.name, 0) + 1
        return original(self)

    monkeypatch.setattr(RecordStream, "__iter__", counting)
    out = _run(tmp_path, *extra)
    parent, derived = _batches(out)
    assert len(derived) == 2
    names = [p.stem.removeprefix("batch_") for p in (parent, *derived)]
    # the parent: one read (aggregate, CSV, both derived batches); each derived batch: one
    assert {n: reads.get(f"results_{n}.jsonl", 0) for n in names} == dict.fromkeys(names, 1)


@pytest.mark.parametrize("extra", [["--k", "1,5,10"], ["--k", "1,2,3", "--min-score", "0.2"]])
def test_files_equal_the_separate_passes(tmp_path, extra):
    out = _run(tmp_path, *extra)
    parent, derived = _batches(out)
    one_pass = {p.name: _files(p) for p in (parent, *derived)}
    # the same run finished again by the separate passes, in a copy of its folder
    copy = tmp_path / "copy"
    shutil.copytree(parent.parent, copy)
    log = RunLog.open(copy / parent.name)
    task = get_task(log.batch["task"], log.batch["evaluation_config"]["task_options"])
    records = log.scan_records(csv_order(log.paths.results_csv))
    finish_mod._write_tables(log, task, records)
    finish_mod._write_variants(log, task, records)
    separate = {p.name: _files(copy / p.name) for p in (parent, *derived)}
    assert separate == one_pass
    # and the derived batches hold what they should: every record scored at its own k
    for p in derived:
        k = json.loads(p.read_text())["evaluation_config"]["task_options"]["k"]
        bid = p.stem.removeprefix("batch_")
        lines = (p.parent / f"results_{bid}.jsonl").read_text().splitlines()
        assert lines and all(json.loads(line)["k"] == k[0] for line in lines)
