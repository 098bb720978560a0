"""The run lifecycle: inputs pinned at start and checked on resume, options on resume, one
process per batch (a real flock between two processes), paths fixed at start (a system that
calls os.chdir), out-of-range options as one line, Ctrl-C (a real SIGINT) and resume, failed
calls scored as the worst result with an error summary and exit code 3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.suite.models import Case
from queryeval.tasks.base import TurnOutcome, get_task

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "sdmx" / "suite"
RESPONSES = REPO / "examples" / "sdmx" / "responses.jsonl"
SYSTEM = REPO / "examples" / "sdmx" / "system.py"
N_CASES, N_TURNS = 23, 25
FIRST_CASE = "5eed0000-0000-0000-0000-000000017334"  # the first case of the suite, in run order


def files(out: Path) -> dict[str, Path]:
    (batch,) = [p for p in out.rglob("batch_*.json")]
    bid = batch.stem.removeprefix("batch_")
    return {"batch": batch, "jsonl": batch.parent / f"results_{bid}.jsonl",
            "metrics": batch.parent / f"metrics_{bid}.json",
            "lock": batch.parent / f".batch_{bid}.lock"}


def cli(*args: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "queryeval", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False, env=env)


def popen(*args: str, cwd: Path = REPO) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen([sys.executable, "-m", "queryeval", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def slow_system(tmp_path: Path, seconds: float = 0.2) -> str:
    mod = tmp_path / "slow.py"
    mod.write_text(
        "import sys, time\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n    time.sleep(%r)\n    return real(req)\n" % (str(SYSTEM.parent), seconds))
    return f"python:{mod}:select"


def lines_of(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def wait_for_lines(out: Path, n: int, proc: subprocess.Popen, limit: float = 60) -> None:
    deadline = time.time() + limit
    while time.time() < deadline:
        found = list(out.rglob("results_*.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the run wrote no results in time")


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def make_partial(out: Path, keep: int) -> dict[str, Path]:
    """A finished run cut back to its first ``keep`` records and marked interrupted."""
    f = files(out)
    kept = f["jsonl"].read_text().splitlines()[:keep]
    f["jsonl"].write_text("".join(x + "\n" for x in kept))
    batch = json.loads(f["batch"].read_text())
    batch["status"] = "interrupted"
    f["batch"].write_text(json.dumps(batch))
    f["metrics"].unlink()
    return f


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("ref")
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q",
                 "--no-report"]) == 0
    return json.loads(files(out)["metrics"].read_text())


# --- 1. inputs pinned; options on resume ------------------------------------------------------
def test_resume_refuses_a_changed_responses_file_and_force_records_it(tmp_path, reference):
    responses = tmp_path / "responses.jsonl"
    responses.write_text(RESPONSES.read_text())
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(responses), "--out", str(out), "-q",
                 "--no-report"]) == 0
    f = files(out)
    pins = json.loads(f["batch"].read_text())["inputs"]["files"]
    assert str(responses) in pins and str(SUITE / "cpi.yaml") in pins
    assert pins[str(responses)]["hash"].startswith("blake2b:")
    make_partial(out, 8)
    # the same size, one byte different: found by the hash, not the size
    text = responses.read_text()
    responses.write_text(text.replace("Mexico", "Mexicp", 1))
    proc = cli("run", "--resume", str(out))
    assert proc.returncode == 2
    assert one_line(proc.stderr) == (
        f"error: input file {responses} changed since the run started; start a new run, or pass "
        "--force to resume with the files as they are now")
    assert len(lines_of(f["jsonl"])) == 8  # nothing was added
    proc = cli("run", "--resume", str(out), "--force", "-q")
    assert proc.returncode == 0, proc.stderr
    batch = json.loads(f["batch"].read_text())
    (entry,) = batch["resumes"]
    (change,) = entry["inputs_changed"]
    assert change["path"] == str(responses) and change["was"] == pins[str(responses)]["hash"]
    assert change["now"] == batch["inputs"]["files"][str(responses)]["hash"] != change["was"]
    assert batch["status"] == "complete"


def test_resume_names_a_changed_suite_file(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for p in SUITE.iterdir():
        (suite / p.name).write_text(p.read_text())
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(RESPONSES), "--out", str(out), "-q", "--no-report"]) == 0
    make_partial(out, 3)
    (suite / "weo.yaml").write_text((suite / "weo.yaml").read_text() + "\n# a comment\n")
    proc = cli("run", "--resume", str(out))
    assert proc.returncode == 2
    assert one_line(proc.stderr).startswith(f"error: input file {suite / 'weo.yaml'} changed since")
    (suite / "cpi.yaml").unlink()
    proc = cli("run", "--resume", str(out))
    assert one_line(proc.stderr).startswith(f"error: input file {suite / 'cpi.yaml'} is gone since "
                                            "the run started (and 1 more)")
    # --force goes on with the suite as it is now and pins it: a later resume is not refused
    batch_file = files(out)["batch"]
    hash_before = json.loads(batch_file.read_text())["suite_info"]["hash"]
    proc = cli("run", "--resume", str(out), "--force", "-q")
    assert proc.returncode == 0, proc.stderr
    batch = json.loads(batch_file.read_text())
    assert batch["resumes"][0]["suite_hash_was"] == hash_before != batch["suite_info"]["hash"]
    assert {c["path"] for c in batch["resumes"][0]["inputs_changed"]} == \
        {str(suite / "weo.yaml"), str(suite / "cpi.yaml")}
    assert str(suite / "cpi.yaml") not in batch["inputs"]["files"]
    proc = cli("run", "--resume", str(out), "-q")
    assert proc.returncode == 0 and proc.stderr.startswith("already complete: "), proc.stderr


def test_resume_names_a_file_new_in_a_pinned_folder(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for p in SUITE.iterdir():
        (suite / p.name).write_text(p.read_text())
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(RESPONSES), "--out", str(out), "-q", "--no-report"]) == 0
    f = make_partial(out, 3)
    extra = suite / "zz.yaml"
    extra.write_text((SUITE / "cpi.yaml").read_text().replace("5eed0000", "5eed9999"))
    proc = cli("run", "--resume", str(out))
    assert proc.returncode == 2
    assert one_line(proc.stderr).startswith(f"error: input file {extra} is new since the run started;")
    proc = cli("run", "--resume", str(out), "--force", "-q")
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(f["batch"].read_text())["resumes"]
    assert entry["inputs_changed"][0]["path"] == str(extra) and entry["inputs_changed"][0]["was"] is None


def test_resume_names_a_changed_graph_that_the_cases_name(tmp_path):
    """The graph a query suite's targets name (not an option) is pinned too."""
    for p in (REPO / "examples" / "sparql").iterdir():
        (tmp_path / p.name).write_text(p.read_text())
    out = tmp_path / "o"
    assert main(["run", str(tmp_path / "suite.yaml"), "--responses", str(tmp_path / "predictions.jsonl"),
                 "--out", str(out), "-q", "--no-report",
                 "--option", f"store_dir={tmp_path / 'store'}"]) == 0
    graph = tmp_path / "building.ttl"
    assert str(graph) in json.loads(files(out)["batch"].read_text())["inputs"]["files"]
    make_partial(out, 1)
    graph.write_text(graph.read_text() + "\n# changed\n")
    proc = cli("run", "--resume", str(out))
    assert proc.returncode == 2
    assert one_line(proc.stderr).startswith(f"error: input file {graph} changed since the run started;")


