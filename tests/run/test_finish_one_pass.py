"""Finishing a run in one pass: the parent's records are read once for its aggregate, its CSV
and every derived batch (retrieval's smaller k: its records and CSV); each derived batch's
records are read once, for its aggregate. The files are byte for byte those of the separate passes (the path a run
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

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "retrieval"


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


def _run(tmp_path: Path, *extra: str, multi: bool = False) -> Path:
    out = tmp_path / "run"
    files = ([str(EXAMPLES / "multi_questions.csv"), "--responses", str(EXAMPLES / "multi_responses.jsonl"),
              "--corpus", str(EXAMPLES / "corpus.jsonl")] if multi else
             [str(EXAMPLES / "questions.csv"), "--responses", str(EXAMPLES / "responses.jsonl")])
    assert main(["run", *files, "--out", str(out), "--no-report", "-q", *extra]) == 0
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
    # the parent: one read (aggregate, CSV, both derived batches' records, CSV and
    # aggregate, fed record by record); each derived batch: none (written, never read back)
    assert {n: reads.get(f"results_{n}.jsonl", 0) for n in names} == {
        names[0]: 1, names[1]: 0, names[2]: 0}


@pytest.mark.parametrize(("extra", "multi"), [
    (["--k", "1,5,10"], False), (["--k", "1,2,3", "--min-score", "0.2"], False),
    (["--k", "1,3,5"], True),  # several relevant chunks a question: the ranking engine's figures
])
def test_files_equal_the_separate_passes(tmp_path, extra, multi):
    out = _run(tmp_path, *extra, multi=multi)
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


def _tally_oracle(records):
    """The error tally's rule written out plainly: every call of a record (one per turn, or
    the record's own), a failed one when its error is a dict (a judge_* kind counts as a
    failed judge call), plus one judge call per judge / answer_judge dict."""
    calls = failed = judge_calls = judge_failed = 0
    kinds: dict[str, int] = {}
    for r in records:
        turns = r.get("turns")
        errors = [t.get("error") for t in turns] if isinstance(turns, list) else [r.get("error")]
        calls += len(errors)
        for e in errors:
            if isinstance(e, dict) and not str(e.get("kind", "")).startswith("judge_"):
                failed += 1
                kinds[str(e.get("kind", "error"))] = kinds.get(str(e.get("kind", "error")), 0) + 1
        for key in ("judge", "answer_judge"):
            j = r.get(key)
            if isinstance(j, dict):
                judge_calls += 1
                if isinstance(j.get("error"), dict):
                    judge_failed += 1
                    kind = str(j["error"].get("kind", "error"))
                    kinds[kind] = kinds.get(kind, 0) + 1
    return calls, failed, judge_calls, judge_failed, kinds


def test_error_tally_counts_as_the_rule_says():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from queryeval.run.finish import ErrorTally

    error = st.none() | st.just("text") | st.builds(
        lambda k, m: {"kind": k, "message": m}, st.sampled_from(["timeout", "http", "judge_http"]), st.text(max_size=3))
    judged = st.none() | st.just(3) | st.builds(lambda e: {"error": e}, error)
    record = st.builds(
        lambda cid, err, turns, judge, answer: {k: v for k, v in {
            "case_id": cid, "error": err, "turns": turns, "judge": judge, "answer_judge": answer}.items()
            if v is not None or k == "case_id"},
        st.text(max_size=3), error, st.none() | st.lists(st.builds(lambda e: {"error": e}, error), max_size=3),
        judged, judged)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(record, max_size=6))
    def check(records):
        tally = ErrorTally()
        for r in records:
            assert tally.add(r) is r
        counts = {e["kind"]: e["count"] for e in tally.summary()}
        assert (tally.calls, tally.failed, tally.judge_calls, tally.judge_failed, counts) == \
            _tally_oracle(records)

    check()
