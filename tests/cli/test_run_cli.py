"""The run end to end through the CLI: the README's example command, the four log files and
the xlsx, bad input (exit 2, one line, no traceback), a run killed with SIGKILL and resumed."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.run.log import LOG_SCHEMA, RunLog

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "sdmx" / "suite"
RESPONSES = REPO / "examples" / "sdmx" / "responses.jsonl"
SYSTEM = REPO / "examples" / "sdmx" / "system.py"


def run_files(out: Path) -> dict[str, Path]:
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    folder = batch.parent
    return {
        "batch": batch, "jsonl": folder / f"results_{bid}.jsonl", "csv": folder / f"results_{bid}.csv",
        "metrics": folder / f"metrics_{bid}.json", "xlsx": folder / f"report_{bid}.xlsx",
    }


def cli(*args: str, cwd: Path = REPO, timeout: float = 120, columns: int | None = None
        ) -> subprocess.CompletedProcess:
    """The real command in a subprocess. ``columns`` sets COLUMNS (pytest's readline import
    sets COLUMNS=80 for children; other callers may have any width or none)."""
    env = dict(os.environ)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "queryeval", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False, env=env)


def test_example_run_writes_the_four_log_files_and_the_report(tmp_path):
    out = tmp_path / "runs"
    code = main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q"])
    assert code == 0
    files = run_files(out)
    for path in files.values():
        assert path.is_file(), path
    assert files["batch"].parent.name == time.strftime("%Y-%m-%d")
    batch = json.loads(files["batch"].read_text())
    assert batch["log_schema"] == LOG_SCHEMA and batch["status"] == "complete"
    assert batch["evaluation_config"]["num_samples"] == 23
    assert batch["suite_info"]["hash"].startswith("sha256:")
    assert batch["software_info"]["package_version"]
    lines = files["jsonl"].read_text().splitlines()
    assert len(lines) == 23
    assert len({json.loads(line)["case_id"] for line in lines}) == 23
    metrics = json.loads(files["metrics"].read_text())
    overall = metrics["overall_metrics"]
    assert set(metrics["group_metrics"]) == {"tag", "dimension", "dataset"}
    # the means in overall_metrics are the means of the per-case figures in the JSONL
    cases = [json.loads(line) for line in lines]
    assert overall["macro_recall"] == pytest.approx(
        sum(c["scores"]["macro_recall"] for c in cases) / 23)
    assert overall["macro_precision"] == pytest.approx(
        sum(c["scores"]["macro_precision"] for c in cases) / 23)
    assert overall["total_cases"] == 23 and overall["scored_turns"] == 25 and overall["errors"] == 0
    header = files["csv"].read_text().splitlines()[0]
    assert header.startswith("case_id,name,tags,turn,dataset_id,dimension,in_target,tp,fp,fn")


def test_python_and_cmd_systems_give_the_same_metrics(tmp_path):
    m = {}
    for name, spec in {"python": f"python:{SYSTEM}:select",
                       "cmd": f"cmd:{sys.executable} {SYSTEM}",
                       }.items():
        out = tmp_path / name
        assert main(["run", str(SUITE), "--system", spec, "--out", str(out), "-q", "--no-report"]) == 0
        m[name] = json.loads(run_files(out)["metrics"].read_text())["overall_metrics"]
    out = tmp_path / "recorded"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q", "--no-report"]) == 0
    m["recorded"] = json.loads(run_files(out)["metrics"].read_text())["overall_metrics"]
    assert m["python"] == m["cmd"] == m["recorded"]


def test_bad_input_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "mex.yaml"
    bad.write_text("id: x\nconversation:\n- role: user\n  content: hi\n  target:\n    indicator_selection:\n    - dimensions: []\n")
    proc = cli("run", str(bad), "--responses", str(RESPONSES), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {bad}:7: conversation[0].target.indicator_selection[0].dataset_id: field required"
    assert "Traceback" not in proc.stderr
    debug = cli("--debug", "validate", str(bad))
    assert debug.returncode == 2 and "Traceback" in debug.stderr
    assert not (tmp_path / "o").exists()


def test_option_errors_exit_2(tmp_path):
    proc = cli("run", str(SUITE), "--out", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr == "error: give --system or --responses\n"
    proc = cli("run", str(SUITE), "--responses", str(RESPONSES), "--option", "nope=1", "--out", str(tmp_path))
    assert proc.returncode == 2 and "task option nope" in proc.stderr
    proc = cli("run", str(SUITE), "--responses", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path))
    assert proc.returncode == 2 and "missing.jsonl: cannot read file" in proc.stderr


def deep_copy_of_suite(tmp_path: Path) -> Path:
    """The example suite at a path of well over 100 characters."""
    import shutil

    deep = tmp_path.joinpath(*(["a_rather_long_folder_name_for_the_path_test"] * 4)) / "suite"
    shutil.copytree(SUITE, deep)
    assert len(str(deep)) > 150
    return deep


@pytest.mark.parametrize("columns", [20, 80, None])
def test_validate_and_schema_commands(tmp_path, columns):
    """validate's line is one line whatever the width and the path length (it wrapped at
    COLUMNS=80 once the checkout path passed ~16 characters)."""
    suite = deep_copy_of_suite(tmp_path)
    proc = cli("validate", str(suite), columns=columns)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (f"{suite}: ok, 23 cases, 25 scored turns, 3 file(s), "
                           "tasks: indicator_selection\n")
    proc = cli("schema", columns=columns)
    schema = json.loads(proc.stdout)
    assert schema["title"] == "queryeval test case"


def logged(stdout: str) -> dict[str, list[Path]]:
    """The files a run's output names: ``run log: FOLDER`` with the log's file names indented
    below it, then ``report: PATH`` and ``export: PATH`` lines."""
    lines = stdout.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("run log: "))
    folder = Path(lines[start].removeprefix("run log: "))
    names = [x[2:] for x in itertools.takewhile(lambda x: x.startswith("  "), lines[start + 1:])]
    after = lines[start + 1 + len(names):]
    return {"log": [folder / n for n in names],
            "report": [Path(x.removeprefix("report: ")) for x in after if x.startswith("report: ")],
            "export": [Path(x.removeprefix("export: ")) for x in after if x.startswith("export: ")]}


def test_run_log_names_the_folder_and_each_file_on_its_own_line(tmp_path):
    """The folder on the ``run log:`` line, the log's files indented below it, each report
    on its own ``report:`` line (all were one ~1,000-character line); none wrapped at 30
    columns."""
    out = deep_copy_of_suite(tmp_path).parent / "runs"
    proc = cli("run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q",
               columns=30)
    assert proc.returncode == 0, proc.stderr
    files = run_files(out)
    bid = files["batch"].stem.removeprefix("batch_")
    folder = files["batch"].parent
    assert proc.stdout.splitlines() == [
        f"run log: {folder}", f"  batch_{bid}.json", f"  results_{bid}.jsonl",
        f"  results_{bid}.csv", f"  metrics_{bid}.json", f"report: {folder / f'report_{bid}.xlsx'}",
        f"report: {folder / f'report_{bid}.html'}"]
    assert logged(proc.stdout)["log"] == [files[k] for k in ("batch", "jsonl", "csv", "metrics")]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002], ids=["022", "077", "002"])
def test_output_files_follow_the_umask(tmp_path, umask):
    """Every file of a run (atomic writes via mkstemp too) gets 0o666 & ~umask, as
    open(path, "w") would; mkstemp alone left them 0600."""
    out = tmp_path / "runs"
    old = os.umask(umask)
    try:
        code = main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q"])
    finally:
        os.umask(old)
    assert code == 0
    written = [p for p in out.rglob("*") if p.is_file()]
    # .batch_<id>.lock: the batch's lock file, kept (flock on a file that stays is race-free)
    assert {p.suffix for p in written} == {".json", ".jsonl", ".csv", ".xlsx", ".html", ".lock"}
    for path in written:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


def test_failing_system_is_recorded_and_the_run_goes_on(tmp_path):
    mod = tmp_path / "half.py"
    mod.write_text(
        "import sys\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n"
        "    if 'GDP' in req['messages'][-1]['content']:\n"
        "        raise RuntimeError('model overloaded')\n"
        "    return real(req)\n" % str(SYSTEM.parent))
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--system", f"python:{mod}:select", "--out", str(out), "-q"]) == 0
    files = run_files(out)
    records = [json.loads(x) for x in files["jsonl"].read_text().splitlines()]
    errored = [r for r in records if r["status"] == "error"]
    assert len(records) == 23 and len(errored) == 6
    assert all(r["error_kinds"] == ["exception"] for r in errored)
    overall = json.loads(files["metrics"].read_text())["overall_metrics"]
    assert overall["errors"] == 6 and overall["errors_by_kind"] == {"exception": 6}
    # on_error=skip leaves the failed cases out of the means
    out2 = tmp_path / "o2"
    assert main(["run", str(SUITE), "--system", f"python:{mod}:select", "--out", str(out2), "-q",
                 "--on-error", "skip", "--no-report"]) == 0
    overall2 = json.loads(run_files(out2)["metrics"].read_text())["overall_metrics"]
    assert overall2["scored_cases"] == 17 and overall2["total_cases"] == 23


def test_killed_run_resumes_without_losing_or_repeating_a_case(tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import sys, time\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n    time.sleep(0.15)\n    return real(req)\n" % str(SYSTEM.parent))
    spec = f"python:{slow}:select"
    # the uninterrupted reference run
    ref = tmp_path / "ref"
    assert main(["run", str(SUITE), "--system", spec, "--out", str(ref), "-q", "-c", "2", "--no-report"]) == 0
    ref_metrics = json.loads(run_files(ref)["metrics"].read_text())
    # a run killed with SIGKILL part-way
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "queryeval", "run", str(SUITE), "--system", spec,
                             "--out", str(out), "-q", "-c", "2"], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    jsonl = None
    while time.time() < deadline:
        found = list(out.rglob("results_*.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 6:
            jsonl = found[0]
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert jsonl is not None, "the run never wrote results"
    partial = len(jsonl.read_text().splitlines())
    assert 6 <= partial < 23
    files = run_files(out)
    assert not files["metrics"].exists()
    assert json.loads(files["batch"].read_text())["status"] == "running"
    # simulate the line being written at the moment of the kill
    with open(jsonl, "a") as fh:
        fh.write('{"case_id": "half-writ')
    assert main(["run", "--resume", str(out), "-q"]) == 0
    lines = jsonl.read_text().splitlines()
    ids = [json.loads(x)["case_id"] for x in lines]
    assert len(ids) == 23 and len(set(ids)) == 23
    got = json.loads(files["metrics"].read_text())
    assert got["overall_metrics"] == ref_metrics["overall_metrics"]
    assert got["group_metrics"] == ref_metrics["group_metrics"]
    assert json.loads(files["batch"].read_text())["status"] == "complete"
    assert files["xlsx"].exists()


def test_resume_refuses_a_changed_suite_and_ambiguous_folders(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text((SUITE / "cpi.yaml").read_text())
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(RESPONSES), "--out", str(out), "-q"]) == 0
    log = RunLog.open(next(out.rglob("batch_*.json")))
    suite.write_text(suite.read_text().replace("Mexico", "Mexico City"))
    proc = cli("run", "--resume", str(log.paths.batch))
    assert proc.returncode == 2 and "changed since the run started" in proc.stderr
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q"]) == 0
    proc = cli("run", "--resume", str(out))
    assert proc.returncode == 2 and "all 2 runs in this folder are complete" in proc.stderr
    assert "queryeval report BATCH_FILE" in proc.stderr
    for batch in out.rglob("batch_*.json"):  # two unfinished batches: which one is meant?
        batch.write_text(batch.read_text().replace('"status": "complete"', '"status": "interrupted"'))
    proc = cli("run", "--resume", str(out))
    assert proc.returncode == 2 and "expected one unfinished batch to resume, found 2" in proc.stderr


def test_resume_retry_errors_redoes_only_failed_cases(tmp_path):
    state = tmp_path / "state"
    mod = tmp_path / "flaky.py"
    mod.write_text(
        "import sys, pathlib\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n"
        "    if not pathlib.Path(%r).exists() and 'Mexico' in req['messages'][-1]['content']:\n"
        "        raise RuntimeError('down')\n"
        "    return real(req)\n" % (str(SYSTEM.parent), str(state)))
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--system", f"python:{mod}:select", "--out", str(out), "-q", "--no-report"]) == 0
    before = json.loads(run_files(out)["metrics"].read_text())["overall_metrics"]
    assert before["errors"] > 0
    state.touch()
    assert main(["run", "--resume", str(out), "--retry-errors", "-q"]) == 0
    files = run_files(out)
    after = json.loads(files["metrics"].read_text())["overall_metrics"]
    assert after["errors"] == 0
    ids = [json.loads(x)["case_id"] for x in files["jsonl"].read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 23


def test_usage_errors_exit_2_without_traceback(tmp_path):
    for args in (["run", "--bogus"], ["report", "a", "b"], ["run", str(SUITE), "--concurrency", "zero"]):
        proc = cli(*args)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr and proc.stderr.startswith("error: ")
        assert len(proc.stderr.splitlines()) == 1, proc.stderr


def test_fail_under_gates_the_exit_code(tmp_path):
    args = ["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(tmp_path), "-q", "--no-report"]
    passed = cli(*args, "--fail-under", "macro_recall=0.8", "--fail-under", "macro_precision=0.8")
    assert passed.returncode == 0 and "gates passed: macro_recall >= 0.8, macro_precision >= 0.8" in passed.stdout
    failed = cli(*args, "--fail-under", "macro_recall=0.9")
    assert failed.returncode == 1
    assert "macro_recall = 0.8478 < 0.9" in failed.stderr
    # the run log is complete even when the gate fails
    assert len(list(tmp_path.rglob("metrics_*.json"))) == 2
    unknown = cli(*args, "--fail-under", "recall=0.9")
    assert unknown.returncode == 2 and "macro_recall" in unknown.stderr


def test_a_stray_validation_error_is_one_line(monkeypatch, capsys):
    """The last resort in cli/app.py: a pydantic ValidationError that escaped the up-front
    checks is one line and exit 2, never a traceback."""
    from pydantic import BaseModel

    import queryeval.run.evaluate as evaluate

    class Strict(BaseModel):
        retries: int

    def start_run(config, **kw):
        Strict(retries="many")

    monkeypatch.setattr(evaluate, "start_run", start_run)
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: retries: Input should be a valid integer") and err.count("\n") == 1


def test_repeats_table_printed_once_and_run_log_names_every_file(tmp_path):
    """The summary holds the Repeats table once (it was printed twice); the `run log:` line
    names the dabench export too."""
    out = tmp_path / "o"
    proc = subprocess.run(
        [sys.executable, "-m", "queryeval", "run", str(SUITE), "--system",
         f"python:{SYSTEM}:select", "--repeats", "2", "--out", str(out)],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Repeats: 2 attempts per case") == 1
    # the bar counts attempts (23 cases × 2), not "cases"
    (bar,) = [x for x in proc.stderr.splitlines() if "46/46" in x]
    assert bar.startswith("attempts ") and "cases" not in proc.stderr
    answers = REPO / "examples" / "answers"
    proc = subprocess.run(
        [sys.executable, "-m", "queryeval", "run", str(answers / "questions.jsonl"), "--labels",
         str(answers / "labels.jsonl"), "--responses", str(answers / "responses.jsonl"),
         "--export", "dabench", "--out", str(tmp_path / "a"), "-q"],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    (dabench,) = (tmp_path / "a").rglob("dabench_*.json")
    assert logged(proc.stdout)["export"] == [dabench]


def test_trec_per_query_heading_is_one_plain_line(tmp_path):
    """``trec --per-query`` says above its table, on one line, what was scored and what
    became of judged queries the run lacks (q9 is judged, absent from the run)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text((REPO / "examples/trec/qrels.txt").read_text() + "q9 0 d1 1\n")
    env = {**os.environ, "COLUMNS": "200"}
    code = "import sys\nfrom queryeval.cli.app import main\nsys.exit(main(sys.argv[1:]))"
    for mode, fate in (("zero", "each scores 0"), ("skip", "left out")):
        proc = subprocess.run([sys.executable, "-c", code, "trec", str(qrels),
                               str(REPO / "examples/trec/run.txt"), "-m", "map", "--per-query",
                               "--missing-query", mode], capture_output=True, text=True,
                              env=env, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        n = 4 if mode == "zero" else 3
        assert proc.stdout.splitlines()[0] == (
            f"run.txt scored against qrels.txt: {n} queries; 1 judged query is absent from the "
            f"run ({fate}, --missing-query {mode})")
        assert proc.stdout.splitlines()[1].startswith("┏")


@pytest.mark.parametrize("responses, held, other, suite, task, need", [
    ("sparql/predictions.jsonl", "a 'query'", "query", "sdmx/suite", "indicator_selection",
     "indicator_selection"),
    ("retrieval/responses.jsonl", "a 'retrieved_chunks'", "retrieval", "sdmx/suite",
     "indicator_selection", "indicator_selection"),
    ("sdmx/responses.jsonl", "an 'indicator_selection'", "indicator_selection",
     "answers/questions.jsonl", "answers", "response"),
])
def test_responses_of_another_task_say_so(tmp_path, responses, held, other, suite, task, need):
    """Recorded outputs written for another task: the line names the output it holds and
    the output the suite's task needs (not 'query: extra inputs are not permitted')."""
    ex = REPO / "examples"
    extra = ["--labels", str(ex / "answers/labels.jsonl")] if task == "answers" else []
    proc = cli("run", str(ex / suite), *extra, "--responses", str(ex / responses),
               "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert proc.stderr == (f"error: {ex / responses}:1: this line holds {held} output (task "
                           f"{other}), but the suite's task is {task} (it needs '{need}')\n")
    assert not (tmp_path / "o").exists()


def test_unknown_retrieval_dataset_names_the_option_and_the_datasets(tmp_path):
    """``--dataset`` with a name the suite lacks (alone or beside a known one) fails before
    any call, naming the option and listing the suite's datasets."""
    ex = REPO / "examples" / "retrieval"
    base = ["run", str(ex / "questions.csv"), "--corpus", str(ex / "corpus.jsonl"),
            "--out", str(tmp_path / "o")]
    for extra in (["--dataset", "Nowhere"], ["--dataset", "Lakeside Transit", "--dataset", "Nowhere"]):
        proc = cli(*base, *extra)
        assert (proc.returncode, proc.stderr) == (2, (
            "error: --dataset 'Nowhere': no case of the suite is in that dataset; its datasets: "
            "'Lakeside Transit', 'Riverside Benefits'\n"))
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("option, value, message", [
    ("--model", "nope", "error: unknown model 'nope': "),
    ("--data", "missing.csv", "error: {tmp}/missing.csv: cannot read file"),
])
def test_tune_bad_option_is_one_line(tmp_path, option, value, message):
    """``tune`` with a bad --model or --data: the error line alone on stderr (no empty line
    left by the progress display before it)."""
    ex = REPO / "examples" / "fields"
    args = {"--data": str(ex / "ingredients.csv"), "--model": "bm25"}
    args[option] = str(tmp_path / value) if option == "--data" else value
    proc = cli("tune", str(ex / "evaluation.csv"), *[x for kv in args.items() for x in kv],
               "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(message.format(tmp=tmp_path)), proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr


def test_an_oversized_recorded_response_is_an_error_on_its_case(tmp_path, monkeypatch):
    """A recorded line over the HTTP adapter's size cap is a ``malformed`` error on its case
    with one message naming the line; the run goes on and the output is copied neither into
    the results JSONL nor into the CSV (a 120 MB line was copied into both)."""
    from queryeval.systems.http import HttpSystem
    from queryeval.systems.recorded import RecordedSystem

    cap = getattr(RecordedSystem, "max_response_bytes", None)
    monkeypatch.setattr(RecordedSystem, "max_response_bytes", 4000, raising=False)
    lines = RESPONSES.read_text().splitlines()
    big = json.loads(lines[2])
    big["indicator_selection"][0]["dimensions"][0]["values"][0]["name"] = "BIGBIGBIG" * 1000
    lines[2] = json.dumps(big)
    responses = tmp_path / "responses.jsonl"
    responses.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(responses), "--out", str(out), "-q"]) == 0
    files = run_files(out)
    records = [json.loads(x) for x in files["jsonl"].read_text().splitlines()]
    errored = [r for r in records if r["status"] == "error"]
    assert len(records) == 23 and [r["case_id"] for r in errored] == [big["case_id"]]
    assert errored[0]["error_kinds"] == ["malformed"]
    size = len(lines[2].encode()) + 1  # with its newline
    assert f"responses.jsonl line 3 is {size:,} bytes, over the 4,000-byte cap" in json.dumps(
        errored[0])
    for path in (files["jsonl"], files["csv"]):
        assert "BIGBIG" not in path.read_text()
    assert cap == HttpSystem("http://x").max_response_bytes == 64 * 1024 * 1024
    # shipped to Ray workers (pickled: the outputs travel), the line is still refused
    import pickle

    from queryeval.errors import SystemCallError
    from queryeval.tasks.base import get_task

    system = pickle.loads(pickle.dumps(RecordedSystem.load(responses, get_task("indicator_selection"))))
    with pytest.raises(SystemCallError, match="line 3 is .* over the 4,000-byte cap"):
        system.call({"case_id": big["case_id"]}, None)


def test_resume_takes_any_file_of_the_batch(tmp_path, capsys):
    """``--resume`` takes any file of a batch, as ``report`` and ``compare`` do (it refused
    ``results_<id>.jsonl``); the unfinished run is continued to the same 23 records."""
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q",
                 "--no-report"]) == 0
    files = run_files(out)
    full = files["jsonl"].read_text().splitlines()
    metrics = json.loads(files["metrics"].read_text())["overall_metrics"]
    for key in ("jsonl", "csv", "metrics"):
        files["jsonl"].write_text("\n".join(full[:10]) + "\n")  # an interrupted run
        batch = json.loads(files["batch"].read_text())
        files["batch"].write_text(json.dumps({**batch, "status": "interrupted"}))
        assert main(["run", "--resume", str(files[key]), "-q"]) == 0, capsys.readouterr().err
        ids = [json.loads(x)["case_id"] for x in files["jsonl"].read_text().splitlines()]
        assert len(ids) == len(set(ids)) == 23, key
        assert json.loads(files["metrics"].read_text())["overall_metrics"] == metrics
    assert main(["run", "--resume", str(tmp_path / "notes_x.json"), "-q"]) == 2
    assert "not a batch_<id>.json file, a file of the batch or a run folder" in capsys.readouterr().err