def test_resume_applies_safe_options_and_refuses_the_rest(tmp_path, reference):
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q", "--no-report"]) == 0
    f = make_partial(out, 5)
    for extra, named in ((["--task", "answers"], "--task"), (["--k", "5"], "--k"),
                         (["--on-error", "skip", "--out", "x"], "--on-error, --out"),  # help order
                         ([str(SUITE)], "SUITE")):
        proc = cli("run", "--resume", str(out), *extra)
        assert proc.returncode == 2, extra
        line = one_line(proc.stderr)
        assert line.startswith(f"error: --resume keeps the run's own configuration; drop {named} "), line
    proc = cli("run", "--resume", str(out), "--retries", "101")
    assert proc.returncode == 2 and one_line(proc.stderr).startswith("error: --retries: ")
    assert len(lines_of(f["jsonl"])) == 5
    proc = cli("run", "--resume", str(out), "-c", "2", "--retries", "0", "--timeout", "9", "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"resuming: 5 done, {N_CASES - 5} to go\n"
    batch = json.loads(f["batch"].read_text())
    assert batch["resumes"][0]["options"] == {"concurrency": 2, "retries": 0, "timeout": 9.0}
    config = batch["evaluation_config"]
    assert (config["concurrency"], config["retries"], config["timeout"]) == (2, 0, 9.0)
    got = json.loads(f["metrics"].read_text())
    assert got["overall_metrics"] == reference["overall_metrics"]


# --- 7. resume of complete runs ----------------------------------------------------------------
def test_resume_of_a_complete_batch_only_rewrites_its_reports(tmp_path):
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q", "--no-report"]) == 0
    f = files(out)
    before = f["jsonl"].read_bytes()
    f["metrics"].unlink()
    proc = cli("run", "--resume", str(f["batch"]), "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (f"already complete: {f['batch']} ({N_CASES} cases); re-writing its "
                           "metrics and reports only\n")
    assert f["jsonl"].read_bytes() == before and f["metrics"].exists()


# --- 2. one process per batch -------------------------------------------------------------------
@pytest.mark.slow
def test_two_resumes_of_one_batch_at_once_the_second_is_refused(tmp_path):
    spec = slow_system(tmp_path, 0.3)  # 21 cases left at -c 1: a window of about 6 s
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--system", spec, "--out", str(out), "-q", "--no-report", "-c", "4"]) == 0
    f = make_partial(out, 2)
    first = popen("run", "--resume", str(out), "-q", "-c", "1")
    try:
        deadline = time.time() + 30  # the first holds the lock once its label is written
        while time.time() < deadline and not (f["lock"].exists() and f["lock"].read_text()):
            time.sleep(0.02)
        holder = json.loads(f["lock"].read_text())
        assert holder["pid"] == first.pid
        second = cli("run", "--resume", str(out), "-q", "-c", "1")
        assert first.poll() is None, "the first resume ended before the second was tried"
        assert second.returncode == 2
        line = one_line(second.stderr)
        assert line.startswith(f"error: {f['batch']}: in use by another queryeval run (pid {first.pid} on ")
        assert line.endswith("; wait for it to end")
    finally:
        stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    ids = [r["case_id"] for r in lines_of(f["jsonl"])]
    assert len(ids) == len(set(ids)) == N_CASES
    # the lock went with its holder: a third resume runs (and finds the batch complete)
    third = cli("run", "--resume", str(out), "-q")
    assert third.returncode == 0 and third.stderr.startswith("already complete: ")


# --- 3. paths fixed at start ----------------------------------------------------------------------
def test_relative_out_survives_a_system_that_changes_directory(tmp_path, reference):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mod = tmp_path / "wander.py"
    mod.write_text(
        "import os, sys\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n    os.chdir(%r)\n    return real(req)\n" % (str(SYSTEM.parent), str(elsewhere)))
    proc = cli("run", str(SUITE), "--system", f"python:{mod}:select", "--out", "rel/out", "-q",
               "--no-report", "-c", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not list(elsewhere.rglob("*.jsonl")) and not list(elsewhere.rglob("*.json"))
    f = files(tmp_path / "rel" / "out")
    assert len(lines_of(f["jsonl"])) == N_CASES
    assert json.loads(f["metrics"].read_text())["overall_metrics"] == reference["overall_metrics"]


# --- 4. out-of-range options ---------------------------------------------------------------------
@pytest.mark.parametrize(("extra", "start"), [
    (["--retries", "101"], "error: --retries: must be less than or equal to 100, got 101"),
    (["--concurrency", "5000"], "error: --concurrency: must be less than or equal to 1024, got 5000"),
    (["--timeout", "1e999"], "error: --timeout: must be a finite number, got inf"),
    (["--timeout", "inf"], "error: --timeout: must be a finite number, got inf"),
    (["--timeout", "nan"], "error: --timeout: must be a finite number, got nan"),
    (["--backoff", "1e9"], "error: --backoff: must be less than or equal to 604800"),
    (["--max-error-rate", "2"], "error: --max-error-rate: must be less than or equal to 1"),
    (["--timeout", "0"], "error: --timeout: must be greater than 0, got 0.0"),
    (["--concurrency", "0"], "error: --concurrency: must be greater than or equal to 1, got 0"),
])
def test_out_of_range_options_are_one_line(tmp_path, capsys, extra, start):
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), *extra]) == 2
    assert one_line(capsys.readouterr().err).startswith(start)
    assert not out.exists()


