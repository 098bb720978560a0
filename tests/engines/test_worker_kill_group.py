"""The one process-group kill (engines/worker.kill_group), used by the isolated Python
system's workers and by each cmd: system call: the whole group dies by SIGKILL, a group
already gone is no error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from queryeval.engines.worker import kill_group

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX process groups")

_PARENT = ("import subprocess, sys, time; "
           "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
           "print(p.pid, flush=True); time.sleep(60)")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reaped by nobody here but init: a zombie counts as dead
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except (OSError, IndexError):
            pass
        time.sleep(0.05)
    return False


def test_kill_group_ends_the_leader_and_its_child():
    proc = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        kill_group(proc.pid)
        assert proc.wait(10) == -signal.SIGKILL
        assert _gone(child)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        proc.stdout.close()


def test_kill_group_of_a_group_already_gone_is_no_error():
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    assert proc.wait(10) == 0
    kill_group(proc.pid)  # reaped: no such group any more
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # the group really is gone, so the call above had nothing to do
