"""What the tests of run sequential share with other test files: ``files``, ``lab``, ``seq_run`` (moved here from test_run_sequential.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from queryeval.cli.app import main

N = 300


SYSTEM = '''
import os, re, signal
FLAG = {flag!r}

def _n(req):
    return int(re.search(r"number (\\d+)", req["messages"][-1]["content"]).group(1))

def good(req):  # right on 19 of 20 cases
    n = _n(req)
    return {{"response": str(1000 + n) if n % 20 else str(7000 + n)}}

def bad(req):  # right on 1 of 20
    n = _n(req)
    return {{"response": str(1000 + n) if n % 20 == 0 else str(7000 + n)}}

def same(req):  # the baseline's own answers
    n = _n(req)
    return {{"response": str(1000 + n) if (n * 7919) % 10 < 5 else str(5000 + n)}}

def stops(req):  # the good system, whose 12th call presses Ctrl-C (once)
    calls = FLAG + ".calls"
    count = int(open(calls).read()) + 1 if os.path.exists(calls) else 1
    open(calls, "w").write(str(count))
    if count == 12 and not os.path.exists(FLAG):
        open(FLAG, "w").write("hit")
        os.kill(os.getpid(), signal.SIGINT)
    return good(req)
'''


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("seq")
    with (root / "cases.jsonl").open("w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"c{i}", "conversation": [{
                "role": "user", "content": f"What is number {i}?",
                "target": {"reference": {"answer": str(1000 + i)}}}]}) + "\n")
    with (root / "base.jsonl").open("w") as fh:  # right on half of the cases
        for i in range(N):
            ok = (i * 7919) % 10 < 5
            fh.write(json.dumps({"id": f"c{i}", "response": str(1000 + i if ok else 5000 + i)})
                     + "\n")
    (root / "sys.py").write_text(SYSTEM.format(flag=str(root / "interrupted")))
    assert main(["run", str(root / "cases.jsonl"), "--responses", str(root / "base.jsonl"),
                 "--out", str(root / "base"), "-q", "--no-report"]) == 0
    return {"root": root, "suite": root / "cases.jsonl", "base": root / "base",
            "sys": root / "sys.py"}


def files(out: Path) -> dict:
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    f = batch.parent
    metrics = f / f"metrics_{bid}.json"
    return {"batch": json.loads(batch.read_text()),
            "metrics": json.loads(metrics.read_text()) if metrics.exists() else None,
            "records": [json.loads(x) for x in
                        (f / f"results_{bid}.jsonl").read_text().splitlines()],
            "html": f / f"report_{bid}.html", "path": batch}


def seq_run(lab: dict, out: Path, fn: str, *extra: str) -> int:
    return main(["run", str(lab["suite"]), "--system", f"python:{lab['sys']}:{fn}",
                 "--baseline", str(lab["base"]), "--stop-when-decided", "--out", str(out),
                 "--concurrency", "1", *extra])
