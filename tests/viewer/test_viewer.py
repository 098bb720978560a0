"""The run viewer's server through Starlette's test client: real runs of the example suite,
the JSON API's values, pagination, and the security rules (path traversal, symlinks out of
the folder, escaping/CSP, Host checks, read-only, loopback binding)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from queryeval.report.compare import compare_runs  # noqa: E402
from queryeval.run.config import RunConfig  # noqa: E402
from queryeval.run.evaluate import start_run  # noqa: E402
from queryeval.run.results import RunResults  # noqa: E402
from queryeval.viewer.server import CSP, bind_warning, create_app, is_loopback  # noqa: E402

USA = "5eed0000-0000-0000-0000-000000017334"


def _run(examples_dir: Path, out: Path, responses: Path) -> Path:
    return start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                               responses=str(responses), out=str(out),
                               reports=False)).log.paths.batch


@pytest.fixture(scope="module")
def folder(tmp_path_factory, examples_dir) -> dict:
    root = tmp_path_factory.mktemp("viewer") / "runs"
    a = _run(examples_dir, root / "a", examples_dir / "sdmx" / "responses.jsonl")
    records = RunResults.open(a).records
    hostile = root.parent / "b.jsonl"
    with open(hostile, "w", encoding="utf-8") as fh:
        for r in records:
            for t in r["turns"]:
                out = [] if r["case_id"] == USA else t["output"]
                fh.write(json.dumps({"case_id": r["case_id"], "turn": t["turn"],
                                     "indicator_selection": out}) + "\n")
    b = _run(examples_dir, root / "b", hostile)
    return {"root": root, "a": a, "b": b, "ids": [p.stem[len("batch_"):] for p in (a, b)]}


@pytest.fixture(scope="module")
def client(folder):
    return TestClient(create_app(folder["root"], resamples=500), base_url="http://127.0.0.1")


def test_index_lists_every_run(client, folder):
    doc = client.get("/api/runs").json()
    rows = {r["id"]: r for r in doc["runs"]}
    assert set(rows) == set(folder["ids"])
    a = rows[folder["ids"][0]]
    assert (a["task"], a["suite"], a["system"], a["status"], a["cases"], a["done"]) == (
        "indicator_selection", "suite", "responses.jsonl", "complete", 23, 23)
    assert a["metrics"]["macro_recall"] == pytest.approx(19.5 / 23)


def test_run_page_overall_with_ci_and_groups(client, folder):
    doc = client.get(f"/api/runs/{folder['ids'][0]}").json()
    rec = next(m for m in doc["overall_rows"] if m["metric"] == "macro_recall")
    assert rec["value"] == pytest.approx(19.5 / 23) and rec["n"] == 23
    assert rec["low"] < rec["value"] < rec["high"]
    assert set(doc["groups"]) == {"tag", "dimension", "dataset"}
    assert doc["statuses"] == {"ok": 23}


def test_cases_paginated_sorted_filtered(client, folder):
    base = f"/api/runs/{folder['ids'][0]}/cases"
    everything = client.get(base, params={"limit": 500}).json()
    assert everything["total"] == everything["matched"] == 23
    first = client.get(base, params={"offset": 0, "limit": 10}).json()["rows"]
    second = client.get(base, params={"offset": 10, "limit": 10}).json()["rows"]
    third = client.get(base, params={"offset": 20, "limit": 10}).json()["rows"]
    assert len(third) == 3
    assert [r["case_id"] for r in first + second + third] == [
        r["case_id"] for r in everything["rows"]]
    ranked = client.get(base, params={"sort": "macro_recall", "limit": 500}).json()["rows"]
    values = [r["metrics"]["macro_recall"] for r in ranked]
    assert values == sorted(values) and values[0] == 0.0
    cpi = client.get(base, params={"q": "CPI", "limit": 500}).json()
    expected = [r["case_id"] for r in RunResults.open(folder["a"]).records
                if "cpi" in r["tags"] or "cpi" in r["name"].lower()]
    assert [r["case_id"] for r in cpi["rows"]] == expected and len(expected) == 6
    errors = client.get(base, params={"status": "error"}).json()
    assert errors["matched"] == 0 and errors["total"] == 23
    assert client.get(base, params={"limit": "x"}).status_code == 400
    assert len(client.get(base, params={"limit": 10**9}).json()["rows"]) == 23  # capped at 500


def test_case_details(client, folder):
    doc = client.get(f"/api/runs/{folder['ids'][1]}/cases/{USA}").json()
    assert doc["record"]["name"] == "monthly_cpi_usa"
    assert doc["record"]["turns"][0]["output"] == []
    assert doc["row"]["metrics"] == {"macro_precision": 0.0, "macro_recall": 0.0}
    assert (doc["row"]["status"], doc["row"]["verdict"]) == ("ok", "fail")
    assert client.get(f"/api/runs/{folder['ids'][1]}/cases/nope").status_code == 404


def test_compare_endpoint_matches_compare_runs(client, folder):
    ids = folder["ids"]
    doc = client.get("/api/compare", params=[("run", ids[0]), ("run", ids[1])]).json()
    two = compare_runs(folder["a"], folder["b"], resamples=500)
    row = next(m for m in doc["overall"]["metrics"] if m["metric"] == "macro_recall")
    assert row["means"] == pytest.approx([two.metric("macro_recall").mean_a,
                                          two.metric("macro_recall").mean_b])
    flips = [f for f in doc["flips"] if f["metric"] == "macro_recall"]
    assert flips == [{"run_a": 0, "run_b": 1, "metric": "macro_recall", "improved": [],
                      "regressed": [USA]}]
    assert client.get("/api/compare", params={"run": ids[0]}).status_code == 400
    assert client.get("/api/compare", params=[("run", ids[0]), ("run", "x")]).status_code == 404


@pytest.mark.parametrize("path", [
    "/static/../server.py", "/static/%2e%2e/server.py", "/static/..%2Fserver.py",
    "/static/%2Fetc%2Fpasswd", "/static//etc/passwd", "/static/index.html/../app.js.bak",
    "/api/runs/..%2F..%2Fetc%2Fpasswd", "/api/runs/%2Fetc%2Fpasswd/cases",
    "/api/runs/../../etc/passwd", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
    "/api/runs/a/cases/..%2F..%2F..%2Fetc%2Fpasswd",
])
def test_path_traversal_is_refused(client, path):
    resp = client.get(path)
    assert resp.status_code == 404, resp.text
    assert "root:" not in resp.text


def test_symlinks_out_of_the_folder_are_ignored(folder, tmp_path):
    outside = tmp_path / "outside"
    src = folder["a"].parent
    shutil.copytree(src, outside)
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "linked_dir")  # a folder link: not entered
    inner = root / "inner"
    inner.mkdir()
    for f in outside.iterdir():  # file links to a run outside the folder: left out
        os.symlink(f, inner / f.name)
    client = TestClient(create_app(root), base_url="http://127.0.0.1")
    assert client.get("/api/runs").json()["runs"] == []
    assert client.get(f"/api/runs/{folder['ids'][0]}").status_code == 404
    # a run inside whose results file links outside is left out too
    own = root / "own"
    shutil.copytree(src, own)
    results = next(own.glob("results_*.jsonl"))
    results.unlink()
    os.symlink(next(outside.glob("results_*.jsonl")), results)
    assert TestClient(create_app(root), base_url="http://127.0.0.1").get(
        "/api/runs").json()["runs"] == []


def test_headers_csp_and_read_only(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-security-policy"] == CSP
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
    assert "<script src=\"/static/app.js\"></script>" in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # nothing from the network
    js = client.get("/static/app.js")
    assert js.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in js.text and "eval(" not in js.text  # text nodes only
    for method in ("post", "put", "delete", "patch"):
        assert getattr(client, method)("/api/runs").status_code == 405


def test_xss_text_is_data(folder, tmp_path):
    """A case name with markup travels as JSON text; the page never parses it as HTML
    (app.js has no innerHTML; the browser test checks the rendering)."""
    root = tmp_path / "x"
    shutil.copytree(folder["a"].parent, root)
    results = next(root.glob("results_*.jsonl"))
    evil = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    lines = results.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["name"] = evil
    results.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    client = TestClient(create_app(root), base_url="http://127.0.0.1")
    run_id = client.get("/api/runs").json()["runs"][0]["id"]
    resp = client.get(f"/api/runs/{run_id}/cases", params={"q": "onerror"})
    assert resp.headers["content-type"] == "application/json"
    assert resp.json()["rows"][0]["name"] == evil


def test_foreign_host_header_refused(folder):
    client = TestClient(create_app(folder["root"]), base_url="http://attacker.example")
    assert client.get("/api/runs").status_code == 400  # DNS rebinding
    open_app = TestClient(create_app(folder["root"], host="0.0.0.0"),
                          base_url="http://viewer.lan")
    assert open_app.get("/api/runs").status_code == 200


def test_binding_rules():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert bind_warning("127.0.0.1") is None
    assert "not only this machine" in bind_warning("0.0.0.0")


def test_running_batch_shows_progress(folder, tmp_path):
    root = tmp_path / "r"
    shutil.copytree(folder["a"].parent, root)
    batch = next(root.glob("batch_*.json"))
    doc = json.loads(batch.read_text())
    doc["status"] = "running"
    batch.write_text(json.dumps(doc))
    next(root.glob("metrics_*.json")).unlink()
    results = next(root.glob("results_*.jsonl"))
    results.write_text("\n".join(results.read_text().splitlines()[:9]) + "\n")
    next(root.glob("results_*.csv")).unlink()
    client = TestClient(create_app(root), base_url="http://127.0.0.1")
    row = client.get("/api/runs").json()["runs"][0]
    assert (row["status"], row["done"], row["cases"]) == ("running", 9, 23)
    run = client.get(f"/api/runs/{row['id']}").json()
    assert run["done"] == 9 and run["overall"] == {}


@pytest.mark.slow
def test_100k_cases_stay_responsive(folder, tmp_path):
    root = tmp_path / "big"
    shutil.copytree(folder["a"].parent, root)
    next(root.glob("results_*.csv")).unlink()
    results = next(root.glob("results_*.jsonl"))
    with open(results, "w", encoding="utf-8") as fh:
        for k in range(100_000):
            fh.write(json.dumps({"case_id": f"c{k:06d}", "name": f"case {k}", "tags": ["t"],
                                 "status": "ok", "scores": {"hit": float(k % 3 == 0)}}) + "\n")
    client = TestClient(create_app(root), base_url="http://127.0.0.1")
    run_id = client.get("/api/runs").json()["runs"][0]["id"]
    client.get(f"/api/runs/{run_id}/cases", params={"limit": 1})  # loads and caches
    start = time.monotonic()
    page = client.get(f"/api/runs/{run_id}/cases",
                      params={"offset": 99_990, "limit": 50, "sort": "hit", "desc": 1}).json()
    assert time.monotonic() - start < 5  # generous: a page is a slice of a cached index
    assert page["total"] == 100_000 and len(page["rows"]) == 10
    assert all(r["metrics"]["hit"] == 0.0 for r in page["rows"])
    assert len(client.get(f"/api/runs/{run_id}/cases", params={"limit": 50}).content) < 20_000


def _serve(args: list[str]) -> tuple:
    import re
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "queryeval", "view", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    match = re.search(r"http://(\S+):(\d+)/", line)
    return proc, match, line


@pytest.mark.slow
@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_view_command_serves_on_a_free_port(folder, host):
    import httpx

    proc, match, line = _serve([str(folder["root"]), "--port", "0", "--host", host])
    try:
        assert match, line
        port = int(match.group(2))
        assert port > 0 and match.group(1) == host
        runs = httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=30).json()["runs"]
        assert {r["id"] for r in runs} == set(folder["ids"])
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert ("not only this machine" in err) == (host == "0.0.0.0")


def test_view_command_rejects_a_missing_folder(tmp_path, capsys):
    from queryeval.cli.app import main

    assert main(["view", str(tmp_path / "nope"), "--port", "0"]) == 2
    assert "not a folder of runs" in capsys.readouterr().err


def test_view_command_port_in_use_or_bad_host_exit_2(folder, capsys):
    import socket

    from queryeval.cli.app import main

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        assert main(["view", str(folder["root"]), "--port", str(port)]) == 2
        assert f"cannot listen on 127.0.0.1 port {port}" in capsys.readouterr().err
    finally:
        taken.close()
    assert main(["view", str(folder["root"]), "--port", "0", "--host", "no such host.invalid"]) == 2
    err = capsys.readouterr().err
    assert "cannot listen on no such host.invalid" in err and "Traceback" not in err


def test_ctrl_c_exits_130_even_when_uvicorn_returns_quietly(tmp_path, monkeypatch, capsys):
    """uvicorn re-raises the SIGINT it caught, but asyncio's runner may take it as a request
    to cancel a task that is already finishing and raise nothing (seen once in a full run:
    exit 0). The signal uvicorn recorded decides."""
    import signal

    import uvicorn

    from queryeval.cli.app import main

    def run(self, sockets=None):
        for sock in sockets or []:
            sock.close()
        self._captured_signals = [signal.SIGINT]
        self.should_exit = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    assert main(["view", str(tmp_path), "--port", "0"]) == 130
    assert "stopped (Ctrl-C)" in capsys.readouterr().err


@pytest.mark.slow
def test_view_empty_folder_says_so_and_ctrl_c_exits_130(tmp_path):
    import signal

    import httpx

    empty = tmp_path / "none"
    empty.mkdir()
    proc, match, line = _serve([str(empty), "--port", "0"])
    try:
        assert match, line
        url = f"http://127.0.0.1:{match.group(2)}/api/runs"
        assert httpx.get(url, timeout=30).json()["runs"] == []  # serving, handlers installed
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    lines = err.splitlines()
    assert lines == [f"no runs under {empty} yet; serving anyway (new runs appear on reload)",
                     "queryeval view: stopped (Ctrl-C)"], err


def test_retrieval_system_derived_k_and_headline_k(tmp_path, examples_dir):
    """A built-in retrieval run with --k 1,3: the run and its derived k=1 batch are named
    like the HTML report (built-in: bm25), the derived one with its k, and recall_at_k
    carries its k."""
    from queryeval.cli.app import main

    out = tmp_path / "o"
    assert main(["run", str(examples_dir / "retrieval" / "questions.csv"), "--corpus",
                 str(examples_dir / "retrieval" / "corpus.jsonl"), "--k", "1,3",
                 "--out", str(out), "-q"]) == 0
    client = TestClient(create_app(out), base_url="http://127.0.0.1")
    rows = sorted(client.get("/api/runs").json()["runs"], key=lambda r: r["system"])
    assert [r["system"] for r in rows] == ["built-in: bm25", "built-in: bm25 (derived, k=1)"]
    assert rows[1]["derived_from"] == rows[0]["id"]
    assert "recall_at_k" not in rows[0]["metrics"] and "recall_at_k" not in rows[1]["metrics"]
    metrics = {m: json.loads(next(out.rglob(f"metrics_{r['id']}.json")).read_text())[
        "overall_metrics"]["recall_at_k"] for m, r in (("3", rows[0]), ("1", rows[1]))}
    assert rows[0]["metrics"]["recall@3"] == metrics["3"]
    assert rows[1]["metrics"]["recall@1"] == metrics["1"]
    assert metrics["1"] <= metrics["3"]
