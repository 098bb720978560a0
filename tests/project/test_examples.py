"""The README's commands run as written, on the examples the project ships (no ../shared data).

Every ``queryeval ...`` command in README.md (its bash blocks and its task table) is read from
the README itself and run as a real subprocess in a fresh copy of ``examples/`` (relative
paths as written, outputs in the copy's ``runs/``). Commands whose results are known are also
checked against hand-computed figures. The shipped DABench-format example
(``examples/answers``) covers seed 001 end to end without the public data."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
ANSWERS = REPO / "examples" / "answers"


def readme_commands() -> list[str]:
    """``queryeval`` commands from README.md: bash-block lines (comments dropped, the part
    after ``&&``) and backticked table cells; a table's "(add `--flag value` ...)" note
    makes a second command."""
    text = README.read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = re.split(r"\s+#\s", line)[0].strip()
            for part in line.split("&&"):
                if part.strip().startswith("queryeval "):
                    commands.append(part.strip())
    for row in text.splitlines():
        if not row.startswith("|"):
            continue
        for cmd in re.findall(r"`(queryeval [^`]+)`", row):
            commands.append(cmd)
            for extra in re.findall(r"\(add `(--[^`]+)`", row):
                commands.append(f"{cmd} {extra}")
    return commands


COMMANDS = readme_commands()


def test_readme_lists_every_task_kind_and_command():
    """The parser finds what the README shows (so the test below cannot silently run less)."""
    subcommands = [shlex.split(c)[1] for c in COMMANDS]
    assert sorted(set(subcommands)) == ["run", "schema", "tokens", "trec", "tune", "validate"]
    runs = [c for c in COMMANDS if " --resume " not in c and c.startswith("queryeval run ")]
    suites = {shlex.split(c)[2] for c in runs}
    assert suites == {"examples/sdmx/suite", "examples/answers/questions.jsonl",
                      "examples/retrieval/questions.csv", "examples/sparql/suite.yaml",
                      "examples/freeform/cases.jsonl"}
    assert any("--retriever dense" in c for c in COMMANDS)
    assert len(COMMANDS) == 14


def test_every_task_kind_has_a_shipped_example_in_the_readme():
    """The README's commands cover every task kind on files in examples/ (the public check
    data in ../shared/data only adds optional reproduction checks)."""
    from queryeval.suite import load_suite
    from queryeval.tasks.base import task_names

    kinds: set[str] = set()
    for cmd in COMMANDS:
        args = shlex.split(cmd)
        if args[1] in ("run", "tune") and not args[2].startswith("-"):
            labels = args[args.index("--labels") + 1] if "--labels" in args else None
            kinds |= load_suite(REPO / args[2], labels=REPO / labels if labels else None).task_kinds()
    assert kinds == set(task_names())


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


def run_readme(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    args = shlex.split(cmd)
    assert args[0] == "queryeval"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "60"}
    return subprocess.run([sys.executable, "-m", "queryeval", *args[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def logged_files(cwd: Path, proc) -> list[Path]:
    """The files a run names (relative to ``cwd``): ``run log: FOLDER`` with the log's file
    names indented below it, then one ``report: PATH`` / ``export: PATH`` line each."""
    lines = proc.stdout.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("run log: "))
    folder = cwd / lines[start].removeprefix("run log: ")
    names = [x[2:] for x in itertools.takewhile(lambda x: x.startswith("  "), lines[start + 1:])]
    rest = [x.split(": ", 1)[1] for x in lines[start + 1 + len(names):]
            if x.startswith(("report: ", "export: "))]
    return [folder / n for n in names] + [cwd / p for p in rest]


def check_answers(cwd: Path, proc) -> None:
    """Hand-computed on the 8 recorded responses: right/M per question 1, 1, 1/2, 1/2, 0
    (missing), 2/2, 1, 1/2 -> ABQ 4/8, UASQ 8/12, PSAQ 5.5/8."""
    (metrics,) = [p for p in logged_files(cwd, proc) if p.name.startswith("metrics_")]
    o = json.loads(metrics.read_text())["overall_metrics"]
    assert (o["abq"], o["uasq"], o["psaq"]) == (0.5, 8 / 12, 5.5 / 8)
    assert (o["questions"], o["answered"], o["missing"], o["subquestions"]) == (8, 7, 1, 12)
    (export,) = (cwd / "runs").rglob("dabench_*.json")
    doc = json.loads(export.read_text())
    assert doc["main_results"] == {"Accuracy by Question": 0.5,
                                   "Accuracy Proportional by Sub-Question": 0.6875,
                                   "Accuracy by Sub-Question": 0.6667}
    # ABQ per concept: Summary Statistics holds q0 q2 q3 q4 q5 q7 (right: q0 q5)
    assert doc["concept_accuracy_analysis"]["Summary Statistics"] == round(2 / 6, 4)
    assert doc["concept_accuracy_analysis"]["Correlation Analysis"] == 1.0


def check_trec(cwd: Path, proc) -> None:
    """q1: relevant d1, d3 at ranks 1, 3 -> nDCG (1 + 1/2) / (1 + 1/log2 3); q2: gain 2 at
    rank 2 -> 1/log2 3; q3: nothing found -> 0."""
    lines = proc.stdout.splitlines()
    (row,) = [line for line in lines if line.lstrip("│ ").startswith("all")]
    import math

    if " AP " in proc.stdout:  # ir_measures' names: AP, P(rel=2)@5, RR@10
        # AP: q1 (1/1 + 2/3) / 2, q2 1/2, q3 0; P(rel=2)@5: q2's d5 (grade 2) in the top 5
        # -> 1/5; RR@10: q1 1, q2 1/2, q3 0
        ap, p_rel2, rr = ((1 + 2 / 3) / 2 + 1 / 2) / 3, (1 / 5) / 3, (1 + 1 / 2) / 3
        assert re.findall(r"\d+\.\d{4}", row) == [f"{ap:.4f}", f"{p_rel2:.4f}", f"{rr:.4f}"]
        return
    ndcg = ((1.5 / (1 + 1 / math.log2(3))) + 1 / math.log2(3)) / 3
    assert f"{ndcg:.4f}" in row and f"{2 / 3:.4f}" in row


def check_tune(cwd: Path, proc) -> None:
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("tuning: ")]
    paths = [Path(p) for p in line.removeprefix("tuning: ").split(", ")]
    assert [p.suffix for p in paths] == [".json", ".xlsx"]
    doc = json.loads((cwd / paths[0]).read_text())
    assert [r["Field Name"] for r in doc["rows"]] == ["item", "price_type", "category"]
    assert paths[0].parent.parent == Path("runs")


def check_run(cwd: Path, proc, cmd: str) -> None:
    """Every run writes the log, the Excel report and the HTML report, as the README says."""
    files = logged_files(cwd, proc)
    batch = files[0]
    bid = batch.stem.removeprefix("batch_")
    assert batch.name == f"batch_{bid}.json" and batch.parent.parent == cwd / "runs"
    names = [f"results_{bid}.jsonl", f"results_{bid}.csv", f"metrics_{bid}.json",
             f"report_{bid}.xlsx", f"report_{bid}.html"]
    if "--export dabench" in cmd:  # the export is named on the same line
        names.append(f"dabench_{bid}.json")
    if "retrieval" in cmd:  # and one derived batch per smaller k
        derived = [x for x in proc.stdout.splitlines() if x.startswith("derived batch ")]
        ks = shlex.split(cmd)[shlex.split(cmd).index("--k") + 1].split(",")
        assert len(derived) == len(ks) - 1  # the run's own batch is scored at the largest k
    assert files[1:] == [batch.parent / name for name in names]
    for path in files:
        assert path.is_file(), path


CHECKS = {"examples/answers/questions.jsonl": check_answers, "trec": check_trec,
          "tune": check_tune}


def _id(cmd: str) -> str:
    return re.sub(r"[^\w.@-]+", "_", cmd.removeprefix("queryeval "))[:60]


@pytest.mark.parametrize("cmd", [
    pytest.param(c, marks=pytest.mark.slow) if "--retriever dense" in c else c for c in COMMANDS
], ids=[_id(c) for c in COMMANDS])
def test_readme_command_runs_as_written(workdir, cmd):
    if " --resume " in cmd:  # continues the setup command's run
        setup = next(c for c in COMMANDS if c.startswith("queryeval run examples/sdmx/suite --resp"))
        assert run_readme(setup, workdir).returncode == 0
    proc = run_readme(cmd, workdir)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr.lower()
    args = shlex.split(cmd)
    if args[1] == "run":
        check_run(workdir, proc, cmd)
    check = CHECKS.get(args[2] if args[1] == "run" else args[1])
    if check is not None:
        check(workdir, proc)


# ---------------------------------------------------------------- the DABench example itself
@pytest.mark.parametrize(("match", "missing", "want"), [
    ("numeric", "wrong", (4 / 8, 8 / 12, 5.5 / 8)),
    # strict: "0.980" no longer equals "0.98" (q1), nor "0.7" "0.70" (q6)
    ("strict", "wrong", (2 / 8, 6 / 12, 3.5 / 8)),
    ("numeric", "skip", (4 / 7, 8 / 11, 5.5 / 7)),  # question 4 (null) leaves the denominators
    ("strict", "skip", (2 / 7, 6 / 11, 3.5 / 7)),
])
def test_dabench_example_scores(tmp_path, match, missing, want):
    from queryeval.cli.app import main

    out = tmp_path / "runs"
    assert main(["run", str(ANSWERS / "questions.jsonl"), "--labels", str(ANSWERS / "labels.jsonl"),
                 "--responses", str(ANSWERS / "responses.jsonl"), "--match", match,
                 "--missing", missing, "--out", str(out), "-q", "--no-report"]) == 0
    (path,) = out.rglob("metrics_*.json")
    o = json.loads(path.read_text())["overall_metrics"]
    assert (o["abq"], o["uasq"], o["psaq"]) == pytest.approx(want)


@pytest.mark.parametrize("match", ["numeric", "strict"])
def test_dabench_example_labels_as_responses_score_one(tmp_path, match):
    """The shipped counterpart of the public-data check: responses written from the labels
    score 1.0 everywhere, in every group."""
    from queryeval.cli.app import main

    responses = tmp_path / "perfect.jsonl"
    with responses.open("w") as fh:
        for line in (ANSWERS / "labels.jsonl").read_text().splitlines():
            lab = json.loads(line)
            text = "Answer: " + " ".join(f"@{n}[{v}]" for n, v in lab["common_answers"])
            fh.write(json.dumps({"id": lab["id"], "response": text}) + "\n")
    out = tmp_path / "o"
    assert main(["run", str(ANSWERS / "questions.jsonl"), "--labels", str(ANSWERS / "labels.jsonl"),
                 "--responses", str(responses), "--match", match, "--out", str(out), "-q",
                 "--no-report"]) == 0
    (path,) = out.rglob("metrics_*.json")
    doc = json.loads(path.read_text())
    o = doc["overall_metrics"]
    assert (o["psaq"], o["abq"], o["uasq"], o["questions"], o["missing"]) == (1.0, 1.0, 1.0, 8, 0)


def test_dabench_example_tables_are_named_by_the_questions():
    """Every question's file_name is a shipped table, and its labels match what the table
    gives (recomputed here from the CSV, so the example's answers are true)."""
    import csv
    import statistics as st

    questions = [json.loads(x) for x in (ANSWERS / "questions.jsonl").read_text().splitlines()]
    assert {q["file_name"] for q in questions} == {p.name for p in (ANSWERS / "tables").iterdir()}
    labels = {json.loads(x)["id"]: dict(json.loads(x)["common_answers"])
              for x in (ANSWERS / "labels.jsonl").read_text().splitlines()}
    orchard = list(csv.DictReader((ANSWERS / "tables" / "orchard.csv").open()))
    yields = [float(r["yield_kg"]) for r in orchard]
    ages = [float(r["age_years"]) for r in orchard]
    assert labels[0]["mean_yield"] == f"{st.mean(yields):.2f}"
    assert labels[1]["correlation_coefficient"] == f"{st.correlation(ages, yields):.2f}"
    assert labels[3]["yield_std"] == f"{st.stdev(yields):.2f}"
    commute = list(csv.DictReader((ANSWERS / "tables" / "commute.csv").open()))
    assert labels[4]["mean_minutes"] == f"{st.mean(float(r['minutes']) for r in commute):.2f}"
    assert labels[7]["friday_trips"] == str(sum(r["weekday"] == "Fri" for r in commute))


# ---------------------------------------------------------------- tune: progress and output
def test_rank_fields_reports_every_step():
    """One progress call before loading each model, one before ranking each field, one at the
    end; ``done`` counts finished steps out of models x (1 + fields)."""
    from queryeval.suite.fields import load_data_table
    from queryeval.tune.retrieve import rank_fields

    table = load_data_table(REPO / "examples" / "fields" / "ingredients.csv")
    calls: list[tuple[str, int, int]] = []
    rank_fields(table, ["cheap milk", "fresh basil"], ["item", "category"], ["bm25"],
                progress=lambda text, done, total: calls.append((text, done, total)))
    n_items = len(table.fields["item"].values)
    n_cats = len(table.fields["category"].values)
    assert calls == [("loading bm25, embedding 2 questions", 0, 3),
                     (f"bm25: ranking {n_items} values of item", 1, 3),
                     (f"bm25: ranking {n_cats} values of category", 2, 3),
                     ("ranked", 3, 3)]


def test_tune_shows_progress_on_a_terminal_and_writes_beside_the_runs(tmp_path, monkeypatch,
                                                                        capsys):
    """On a terminal every step shows on stderr; -q hides it (and the table) but still writes
    the result under --out and prints its path."""
    import io

    from rich.console import Console

    from queryeval.cli import console as console_mod
    from queryeval.cli.app import main

    fields = REPO / "examples" / "fields"
    args = ["tune", str(fields / "evaluation.csv"), "--data", str(fields / "ingredients.csv"),
            "--model", "bm25"]
    screen = io.StringIO()
    monkeypatch.setattr(console_mod, "err_console",
                        Console(file=screen, force_terminal=True, width=200))
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    shown = screen.getvalue()
    for step in ("reading the tables", "loading bm25, embedding 20 questions",
                 "bm25: ranking 60 values of item", "choosing N for 3 fields"):
        assert step in shown, step
    out = capsys.readouterr().out
    assert "N and model per field" in out
    (json_path,) = (tmp_path / "a").rglob("tuning_*.json")
    assert f"tuning: {json_path}, {json_path.with_suffix('.xlsx')}\n" in out

    screen.truncate(0)
    assert main([*args, "--out", str(tmp_path / "b"), "-q"]) == 0
    assert screen.getvalue() == ""
    out = capsys.readouterr().out
    (json_path,) = (tmp_path / "b").rglob("tuning_*.json")
    assert out == f"tuning: {json_path}, {json_path.with_suffix('.xlsx')}\n"
    doc = json.loads(json_path.read_text())
    assert doc["summary"]["questions"] == 20 and len(doc["rows"]) == 3


def test_sql_example_without_its_database_says_how_to_build_it(tmp_path):
    """examples/sql ships shop.sql and build_db.py, not the database: the error says to run
    build_db.py first (one line, exit 2), and the run works once it has been run."""
    sql = tmp_path / "sql"
    shutil.copytree(REPO / "examples" / "sql", sql, ignore=shutil.ignore_patterns("*.sqlite"))
    args = [sys.executable, "-m", "queryeval", "run", str(sql / "suite.yaml"), "--responses",
            str(sql / "predictions.jsonl"), "--out", str(tmp_path / "runs"), "-q", "--no-report"]
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: {sql / 'shop.sqlite'}: sqlite database file not found (build "
                           f"it first: python {sql / 'build_db.py'})\n")
    subprocess.run([sys.executable, str(sql / "build_db.py")], check=True, capture_output=True)
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
