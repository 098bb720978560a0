"""The isolated Python system on the one worker base (engines/worker.WorkerProcess):
its channel is the worker's stdin/stdout, so a callable that reads stdin or prints must not
touch it; a kill takes the worker's process group; a call's output keeps its Python types."""

from __future__ import annotations

import os
import time
from fractions import Fraction

import pytest

from queryeval.engines.worker import WorkerProcess
from queryeval.errors import SystemCallError
from queryeval.systems.python import IsolatedPythonSystem

MODULE = """\
import os, subprocess, sys, time
from fractions import Fraction

def f(req):
    case = req["case_id"]
    if case == "stdin":
        return {"read": sys.stdin.read()}
    if case == "print":
        print("noise on stdout " * 100)
        sys.stdout.flush()
        return {"printed": True}
    if case == "child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(req["pidfile"], "w") as fh:
            fh.write(str(child.pid))
        time.sleep(60)
    if case == "types":
        return {"ratio": Fraction(1, 3), "pid": os.getpid()}
    return {"pid": os.getpid()}
"""


@pytest.fixture
def system(tmp_path, monkeypatch):
    (tmp_path / "worker_sys.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    s = IsolatedPythonSystem("worker_sys:f")
    yield s
    s.close()


def _gone(pid: int) -> bool:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie child of a dead worker is reaped by init; ours by us
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_the_worker_is_the_one_base(system):
    (worker,) = system._idle
    assert isinstance(worker, WorkerProcess) and worker.starts == 1


def test_stdin_and_stdout_of_the_callable_are_not_the_channel(system):
    assert system.call({"case_id": "stdin"}, 10) == {"read": ""}
    assert system.call({"case_id": "print"}, 10) == {"printed": True}
    pid = system.call({"case_id": "a"}, 10)["pid"]
    assert system.call({"case_id": "a"}, 10)["pid"] == pid  # the same worker served all


def test_an_output_keeps_its_python_types(system):  # the engines' reader refuses a Fraction
    out = system.call({"case_id": "types"}, 10)
    assert out["ratio"] == Fraction(1, 3) and type(out["ratio"]) is Fraction


def test_a_timeout_kills_the_workers_children_too(system, tmp_path):
    pidfile = tmp_path / "child.pid"
    t0 = time.monotonic()
    with pytest.raises(SystemCallError) as err:
        system.call({"case_id": "child", "pidfile": str(pidfile)}, 1.5)
    assert err.value.kind == "timeout" and time.monotonic() - t0 < 5
    assert _gone(int(pidfile.read_text()))