def test_an_out_folder_or_store_dir_that_is_a_file_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(blocker)]) == 2
    assert one_line(capsys.readouterr().err) == f"error: --out {blocker}: {blocker} is a file, not a folder"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(blocker / "a" / "b")]) == 2
    assert one_line(capsys.readouterr().err) == \
        f"error: --out {blocker / 'a' / 'b'}: {blocker} is a file, not a folder"
    sparql = REPO / "examples" / "sparql"
    assert main(["run", str(sparql / "suite.yaml"), "--responses", str(sparql / "predictions.jsonl"),
                 "--out", str(tmp_path / "o"), "--option", f"store_dir={blocker}"]) == 2
    assert one_line(capsys.readouterr().err) == \
        f"error: task option store_dir: {blocker} is a file, not a folder"


def test_a_full_disk_while_saving_the_xlsx_is_exactly_one_line(tmp_path):
    """openpyxl's ZipFile is left open when the disk fills; freeing it flushed into the same
    full disk and printed "Exception ignored in ZipFile.__del__" with a traceback."""
    driver = tmp_path / "drive.py"
    driver.write_text(
        "import errno, os, sys, zipfile\n"
        "import openpyxl.writer.excel as excel\n"
        "class Full(zipfile.ZipFile):\n"
        "    def writestr(self, *a, **kw):\n"
        "        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
        "    def close(self):\n"
        "        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
        "excel.ZipFile = Full\n"
        "from queryeval.cli.app import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    out = tmp_path / "o"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, str(driver), "run", str(SUITE), "--responses", str(RESPONSES),
                           "--out", str(out), "-q"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    f = files(out)
    assert proc.returncode == 2
    xlsx = f["batch"].parent / f"report_{f['batch'].stem.removeprefix('batch_')}.xlsx"
    assert proc.stderr == f"error: cannot write {xlsx}: No space left on device\n"
    # `queryeval report` writes the xlsx through the same guard
    proc = subprocess.run([sys.executable, str(driver), "report", str(f["batch"]), "--resamples", "10"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stderr == f"error: cannot write {xlsx}: No space left on device\n"


# --- 5. Ctrl-C ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_ctrl_c_marks_the_batch_interrupted_and_resume_finishes_it(tmp_path, reference):
    out = tmp_path / "o"
    proc = popen("run", str(SUITE), "--system", slow_system(tmp_path), "--out", str(out), "-q",
                 "-c", "1", "--no-report")
    wait_for_lines(out, 5, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    f = files(out)
    done = len(lines_of(f["jsonl"]))
    assert proc.returncode == 130
    assert 5 <= done < N_CASES
    assert one_line(stderr) == (f"interrupted: {done} of {N_CASES} cases done; resume with: "
                                f"queryeval run --resume {f['batch']}")
    batch = json.loads(f["batch"].read_text())
    assert batch["status"] == "interrupted" and len(batch["interrupted_at"]) == 1
    assert not f["metrics"].exists()
    resumed = cli("run", "--resume", str(f["batch"]), "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr == f"resuming: {done} done, {N_CASES - done} to go\n"
    ids = [r["case_id"] for r in lines_of(f["jsonl"])]
    assert len(ids) == len(set(ids)) == N_CASES
    got = json.loads(f["metrics"].read_text())
    assert got["overall_metrics"] == reference["overall_metrics"]
    assert got["group_metrics"] == reference["group_metrics"]
    assert json.loads(f["batch"].read_text())["status"] == "complete"


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once(tmp_path):
    """The first Ctrl-C waits for the calls in flight (here 30 s each); a second does not."""
    out = tmp_path / "o"
    proc = popen("run", str(SUITE), "--system", slow_system(tmp_path, 30), "--out", str(out), "-q",
                 "-c", "2", "--no-report")
    deadline = time.time() + 30
    while time.time() < deadline and not list(out.rglob("batch_*.json")):
        time.sleep(0.05)
    time.sleep(1.0)  # the calls are in flight
    proc.send_signal(signal.SIGINT)
    line = proc.stderr.readline()
    assert line.startswith("interrupted: 0 of 23 cases done; resume with: ")
    assert proc.poll() is None  # waiting for the two sleeping calls
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    assert time.monotonic() - t0 < 5
    assert proc.returncode == 130
    assert proc.stderr.read() == ""
    assert json.loads(files(out)["batch"].read_text())["status"] == "interrupted"


class SlowHttpSystem:
    """The example system served over loopback HTTP, each answer after ``seconds``: the
    runner calls it on its event loop (run/runner.py), the path Ctrl-C and kill -9 must
    leave as resumable as the threads do."""

    def __init__(self, seconds: float) -> None:
        import importlib.util
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        spec = importlib.util.spec_from_file_location("lifecycle_example_system", SYSTEM)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        select = module.select

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(seconds)
                data = json.dumps(select(request)).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/select"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_an_http_run_on_the_event_loop_resumes_after_ctrl_c_or_kill(tmp_path, reference, how):
    out = tmp_path / "o"
    with SlowHttpSystem(0.15) as srv:
        proc = popen("run", str(SUITE), "--system", srv.url, "--out", str(out), "-q", "-c", "2",
                     "--no-report")
        wait_for_lines(out, 5, proc)
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        _, stderr = proc.communicate(timeout=30)
        f = files(out)
        done = lines_of(f["jsonl"])  # every line whole: nothing cut, nothing lost
        assert 5 <= len(done) < N_CASES
        if how == "sigint":
            assert proc.returncode == 130
            assert one_line(stderr) == (f"interrupted: {len(done)} of {N_CASES} cases done; "
                                        f"resume with: queryeval run --resume {f['batch']}")
            assert json.loads(f["batch"].read_text())["status"] == "interrupted"
        else:
            assert proc.returncode == -signal.SIGKILL
        resumed = cli("run", "--resume", str(f["batch"]), "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr == f"resuming: {len(done)} done, {N_CASES - len(done)} to go\n"
    records = lines_of(f["jsonl"])
    assert records[:len(done)] == done  # what was written before stays as it was
    ids = [r["case_id"] for r in records]
    assert len(ids) == len(set(ids)) == N_CASES
    got = json.loads(f["metrics"].read_text())
    assert got["overall_metrics"] == reference["overall_metrics"]
    assert got["group_metrics"] == reference["group_metrics"]


# --- 6. failed calls ---------------------------------------------------------------------------------
def _all_failed(tmp_path: Path, capsys, *args: str) -> tuple[list[str], dict]:
    out = tmp_path / "o"
    code = main(["run", str(SUITE), *args, "--out", str(out), "-q", "--retries", "0", "--no-report"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "Traceback" not in err
    return err.strip().splitlines(), json.loads(files(out)["metrics"].read_text())


def _check_zero(metrics: dict) -> None:
    o = metrics["overall_metrics"]
    assert o["macro_precision"] == 0.0 and o["macro_recall"] == 0.0  # was 0.13: empty targets
    assert o["micro_recall"] == 0.0 and o["tp"] == 0
    assert o["errors"] == N_CASES
    assert metrics["calls"] == {"total": N_TURNS, "failed": N_TURNS}


def test_endpoint_down_exits_3_with_the_error_summary(tmp_path, capsys):
    lines, metrics = _all_failed(tmp_path, capsys, "--system", "http://127.0.0.1:1/select")
    _check_zero(metrics)
    (entry,) = metrics["error_summary"]
    assert entry["kind"] == "connection" and entry["count"] == N_TURNS and entry["case"] == FIRST_CASE
    assert lines[0] == f"{N_TURNS} of {N_TURNS} calls failed:"
    assert lines[1] == f"{N_TURNS} × connection: {entry['first_message']} (case {FIRST_CASE})"
    assert "Connect" in entry["first_message"]
    assert lines[2] == f"error: all {N_TURNS} calls to the system failed"
    assert len(lines) == 3


def test_a_raising_system_and_a_wrong_output_shape_exit_3(tmp_path, capsys):
    mod = tmp_path / "bad.py"
    mod.write_text("def boom(req):\n    raise RuntimeError('model\\n  \\x1b[31moverloaded')\n"
                   "def shape(req):\n    return {'answer': 42}\n")
    lines, metrics = _all_failed(tmp_path, capsys, "--system", f"python:{mod}:boom")
    _check_zero(metrics)
    assert metrics["error_summary"] == [{"kind": "exception", "count": N_TURNS, "case": FIRST_CASE,
                                         "first_message": "RuntimeError: model \\x1b[31moverloaded"}]
    # one line, and a terminal escape in a system's message is shown, not sent
    assert lines[1] == f"{N_TURNS} × exception: RuntimeError: model \\x1b[31moverloaded (case {FIRST_CASE})"
    lines, metrics = _all_failed(tmp_path / "s", capsys, "--system", f"python:{mod}:shape")
    _check_zero(metrics)
    assert metrics["error_summary"] == [{"kind": "malformed", "count": N_TURNS, "case": FIRST_CASE,
                                         "first_message": "output has no 'indicator_selection' key"}]


def test_responses_with_no_matching_id_exit_3(tmp_path, capsys):
    responses = tmp_path / "r.jsonl"
    rows = [json.loads(x) for x in RESPONSES.read_text().splitlines()]
    responses.write_text("".join(json.dumps({**r, "case_id": "x-" + r["case_id"]}) + "\n" for r in rows))
    lines, metrics = _all_failed(tmp_path, capsys, "--responses", str(responses))
    _check_zero(metrics)
    (entry,) = metrics["error_summary"]
    assert (entry["kind"], entry["count"]) == ("missing", N_TURNS)
    assert lines[-1] == f"error: all {N_TURNS} calls to the system failed"


def test_max_error_rate(tmp_path, capsys):
    mod = tmp_path / "half.py"
    mod.write_text(
        "import sys\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n"
        "    if 'GDP' in req['messages'][-1]['content']:\n"
        "        raise RuntimeError('overloaded')\n"
        "    return real(req)\n" % str(SYSTEM.parent))
    args = ["run", str(SUITE), "--system", f"python:{mod}:select", "-q", "--no-report"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0  # default 1.0: only all-failed fails
    err = capsys.readouterr().err.strip().splitlines()
    metrics = json.loads(files(tmp_path / "a")["metrics"].read_text())
    failed = metrics["calls"]["failed"]
    assert failed == metrics["error_summary"][0]["count"] and 0 < failed < N_TURNS
    assert err == [f"{failed} of {N_TURNS} calls failed:",
                   f"{failed} × exception: RuntimeError: overloaded (case {metrics['error_summary'][0]['case']})"]
    assert main([*args, "--out", str(tmp_path / "b"), "--max-error-rate", "0.1"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"error: {failed} of {N_TURNS} calls to the system failed "
                       f"({failed / N_TURNS:.1%}), more than --max-error-rate 0.1")
    # no failure: no summary lines, an empty summary in the metrics
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "-q", "--no-report",
                 "--out", str(tmp_path / "c")]) == 0
    assert capsys.readouterr().err == ""
    assert json.loads(files(tmp_path / "c")["metrics"].read_text())["error_summary"] == []


ERROR = {"kind": "connection", "message": "ConnectError: refused"}


def _case(target: dict, content: str = "q?") -> Case:
    return Case.model_validate({"id": "c1", "conversation": [
        {"role": "user", "content": content, "target": target}]})


def _scores_of_failure(task_name: str, target: dict, options: dict | None = None) -> dict:
    task = get_task(task_name, options)
    record = task.score_case(_case(target), [TurnOutcome(turn=0, error=ERROR, attempts=1)])
    again = task.rescore_record(json.loads(json.dumps(record)))
    assert again["scores"] == record["scores"]  # rescoring keeps the worst score
    assert record["status"] == "error"
    return record


def test_a_failed_call_scores_worst_on_every_task_kind():
    # selection: an absent target (expect nothing) matched by the empty output scored 1.0
    rec = _scores_of_failure("indicator_selection", {"indicator_selection": []})
    assert rec["scores"] == {"macro_precision": 0.0, "macro_recall": 0.0}
    ok = get_task("indicator_selection").score_case(
        _case({"indicator_selection": []}), [TurnOutcome(turn=0, output=[])])
    assert ok["scores"] == {"macro_precision": 1.0, "macro_recall": 1.0}  # the correct empty answer
    # fields: a field whose ground truth is empty passed with an empty output
    rec = _scores_of_failure("fields", {"fields": {"item": ["a"], "type": []}})
    assert rec["scores"] == {"recall": 0.0, "mrr": 0.0, "passed": False}
    # answers: a failed call is wrong even under missing=skip (it was skipped: no score)
    for missing in ("wrong", "skip"):
        rec = _scores_of_failure("answers", {"answers": [{"name": "a", "value": "1"}]},
                                 {"missing": missing})
        assert rec["scores"] == {"proportion_correct": 0.0, "all_correct": 0.0,
                                 "correct_subquestions": 0, "subquestions": 1}
        assert rec["skipped"] is False
    # retrieval: no chunk retrieved
    rec = _scores_of_failure("retrieval", {"retrieval": {"content_hash": "0" * 32}}, {"k": [3]})
    assert rec["scores"] == {"recall@3": 0.0, "hit_rate@3": 0.0, "mrr@3": 0.0, "ndcg@3": 0.0,
                             "map@3": 0.0, "precision@3": 0.0}


def test_a_failed_call_scores_zero_on_the_query_task(tmp_path, capsys):
    sparql = REPO / "examples" / "sparql"
    mod = tmp_path / "bad.py"
    mod.write_text("def boom(req):\n    raise RuntimeError('down')\n")
    out = tmp_path / "o"
    assert main(["run", str(sparql / "suite.yaml"), "--system", f"python:{mod}:boom", "--out", str(out),
                 "-q", "--no-report"]) == 3
    metrics = json.loads(files(out)["metrics"].read_text())
    o = metrics["overall_metrics"]
    scored = {k: v for k, v in o.items() if isinstance(v, float)}
    assert scored and set(scored.values()) == {0.0}, scored
    assert metrics["error_summary"][0]["kind"] == "exception"
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: all ")


def test_results_file_swapped_for_a_fifo_is_an_input_error_not_a_hang(tmp_path):
    """Reading a run back opens its results through the regular-file check (the viewer's and
    `report`'s path): a FIFO is refused at once."""
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q",
                 "--no-report"]) == 0
    (results,) = out.rglob("results_*.jsonl")
    results.unlink()
    os.mkfifo(results)
    code = ("import sys\nfrom queryeval.errors import InputError\n"
            "from queryeval.run.log import RunLog\n"
            f"log = RunLog.open({str(results.parent)!r})\n"
            "try:\n    list(log.scan_records())\nexcept InputError as err:\n    print(err)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.stdout.strip() == f"{results}: is a FIFO (named pipe), not a regular file; give a file"
