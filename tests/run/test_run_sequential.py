"""``queryeval run SUITE --system S --baseline RUN --stop-when-decided`` end to end: a Python
system against a baseline run made from recorded responses. A clearly better and a clearly
worse system decide early (the records written are exactly the cases called, in the seeded
order); an identical system with --margin never decides a direction; a run interrupted
part-way and resumed ends exactly where an uninterrupted run ends; the batch file, the
metrics, the console summary, the HTML report and compare carry the decision and the
interval; without the option nothing changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.run_sequential import N, files, seq_run  # noqa: E402,F401
from queryeval.cli.app import main

SRC = Path(__file__).resolve().parents[2] / "src"


def seeded_order(n: int, seed: int = 0) -> list[str]:
    return [f"c{i}" for i in np.random.default_rng(seed).permutation(n)]


@pytest.mark.parametrize("fn, decision", [("good", "better"), ("bad", "worse")])
def test_a_clear_difference_decides_early(lab, tmp_path, capsys, fn, decision):
    assert seq_run(lab, tmp_path / "o", fn) == 0
    got = files(tmp_path / "o")
    seq = got["batch"]["sequential"]
    assert seq["decision"] == decision
    used = seq["cases_used"]
    assert used < 60 and seq["calls_saved"] == N - used and seq["cases"] == N
    # concurrency 1 keeps up to 2 cases pending: the one started before the decision
    # finishes and is recorded, and it enters the sequence
    assert seq["decided_at"] <= used <= seq["decided_at"] + 1 and seq["paired"] == used
    low, high = seq["interval"]
    assert (low > 0) if decision == "better" else (high < 0)
    assert seq["alpha"] == 0.05 and seq["margin"] is None and seq["metric"] == "pass"
    # the records written are exactly the cases called, in the seeded order
    ids = [r["case_id"] for r in got["records"]]
    assert ids == seeded_order(N)[:used]
    assert got["metrics"]["sequential"] == seq
    assert got["metrics"]["overall_metrics"]["cases"] == used
    out = capsys.readouterr().out
    assert f"sequential: {decision} vs baseline on pass" in out
    assert f"{used} of {N} cases called" in out
    html = got["html"].read_text()
    assert 'id="sequential"' in html and f"{used} of {N} cases called" in html
    # the interval is the one the confidence sequence gives on the same differences
    from queryeval.run.confseq import ConfidenceSequence, first_decision, to_unit

    base = {r["case_id"]: r for r in files(lab["base"])["records"]}
    diffs = [float(r["passed"]) - float(base[r["case_id"]]["passed"]) for r in got["records"]]
    stop = first_decision(np.array(diffs), 0.05)
    assert (stop.decision, stop.cases) == (decision, seq["decided_at"])
    cs = ConfidenceSequence(0.05)
    for d in diffs:
        cs.update(to_unit(d))
    assert [float(v) for v in cs.difference_bounds()] == pytest.approx([low, high], abs=1e-6)


def test_compare_shows_the_anytime_valid_interval(lab, tmp_path, capsys):
    assert seq_run(lab, tmp_path / "o", "good", "-q", "--no-report") == 0
    capsys.readouterr()
    assert main(["compare", str(lab["base"]), str(tmp_path / "o"), "--json",
                 str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "B stopped when decided: sequential: better" in out
    comp = json.loads((tmp_path / "c.json").read_text())
    assert comp["sequential"] == files(tmp_path / "o")["metrics"]["sequential"]


def test_the_viewer_api_carries_the_sequential_section(lab, tmp_path):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from queryeval.viewer.server import create_app

    assert seq_run(lab, tmp_path / "o", "bad", "-q", "--no-report") == 0
    got = files(tmp_path / "o")
    client = TestClient(create_app(tmp_path / "o", resamples=200), base_url="http://127.0.0.1")
    doc = client.get(f"/api/runs/{got['batch']['batch_id']}").json()
    assert doc["sequential"] == got["metrics"]["sequential"]
    assert doc["sequential"]["decision"] == "worse"
    plain = TestClient(create_app(lab["base"], resamples=200), base_url="http://127.0.0.1").get(
        f"/api/runs/{files(lab['base'])['batch']['batch_id']}")
    assert plain.status_code == 200 and "overall" in plain.json()
    assert "sequential" not in plain.json()


def test_the_python_api_decides_as_the_command_line_does(lab, tmp_path):
    import queryeval as qe

    def good(req):
        n = int(req["messages"][-1]["content"].split()[-1].rstrip("?"))
        return {"response": str(1000 + n) if n % 20 else str(7000 + n)}

    run = qe.evaluate(str(lab["suite"]), good, out=tmp_path / "api", concurrency=1,
                      progress=False, sequential={"baseline": lab["base"]})
    assert seq_run(lab, tmp_path / "cli", "good", "-q", "--no-report") == 0
    want = files(tmp_path / "cli")["metrics"]["sequential"]
    got = run.metrics["sequential"]
    assert {k: got[k] for k in ("decision", "cases_used", "interval", "decided_at")} == \
        {k: want[k] for k in ("decision", "cases_used", "interval", "decided_at")}
    assert "sequential: better vs baseline" in str(run)
    with pytest.raises(qe.ConfigError, match="sequential.margin"):
        qe.evaluate(str(lab["suite"]), good, out=tmp_path / "bad", progress=False,
                    sequential={"baseline": lab["base"], "margin": 2})


def test_every_surface_counts_exactly_the_cases_called(lab, tmp_path):
    """The run model, pandas, metrics JSON, results CSV, HTML report, gates and viewer API
    of a stopped run hold the cases it called, and only those (tests/helpers/matrix_checks.py)."""
    import queryeval as qe
    from helpers.matrix_checks import check_consumers

    assert seq_run(lab, tmp_path / "o", "good", "-q") == 0
    got = files(tmp_path / "o")
    per_case = {r["case_id"]: r["scores"]["exact_match"] for r in got["records"]}
    assert len(per_case) == got["metrics"]["sequential"]["cases_used"] < N
    check_consumers(qe.load(got["path"]), "exact_match", per_case, viewer_root=tmp_path / "o")


def test_an_identical_system_with_a_margin_decides_no_direction(lab, tmp_path):
    assert seq_run(lab, tmp_path / "o", "same", "--margin", "0.25", "-q", "--no-report") == 0
    seq = files(tmp_path / "o")["batch"]["sequential"]
    assert seq["decision"] in ("equivalent", "undecided")
    low, high = seq["interval"]
    assert low <= 0 <= high
    if seq["decision"] == "equivalent":
        assert -0.25 < low and high < 0.25 and seq["cases_used"] < N
    else:
        assert seq["cases_used"] == N


def test_an_identical_system_decides_equivalent_with_a_wide_margin(lab, tmp_path):
    """Every difference is 0: the interval closes around 0 and lies inside ±0.3 early."""
    assert seq_run(lab, tmp_path / "o", "same", "--margin", "0.3", "--alpha", "0.1", "-q",
                   "--no-report") == 0
    seq = files(tmp_path / "o")["batch"]["sequential"]
    assert seq["decision"] == "equivalent" and seq["alpha"] == 0.1 and seq["margin"] == 0.3
    assert seq["cases_used"] < N / 2


def test_resume_after_an_interruption_continues_the_sequence(lab, tmp_path):
    whole = tmp_path / "whole"
    assert seq_run(lab, whole, "good", "-q", "--no-report") == 0
    want = files(whole)
    part = tmp_path / "part"
    proc = subprocess.run(  # Ctrl-C in a process of its own (the CLI's handler stays set)
        [sys.executable, "-m", "queryeval", "run", str(lab["suite"]), "--system",
         f"python:{lab['sys']}:stops", "--baseline", str(lab["base"]), "--stop-when-decided",
         "--out", str(part), "--concurrency", "1", "-q", "--no-report"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert proc.returncode == 130, proc.stderr[-2000:]
    mid = files(part)
    assert mid["batch"]["status"] == "interrupted" and 10 <= len(mid["records"]) <= 12
    assert len(mid["records"]) < want["batch"]["sequential"]["cases_used"]
    assert main(["run", "--resume", str(mid["path"]), "-q"]) == 0
    got = files(part)
    keep = ("decision", "cases_used", "calls_saved", "interval", "decided_at", "paired")
    assert {k: got["batch"]["sequential"][k] for k in keep} == \
        {k: want["batch"]["sequential"][k] for k in keep}
    assert [r["case_id"] for r in got["records"]] == [r["case_id"] for r in want["records"]]


def test_a_resume_of_a_decided_run_calls_nothing(lab, tmp_path):
    assert seq_run(lab, tmp_path / "o", "good", "-q", "--no-report") == 0
    before = files(tmp_path / "o")
    assert main(["run", "--resume", str(before["path"]), "-q"]) == 0
    after = files(tmp_path / "o")
    assert after["records"] == before["records"]
    assert after["batch"]["sequential"] == before["batch"]["sequential"]


def test_without_the_option_the_run_log_has_no_sequential_part(lab, tmp_path):
    assert main(["run", str(lab["suite"]), "--system", f"python:{lab['sys']}:good",
                 "--out", str(tmp_path / "o"), "-q", "--no-report"]) == 0
    got = files(tmp_path / "o")
    assert "sequential" not in got["batch"] and "sequential" not in got["metrics"]
    assert "sequential" not in got["batch"]["evaluation_config"]
    assert [r["case_id"] for r in got["records"]][:5] != seeded_order(N)[:5]
    assert len(got["records"]) == N


@pytest.mark.parametrize("args, says", [
    (["--stop-when-decided"], "--stop-when-decided needs --baseline"),
    (["--margin", "0.1"], "--margin goes with --stop-when-decided"),
    (["--stop-when-decided", "--baseline", "BASE", "--metric", "nope"], "--metric nope"),
    (["--stop-when-decided", "--baseline", "BASE", "--repeats", "3"], "--repeats"),
    (["--stop-when-decided", "--baseline", "BASE", "--alpha", "1.5"], "--alpha"),
    (["--stop-when-decided", "--baseline", "MISSING"], "--baseline"),
])
def test_bad_options_are_one_line_and_exit_2(lab, tmp_path, capsys, args, says):
    args = [str(lab["base"]) if a == "BASE" else str(tmp_path / "none") if a == "MISSING"
            else a for a in args]
    code = main(["run", str(lab["suite"]), "--system", f"python:{lab['sys']}:good",
                 "--out", str(tmp_path / "o"), "-q", *args])
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err
    assert not list((tmp_path / "o").rglob("results_*.jsonl"))


def test_a_lower_is_better_figure_turns_the_difference_round(lab):
    """B scoring 0 where the baseline scored 1 is worse on exact_match, and better on a
    figure whose task declares it lower-is-better (the compare's direction rule)."""
    from types import SimpleNamespace

    from queryeval.run.sequential import Sequencer, SequentialConfig
    from queryeval.tasks.base import get_task

    base = [r for r in files(lab["base"])["records"] if r["scores"]["exact_match"] == 1.0]
    config = SequentialConfig(baseline=str(lab["base"]), metric="exact_match")
    lower = SimpleNamespace(name="freeform", lower_is_better_metrics={"exact_match"})
    for task, decision in ((get_task("freeform"), "worse"), (lower, "better")):
        seq = Sequencer(config, task)
        for r in base[:40]:
            seq.feed({"case_id": r["case_id"], "status": "ok", "scores": {"exact_match": 0.0}})
        assert seq.decision == decision
        assert seq.section(N)["cases_used"] == 40
