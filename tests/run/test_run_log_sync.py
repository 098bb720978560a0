"""The results file's durability with the periodic fsync on a helper thread (run/log.py):
every record is in the file when ``append`` returns (it survives a kill -9), the file is
fsynced every ``FSYNC_EVERY`` lines and, on the calling thread, at close; a failing fsync at
close is reported."""

from __future__ import annotations

import json
import os
import threading

import pytest

from queryeval.errors import OutputError
from queryeval.run import log as run_log
from queryeval.run.log import RunLog


def test_each_line_is_written_at_append_and_fsyncs_follow_every_64_lines(tmp_path, monkeypatch):
    synced: list[tuple[int, str]] = []
    gate = threading.Event()
    real = os.fsync

    log = RunLog.create(tmp_path, {"task": "x"}, dated=False)
    log.append({"case_id": "c0", "i": 0})
    results = os.stat(log.paths.results_jsonl).st_ino

    def slow_fsync(fd):  # a slow disk: the helper waits until the test lets it go
        if os.fstat(fd).st_ino == results:  # (not the batch file's atomic writes)
            if threading.current_thread().name == "queryeval-fsync":
                gate.wait(10)
            synced.append((fd, threading.current_thread().name))
        real(fd)

    monkeypatch.setattr(run_log.os, "fsync", slow_fsync)
    n = 3 * run_log.FSYNC_EVERY + 5
    for i in range(1, n):
        log.append({"case_id": f"c{i}", "i": i})
        lines = log.paths.results_jsonl.read_bytes().splitlines()
        assert len(lines) == i + 1 and json.loads(lines[-1])["i"] == i  # on disk at once
    assert synced == []  # the first fsync is still waiting for the disk: appends went on
    gate.set()
    log.close()
    helper = [name for _, name in synced if name == "queryeval-fsync"]
    assert 1 <= len(helper) <= 3  # one at a time: a busy helper is not queued behind
    assert synced[-1][1] == threading.current_thread().name  # close syncs itself, last
    assert not any(t.name == "queryeval-fsync" and t.is_alive() for t in threading.enumerate())
    assert [json.loads(x)["i"] for x in log.paths.results_jsonl.read_bytes().splitlines()] == \
        list(range(n))


def test_a_failing_fsync_at_close_is_one_output_error(tmp_path, monkeypatch):
    log = RunLog.create(tmp_path, {"task": "x"}, dated=False)
    for i in range(run_log.FSYNC_EVERY + 1):
        log.append({"case_id": f"c{i}"})

    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(run_log.os, "fsync", broken)
    with pytest.raises(OutputError, match="Input/output error"):
        log.close()