@pytest.mark.parametrize(("after", "what"), [("--k", "is an option"),
                                             ("--responses", "is an option"),
                                             ("--bogus", "looks like an option")])
def test_an_option_without_its_value_is_named(tmp_path, capsys, after, what):
    """``--corpus --k 5``: click took ``--k`` as the corpus and reported "unexpected extra
    argument (5)"; the message names the option that lacks its value."""
    code = main(["run", str(SUITE), "--corpus", after, "5", "--out", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: --corpus: needs a value (the next word, {after}, {what}; a value starting "
        "with -- is given as --corpus=VALUE)\n")
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_report_output_writes_only_beside_the_given_file(tmp_path):
    """``report RUN --output X`` writes X and the Excel report beside X; the run's folder is
    left byte for byte as it was (the xlsx in it was rewritten)."""
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q"]) == 0
    files = run_files(out)
    before = {p: p.read_bytes() for p in files["batch"].parent.iterdir()}
    target = tmp_path / "elsewhere" / "mine.html"
    assert main(["report", str(files["jsonl"]), "--output", str(target)]) == 0
    assert {p: p.read_bytes() for p in files["batch"].parent.iterdir()} == before
    bid = files["batch"].stem.removeprefix("batch_")
    assert sorted(p.name for p in target.parent.iterdir()) == ["mine.html", f"report_{bid}.xlsx"]
