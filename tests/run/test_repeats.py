"""Runs with --repeats: one record per (case, repeat), pass rate / pass@k / pass^k against
analytic values (a seeded random system with known pass probabilities) and EXACTLY against a
brute-force count over the recorded attempts, resume after SIGKILL, the log of a run without
repeats unchanged."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

import queryeval as qe
from helpers.repeats import CASES, MEX, N_CASES, PROBS, seeded_bot, sel  # noqa: E402,F401
from queryeval.cli.app import main
from queryeval.errors import ConfigError
from queryeval.run.repeats import pass_at_k, pass_hat_k, sample_std

REPO = Path(__file__).resolve().parents[2]


SYSTEM_SRC = '''
import random, time
MEX = ("MEX", "Mexico")
PROBS = {f"c{i:02d}": i / 39 for i in range(40)}
def sel(*terms):
    return [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": i, "name": n} for i, n in terms]}]}]
def bot(req):
    """Right with probability PROBS[case], drawn from a generator seeded by (case, repeat)."""
    rng = random.Random(f"seed-11:{req['case_id']}:{req.get('repeat', 0)}")
    return {"indicator_selection": sel(MEX) if rng.random() < PROBS[req["case_id"]] else []}
def slow(req):
    time.sleep(0.03)
    return bot(req)
'''


@pytest.fixture
def system_module(tmp_path):
    path = tmp_path / "seeded.py"
    path.write_text(SYSTEM_SRC)
    return path


def records_of(run_dir: Path) -> list[dict]:
    jsonl = next(run_dir.rglob("results_*.jsonl"))
    return [json.loads(line) for line in jsonl.read_text().splitlines()]


# --- estimators -------------------------------------------------------------------------------
def brute_pass_at_k(flags: list[bool], k: int) -> Fraction:
    subsets = list(itertools.combinations(flags, k))
    return Fraction(sum(1 for s in subsets if any(s)), len(subsets))


def brute_pass_hat_k(flags: list[bool], k: int) -> Fraction:
    subsets = list(itertools.combinations(flags, k))
    return Fraction(sum(1 for s in subsets if all(s)), len(subsets))


def test_estimators_hand_values_and_brute_force():
    assert pass_at_k(5, 2, 3) == 0.9  # 1 - C(3,3)/C(5,3) = 1 - 1/10
    assert pass_hat_k(5, 2, 2) == 0.1  # C(2,2)/C(5,2)
    assert pass_hat_k(5, 2, 3) == 0.0 and pass_at_k(5, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == 0.25 == pass_hat_k(4, 1, 1)
    for n in range(1, 8):
        for c in range(n + 1):
            flags = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == float(brute_pass_at_k(flags, k))
                assert pass_hat_k(n, c, k) == float(brute_pass_hat_k(flags, k))
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    assert sample_std([1.0, 0.0]) == math.sqrt(0.5) and sample_std([2.0]) == 0.0


# --- the seeded system, N = 20 ------------------------------------------------------------------
def test_seeded_system_matches_analytic_values_and_brute_force(tmp_path):
    n, ks = 20, [1, 3, 5]
    run = qe.evaluate(CASES, system=seeded_bot, repeats=n, pass_k=ks, out=tmp_path / "o")
    rep = run.metrics["repeats"]
    assert rep["repeats"] == n and rep["cases"] == N_CASES and rep["attempts"] == N_CASES * n
    assert rep["pass_k"] == ks
    records = records_of(tmp_path / "o")
    # every (case, repeat) exactly once, each a full record of its own
    pairs = [(r["case_id"], r["repeat"]) for r in records]
    assert sorted(pairs) == sorted((c, i) for c in PROBS for i in range(n))
    assert run.metrics["calls"] == {"total": N_CASES * n, "failed": 0}

    # analytic: pass rate p, pass@k 1-(1-p)^k, pass^k p^k; error of the mean over cases:
    # Var(U-statistic of order k from n draws) <= k/n * q(1-q) (Hoeffding)
    overall = rep["overall"]
    for key, truth in [("pass_rate", lambda p, k: p)] + [
            (f"pass@{k}", lambda p, k=k: 1 - (1 - p) ** k) for k in ks] + [
            (f"pass^{k}", lambda p, k=k: p ** k) for k in ks]:
        k = int(key[5:]) if key != "pass_rate" else 1
        q = [truth(p, k) for p in PROBS.values()]
        expected = sum(q) / N_CASES
        sigma = math.sqrt(sum(k / n * x * (1 - x) for x in q)) / N_CASES
        assert abs(overall[key]["mean"] - expected) < 4 * sigma, (key, overall[key], expected)
        assert overall[key]["ci_low"] <= overall[key]["mean"] <= overall[key]["ci_high"]

    # EXACT: brute force over the recorded attempts (pass = macro recall and precision 1)
    by_case: dict[str, list[bool]] = {}
    for r in sorted(records, key=lambda r: (r["case_id"], r["repeat"])):
        s = r["scores"]
        by_case.setdefault(r["case_id"], []).append(
            s["macro_recall"] == 1.0 and s["macro_precision"] == 1.0)
    assert by_case["c00"] == [False] * n and by_case[f"c{N_CASES - 1}"] == [True] * n
    rows = {row["case_id"]: row for row in _repeats_csv(tmp_path / "o")}
    for k in ks:
        at = {c: brute_pass_at_k(f, k) for c, f in by_case.items()}
        hat = {c: brute_pass_hat_k(f, k) for c, f in by_case.items()}
        for c in by_case:
            assert float(rows[c][f"pass@{k}"]) == float(at[c])
            assert float(rows[c][f"pass^{k}"]) == float(hat[c])
        assert overall[f"pass@{k}"]["mean"] == float(sum(at.values()) / N_CASES)
        assert overall[f"pass^{k}"]["mean"] == float(sum(hat.values()) / N_CASES)
    rate = sum(Fraction(sum(f), n) for f in by_case.values()) / N_CASES
    assert overall["pass_rate"]["mean"] == float(rate)
    flaky = [c for c, f in by_case.items() if 0 < sum(f) < n]
    assert rep["flaky_cases"] == len(flaky) and rep["flaky_share"] == len(flaky) / N_CASES
    assert [f["case_id"] for f in rep["flaky"]] == flaky[:50]
    first = rep["flaky"][0]
    assert first["outcomes"] == "".join("P" if x else "F" for x in by_case[first["case_id"]])
    # per-case mean and std of the per-case metrics
    for c, f in by_case.items():
        vals = [1.0 if x else 0.0 for x in f]
        assert float(rows[c]["macro_recall_mean"]) == sum(vals) / n
        assert float(rows[c]["macro_recall_std"]) == pytest.approx(sample_std(vals), abs=1e-15)
    # overall task metrics: the mean over attempts = the mean over cases of per-case means
    assert run.metrics["overall_metrics"]["macro_recall"] == float(rate)


def _repeats_csv(run_dir: Path) -> list[dict]:
    import csv

    path = next(run_dir.rglob("repeats_*.csv"))
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_results_csv_has_a_repeat_column(tmp_path):
    run = qe.evaluate(CASES[:3], system=seeded_bot, repeats=3, out=tmp_path / "o")
    assert run.metrics["repeats"]["pass_k"] == [1, 3]  # default: 1 and N
    import csv

    with open(next((tmp_path / "o").rglob("results_*.csv")), newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][:2] == ["case_id", "repeat"]
    assert [(r[0], r[1]) for r in rows[1:]] == [(c, str(i)) for c in ("c00", "c01", "c02")
                                                for i in range(3)]


def test_pass_k_above_repeats_is_refused_in_one_line(tmp_path, system_module, capsys):
    with pytest.raises(ConfigError, match=r"--pass-k 5: k must be at most --repeats \(3\)"):
        qe.evaluate(CASES[:2], system=seeded_bot, repeats=3, pass_k=[1, 5])
    code = main(["run", str(_suite(tmp_path)), "--system", f"python:{system_module}:bot",
                 "--repeats", "2", "--pass-k", "1,3", "--out", str(tmp_path / "o"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0 and "--pass-k 3" in err
    assert not (tmp_path / "o").exists()


def _suite(tmp_path: Path, cases: list[dict] = CASES) -> Path:
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def test_without_repeats_the_log_is_unchanged(tmp_path, system_module):
    suite = _suite(tmp_path, CASES[:4])
    assert main(["run", str(suite), "--system", f"python:{system_module}:bot",
                 "--out", str(tmp_path / "o"), "-q", "--no-report"]) == 0
    batch = json.loads(next((tmp_path / "o").rglob("batch_*.json")).read_text())
    cfg = batch["evaluation_config"]
    for key in ("repeats", "pass_k", "cache", "cache_dir", "cache_max_mb", "system_version",
                "system_name"):
        assert key not in cfg
    records = records_of(tmp_path / "o")
    assert len(records) == 4 and all("repeat" not in r for r in records)
    assert list(records[0])[:2] == ["case_id", "name"]
    metrics = json.loads(next((tmp_path / "o").rglob("metrics_*.json")).read_text())
    assert "repeats" not in metrics and "cache" not in metrics
    assert not list((tmp_path / "o").rglob("repeats_*.csv"))


@pytest.mark.slow
def test_killed_repeat_run_resumes_each_attempt_exactly_once(tmp_path, system_module):
    cases = CASES[::4]  # 10 cases x 4 repeats = 40 attempts
    suite = _suite(tmp_path, cases)
    spec = f"python:{system_module}:slow"
    common = ["--system", spec, "--repeats", "4", "--pass-k", "1,2,4", "-c", "2", "-q",
              "--no-report"]
    ref = tmp_path / "ref"
    assert main(["run", str(suite), "--out", str(ref), *common]) == 0
    ref_metrics = json.loads(next(ref.rglob("metrics_*.json")).read_text())
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "queryeval", "run", str(suite),
                             "--out", str(out), *common], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    jsonl = None
    while time.time() < deadline:
        found = list(out.rglob("results_*.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 9:
            jsonl = found[0]
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert jsonl is not None, "the run never wrote results"
    partial = len(jsonl.read_text().splitlines())
    assert 9 <= partial < 40
    with open(jsonl, "a") as fh:  # the line being written at the moment of the kill
        fh.write('{"case_id": "c04", "repeat": 3, "na')
    assert main(["run", "--resume", str(out), "-q"]) == 0
    pairs = [(r["case_id"], r["repeat"]) for r in records_of(out)]
    assert sorted(pairs) == sorted((c["id"], i) for c in cases for i in range(4))
    got = json.loads(next(out.rglob("metrics_*.json")).read_text())
    assert got["overall_metrics"] == ref_metrics["overall_metrics"]
    assert got["repeats"] == ref_metrics["repeats"]
    assert _repeats_csv(out) == _repeats_csv(ref)


def test_reports_show_pass_figures_and_flaky_cases(tmp_path, system_module, capsys):
    cases = [c for c in CASES if c["id"] in ("c00", "c13", "c26", "c39")]
    suite = _suite(tmp_path, cases)
    out = tmp_path / "o"
    assert main(["run", str(suite), "--system", f"python:{system_module}:bot", "--repeats", "5",
                 "--pass-k", "1,2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    metrics = json.loads(next(out.rglob("metrics_*.json")).read_text())
    rep = metrics["repeats"]
    assert "Repeats" in printed and "Flaky" in printed
    from queryeval.api.text import render_text
    from queryeval.report.console import repeats_tables

    text = render_text(repeats_tables(rep))  # what the run printed, at a fixed width
    assert rep["flaky_cases"] >= 1  # c13 (p = 1/3) and c26 (p = 2/3) over 5 draws
    flaky = rep["flaky"][0]
    # console: the pass table and the flaky list with each attempt's outcome
    assert "pass@2" in text and "pass^2" in text and flaky["outcomes"] in text
    assert f"{rep['overall']['pass@2']['mean']:.4f}" in text
    # HTML: a Repeats section with the same figures
    html = next(out.rglob("report_*.html")).read_text()
    assert '<table id="repeats">' in html and '<table id="flaky">' in html
    assert f"<code>{flaky['outcomes']}</code>" in html
    # xlsx: a Repeats sheet
    from openpyxl import load_workbook

    ws = load_workbook(next(out.rglob("report_*.xlsx")))["Repeats"]
    rows = [list(r) for r in ws.iter_rows(values_only=True)]
    assert rows[0] == ["figure", "mean over cases", "CI low", "CI high"]
    assert rows[1][:2] == ["pass_rate", rep["overall"]["pass_rate"]["mean"]]
    assert rows[2][:2] == ["pass@1", rep["overall"]["pass@1"]["mean"]]
    assert [flaky["case_id"], flaky["pass_rate"], flaky["outcomes"]] in [r[:3] for r in rows]


def test_recorded_responses_with_several_answers_per_case_score_offline(tmp_path):
    cases = CASES[::8]  # 5 cases
    live = qe.evaluate(cases, system=seeded_bot, repeats=6, pass_k=[1, 3], out=tmp_path / "live")
    lines = [{"case_id": r["case_id"], "turn": 0, "repeat": r["repeat"],
              "indicator_selection": r["turns"][0]["output"]}
             for r in reversed(records_of(tmp_path / "live"))]  # any order
    offline = qe.evaluate(cases, responses=lines, repeats=6, pass_k=[1, 3], out=tmp_path / "off")
    assert offline.metrics["repeats"] == live.metrics["repeats"]
    assert offline.metrics["overall_metrics"] == live.metrics["overall_metrics"]
    # a missing repeat is a failed call on that attempt only; a duplicate one is refused
    partial = [x for x in lines if not (x["case_id"] == "c08" and x["repeat"] == 2)]
    run = qe.evaluate(cases, responses=partial, repeats=6)
    assert run.metrics["calls"] == {"total": 30, "failed": 1}
    with pytest.raises(qe.InputError, match="duplicate response for case 'c08' turn 0 repeat 2"):
        qe.evaluate(cases, responses=[*lines, *[x for x in lines if x["case_id"] == "c08"
                                                and x["repeat"] == 2]], repeats=6)
    # a line without repeat answers every repeat: a deterministic recording, pass rate 0 or 1
    single = [{k: v for k, v in x.items() if k != "repeat"} for x in lines if x["repeat"] == 0]
    det = qe.evaluate(cases, responses=single, repeats=3)
    assert det.metrics["repeats"]["flaky_cases"] == 0
    assert {r["pass_rate"] for r in _repeats_csv_rows(det)} <= {"0.0", "1.0"}


def _repeats_csv_rows(run) -> list[dict]:
    import csv

    path = next(run.folder.glob("repeats_*.csv"))
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_stats_do_not_depend_on_the_order_of_the_records(tmp_path):
    """A results file read in completion order (attempts of a case apart) gives the same
    statistics as the run's own order."""
    from queryeval.run.log import RunLog
    from queryeval.run.repeats import repeat_stats
    from queryeval.run.results import reduce_cases
    from queryeval.tasks.base import get_task

    run = qe.evaluate(CASES[::5], system=seeded_bot, repeats=4, out=tmp_path / "o")
    task = get_task("indicator_selection")
    records = RunLog.open(run.path).read_records()
    # attempts of a case apart, cases in another order (c00, c10, c20, c30, c05, ...)
    shuffled = sorted(records, key=lambda r: (r["repeat"], r["case_id"][::-1]))
    a = repeat_stats(reduce_cases(task, records), 4, [1, 4])
    b = repeat_stats(reduce_cases(task, shuffled), 4, [1, 4])
    key = {r["case_id"]: r for r in a.rows}
    assert len(b.rows) == len(CASES[::5]) and all(key[r["case_id"]] == r for r in b.rows)
    assert a.result()["overall"] == b.result()["overall"] == run.metrics["repeats"]["overall"]


def test_case_means_are_what_a_comparison_pairs_on(tmp_path):
    from queryeval.run.log import RunLog
    from queryeval.run.results import reduce_cases
    from queryeval.tasks.base import get_task

    run = qe.evaluate(CASES[::10], system=seeded_bot, repeats=5, out=tmp_path / "o")
    task = get_task("indicator_selection")
    means = {c.case_id: c.means for c in reduce_cases(task, RunLog.open(run.path).read_records())}
    rows = {r["case_id"]: r for r in _repeats_csv(tmp_path / "o")}
    assert sorted(means) == [c["id"] for c in CASES[::10]]
    for cid, m in means.items():
        assert m["macro_recall"] == float(rows[cid]["macro_recall_mean"]) == float(
            rows[cid]["pass_rate"])


def test_rescore_and_report_keep_every_attempt(tmp_path):
    run = qe.evaluate(CASES[::10], system=seeded_bot, repeats=3, out=tmp_path / "o")
    assert main(["rescore", str(run.path), "--option", "include_extra_dimensions=false",
                 "-q"]) == 0
    new = [b for b in (tmp_path / "o").rglob("batch_*.json") if b != run.path]
    assert len(new) == 1
    metrics = json.loads(Path(str(new[0]).replace("batch_", "metrics_")).read_text())
    assert metrics["repeats"]["overall"] == run.metrics["repeats"]["overall"]
    lines = Path(str(new[0]).replace("batch_", "results_").replace(".json", ".jsonl"))
    pairs = sorted((r["case_id"], r["repeat"]) for r in map(json.loads, lines.read_text().split("\n")[:-1]))
    assert pairs == sorted((c["id"], i) for c in CASES[::10] for i in range(3))


@pytest.mark.parametrize(("args", "message"), [
    (["--repeats", "0"], "error: --repeats: must be greater than or equal to 1, got 0"),
    (["--repeats", "3", "--pass-k", "a,b"],
     "error: --pass-k: expected comma-separated integers, got 'a,b'"),
    (["--pass-k", "1"], "error: --pass-k needs --repeats N (N >= 2)"),
    (["--repeats", "3", "--pass-k", "0"], "error: --pass-k: every k must be at least 1, got 0"),
    (["--repeats", "2", "--cache"], "error: --cache needs --system-version (the cache key "
     "names the system and its version; see docs/repeats.md)"),
])
def test_bad_repeat_options_are_one_line(tmp_path, system_module, capsys, args, message):
    code = main(["run", str(_suite(tmp_path, CASES[:2])), "--system",
                 f"python:{system_module}:bot", "--out", str(tmp_path / "o"), *args])
    assert code == 2 and capsys.readouterr().err.strip() == message
    assert not (tmp_path / "o").exists()


def test_retrieval_pass_is_the_hit_in_top_k_and_derived_batches_get_repeats(tmp_path):
    """Recorded retrieval answers (one per question: every repeat the same) with --k 1,5:
    each case passes always or never, so the pass rate is the plain run's hit rate, at k 5
    in the run and at k 1 in its derived batch, and nothing is flaky."""
    ex = REPO / "examples" / "retrieval"
    args = [str(ex / "questions.csv"), "--responses", str(ex / "responses.jsonl"), "--corpus",
            str(ex / "corpus.jsonl"), "--k", "1,5", "-q", "--no-report"]
    assert main(["run", *args, "--out", str(tmp_path / "plain")]) == 0
    assert main(["run", *args, "--repeats", "2", "--out", str(tmp_path / "rep")]) == 0

    def by_k(folder: str) -> dict[int, dict]:
        out = {}
        for path in (tmp_path / folder).rglob("metrics_*.json"):
            m = json.loads(path.read_text())
            out[m["overall_metrics"]["k"]] = m
        return out

    plain, rep = by_k("plain"), by_k("rep")
    assert sorted(rep) == [1, 5]
    for k in (1, 5):
        r = rep[k]["repeats"]
        assert r["overall"]["pass_rate"]["mean"] == plain[k]["overall_metrics"][f"hit_rate@{k}"]
        assert r["flaky_cases"] == 0 and r["attempts"] == 2 * r["cases"] == 134
    assert plain[5]["overall_metrics"]["hit_rate@5"] == 104 / 134


def test_answers_pass_only_when_every_sub_answer_is_right(tmp_path):
    """Repeat 0: the example's recorded answers (cases 0, 1, 5, 6 fully right; 2, 3, 7 half
    right; 4 missing); repeat 1: every sub-answer right. Pass rates 1, 1, ½, ½, ½, 1, 1, ½."""
    ex = REPO / "examples" / "answers"
    labels = [json.loads(x) for x in (ex / "labels.jsonl").read_text().splitlines()]
    recorded = [json.loads(x) for x in (ex / "responses.jsonl").read_text().splitlines()]
    lines = [{**r, "repeat": 0} for r in recorded] + [
        {"id": lab["id"], "repeat": 1,
         "response": " ".join(f"@{n}[{v}]" for n, v in lab["common_answers"])}
        for lab in labels]
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "o"
    assert main(["run", str(ex / "questions.jsonl"), "--labels", str(ex / "labels.jsonl"),
                 "--tables", str(ex / "tables"), "--responses", str(responses), "--repeats", "2",
                 "--out", str(out), "-q", "--no-report"]) == 0
    rows = {r["case_id"]: r for r in _repeats_csv(out)}
    rates = [float(rows[str(i)]["pass_rate"]) for i in range(8)]
    assert rates == [1.0, 1.0, 0.5, 0.5, 0.5, 1.0, 1.0, 0.5]
    assert float(rows["2"]["proportion_correct_mean"]) == 0.75  # half right is not a pass
    rep = json.loads(next(out.rglob("metrics_*.json")).read_text())["repeats"]
    assert rep["overall"]["pass_rate"]["mean"] == 0.75 and rep["flaky_cases"] == 4
    assert [f["outcomes"] for f in rep["flaky"]] == ["FP", "FP", "FP", "FP"]


def test_run_report_and_summary_carry_the_repeats(tmp_path):
    run = qe.evaluate(CASES[::10], system=seeded_bot, repeats=4, out=tmp_path / "o")
    assert "Repeats: 4 attempts per case, 4 cases" in str(run)
    written = run.report()
    xlsx = next(p for p in written if p.suffix == ".xlsx")
    from openpyxl import load_workbook

    ws = load_workbook(xlsx)["Repeats"]
    assert [c.value for c in ws[2]][:2] == ["pass_rate",
                                            run.metrics["repeats"]["overall"]["pass_rate"]["mean"]]


@pytest.mark.slow
def test_ray_executor_gives_the_same_attempts_and_statistics(tmp_path, system_module):
    pytest.importorskip("ray", reason="Ray is not installed")
    suite = _suite(tmp_path, CASES[::8])
    common = [str(suite), "--system", f"python:{system_module}:bot", "--repeats", "3", "-c", "2",
              "-q", "--no-report"]
    assert main(["run", *common, "--out", str(tmp_path / "local")]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "queryeval", "run", *common, "--executor", "ray",
                           "--out", str(tmp_path / "ray")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    local, remote = (json.loads(next((tmp_path / d).rglob("metrics_*.json")).read_text())
                     for d in ("local", "ray"))
    assert remote["repeats"] == local["repeats"]
    assert remote["overall_metrics"] == local["overall_metrics"]
    assert sorted((r["case_id"], r["repeat"]) for r in records_of(tmp_path / "ray")) == \
        sorted((c["id"], i) for c in CASES[::8] for i in range(3))


def test_pass_rules_of_query_fields_and_the_default():
    from queryeval.tasks.base import get_task

    query = get_task("query")
    perfect = {"status": "ok", "scores": {"exact_match_f1": 1.0, "returns_results": 0.0}}
    assert query.case_passed(perfect)  # an empty gold table matched exactly still passes
    assert not query.case_passed({"status": "ok", "scores": {"exact_match_f1": 0.99}})
    assert not query.case_passed({**perfect, "status": "error"})
    fields = get_task("fields")
    turns = [{"scores": {"passed": True}}, {"scores": {"passed": False}}]
    assert not fields.case_passed({"status": "ok", "turns": turns})
    assert fields.case_passed({"status": "ok", "turns": turns[:1]})

    class Plain(get_task("answers").__class__):  # no case_verdict: the default rule
        case_passed = qe.Task.case_passed

    plain = Plain()
    assert plain.case_passed({"status": "ok", "scores": {"a": 1.0, "count": 3.0}})
    assert not plain.case_passed({"status": "ok", "scores": {"a": 1.0, "b": 0.5}})
    assert not plain.case_passed({"status": "error", "scores": {"a": 1.0}})


def test_compare_pairs_repeated_runs_on_their_case_means(tmp_path):
    """Two runs with repeats are paired on each case's mean over its attempts (before: one
    arbitrary attempt per case); identical runs flip nothing; a run without repeats pairs
    with one with repeats."""
    import importlib.util

    import queryeval as qe
    from queryeval.report.compare import pair_runs
    from queryeval.run.results import RunResults, case_metrics

    suite = Path(__file__).resolve().parents[2] / "examples" / "sdmx" / "suite"
    spec = importlib.util.spec_from_file_location("sdmx_system", suite.parent / "system.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def flaky(request: dict) -> dict:  # attempt 1 of every case answers nothing
        return {"indicator_selection": []} if request.get("repeat") == 1 else module.select(request)

    first = qe.evaluate(suite, system=flaky, repeats=3, out=tmp_path / "a", concurrency=8)
    again = qe.evaluate(suite, system=flaky, repeats=3, out=tmp_path / "b", concurrency=8)
    plain = qe.evaluate(suite, system=module.select, out=tmp_path / "c")
    pair = pair_runs(RunResults.open(first.path), RunResults.open(again.path))
    assert len(pair.paired) == 23  # cases, not 69 attempts
    assert not qe.compare(first, again).regressions
    plain_pair = pair_runs(RunResults.open(plain.path), RunResults.open(first.path))
    records = RunResults.open(first.path).records
    checked = 0
    for cid in pair.paired:
        mine = sorted((r for r in records if r["case_id"] == cid), key=lambda r: r["repeat"])
        attempts = [case_metrics(pair.task, r) for r in mine]
        assert [r["repeat"] for r in mine] == [0, 1, 2]
        for name, value in pair.vals_a[cid].items():
            assert value == pytest.approx(sum(a[name] for a in attempts) / 3)
            assert plain_pair.vals_a[cid][name] == pytest.approx(attempts[0][name])  # repeat 0
            checked += 1
    assert checked > 23


# --- overall and group figures count cases, not attempts -------------------------------------
def test_deterministic_repeats_give_exactly_the_figures_of_a_plain_run(tmp_path):
    suite, system = REPO / "examples/sdmx/suite", f"python:{REPO}/examples/sdmx/system.py:select"
    plain = qe.evaluate(str(suite), system=system, out=tmp_path / "p")
    rep = qe.evaluate(str(suite), system=system, repeats=3, out=tmp_path / "r")
    assert rep.metrics["overall_metrics"]["total_cases"] == 23  # not 69
    assert rep.metrics["overall_metrics"] == plain.metrics["overall_metrics"]
    assert rep.metrics["group_metrics"] == plain.metrics["group_metrics"]
    assert rep.metrics["calls"]["total"] == 3 * plain.metrics["calls"]["total"]


def test_flaky_repeats_figures_are_means_over_cases_of_per_case_means(tmp_path):
    cases = [{**c, "tags": ["odd" if i % 2 else "even"]} for i, c in enumerate(CASES[::4])]
    run = qe.evaluate(cases, system=seeded_bot, repeats=4, out=tmp_path / "o")
    records = records_of(tmp_path / "o")
    per_case: dict[str, list[float]] = {}
    for r in records:
        per_case.setdefault(r["case_id"], []).append(r["scores"]["macro_recall"])
    assert len(per_case) == 10 and all(len(v) == 4 for v in per_case.values())
    means = {c: Fraction(sum(Fraction(x) for x in v), 4) for c, v in per_case.items()}
    assert 0 < sum(1 for m in means.values() if 0 < m < 1)  # some cases are flaky
    overall = run.metrics["overall_metrics"]
    assert overall["total_cases"] == 10 and overall["scored_cases"] == 10
    assert overall["macro_recall"] == pytest.approx(float(sum(means.values()) / 10), abs=1e-15)
    odd = [m for i, m in enumerate(means.values()) if i % 2]
    tag = run.metrics["group_metrics"]["tag"]["odd"]
    assert tag["cases"] == 5
    assert tag["macro_recall"] == pytest.approx(float(sum(odd) / 5), abs=1e-15)


def test_repeats_over_a_recording_without_repeat_fields_warn_in_one_line(tmp_path, capsys):
    cases = CASES[:3]
    lines = [{"case_id": c["id"], "turn": 0, "indicator_selection": sel(MEX)} for c in cases]
    run = qe.evaluate(cases, responses=lines, repeats=3)
    warned = [w for w in run.warnings if "--repeats 3" in w]
    assert len(warned) == 1 and "no line has a \"repeat\"" in warned[0]
    assert "\n" not in warned[0]
    # a file with repeats, and a plain run over the same file, do not warn
    with_rep = [{**x, "repeat": r} for x in lines for r in range(3)]
    assert not [w for w in qe.evaluate(cases, responses=with_rep, repeats=3).warnings
                if "--repeats" in w]
    assert not [w for w in qe.evaluate(cases, responses=lines).warnings if "--repeats" in w]
    # the CLI prints it with the run's warnings
    path = tmp_path / "resp.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    suite = _suite(tmp_path, cases)
    main(["run", str(suite), "--responses", str(path), "--repeats", "2", "--out",
          str(tmp_path / "o"), "--no-report"])
    out = capsys.readouterr()
    assert "repeats add nothing" in (out.out + out.err).replace("\n", " ")


def test_combining_per_repeat_aggregates_leaf_by_leaf():
    from queryeval.run.repeats import combine_aggregates

    a = {"overall_metrics": {"p": 0.5, "cases": 3, "scored": 3, "errors": 1,
                             "errors_by_kind": {"timeout": 1}, "none": None, "label": "x"},
         "group_metrics": {"tag": {"t": {"cases": 2, "p": 1.0}}}}
    b = {"overall_metrics": {"p": 0.25, "cases": 3, "scored": 2, "errors": 2,
                             "errors_by_kind": {"timeout": 1, "http": 1}, "none": None,
                             "label": "x"},
         "group_metrics": {"tag": {"t": {"cases": 2, "p": None}}}}
    out = combine_aggregates([a, b])
    o = out["overall_metrics"]
    assert o["p"] == 0.375 and o["cases"] == 3 and type(o["cases"]) is int
    assert o["scored"] == 2.5  # a count that differs between repeats: its mean
    assert o["errors"] == 3 and o["errors_by_kind"] == {"http": 1, "timeout": 2}  # summed
    assert o["none"] is None and o["label"] == "x"
    assert out["group_metrics"]["tag"]["t"] == {"cases": 2, "p": 1.0}  # None left out


def test_html_confidence_intervals_resample_cases_not_attempts(tmp_path):
    """A deterministic system with --repeats 3: the HTML report's overall CIs are those of a
    plain run (23 cases), not the narrower ones of 69 attempts."""
    import re

    import queryeval as qe

    suite = Path(__file__).resolve().parents[2] / "examples" / "sdmx" / "suite"
    spec = f"python:{suite.parent / 'system.py'}:select"
    plain = qe.evaluate(suite, system=spec, out=tmp_path / "p", reports=True)
    rep = qe.evaluate(suite, system=spec, repeats=3, out=tmp_path / "r", reports=True)

    def ci_cells(run) -> list[str]:
        (page,) = run.folder.glob("report_*.html")
        overall = page.read_text().split("<h2>Overall</h2>", 1)[1].split("<h2>", 1)[0]
        return re.findall(r"\[\d\.\d+, \d\.\d+\]", overall)

    assert ci_cells(plain) and ci_cells(rep) == ci_cells(plain)


FLAKY_SDMX = '''
import sys, zlib
sys.path.insert(0, {folder!r})
from system import select

def down(request):
    """1 when this case's attempts after the first fail (about half the cases)."""
    return zlib.crc32(request["messages"][0]["content"].encode()) % 2

def answer(request):
    if request.get("repeat", 0) >= 1 and down(request):
        raise RuntimeError("second attempt down")
    return select(request)
'''


def test_skip_with_failing_second_attempts_counts_one_population_everywhere(tmp_path):
    """``--repeats 2 --on-error skip`` over the SDMX example, the second attempt of about half
    the cases failing: a case with a failed attempt is left out of every mean (docs/repeats.md),
    so the metrics file's macro recall is the mean over the remaining cases of their per-case
    macro recall, which (the example system being deterministic) is that of a plain run. The
    HTML report shows that figure with its interval over the same cases. Before, the metrics
    file averaged each repeat's own population (0.8406 here) while the per-case population
    gave 0.8333 over 12 cases, and the report dropped the interval."""
    import re

    (tmp_path / "flaky.py").write_text(FLAKY_SDMX.format(folder=str(REPO / "examples" / "sdmx")))
    suite = str(REPO / "examples" / "sdmx" / "suite")
    plain = qe.evaluate(suite, system=f"python:{REPO / 'examples/sdmx/system.py'}:select",
                        out=tmp_path / "plain")
    run = qe.evaluate(suite, system=f"python:{tmp_path / 'flaky.py'}:answer", repeats=2,
                      on_error="skip", retries=0, backoff=0.0, out=tmp_path / "runs",
                      reports=True)
    by_case = {r["case_id"]: r for r in plain.records}
    failed = {r["case_id"] for r in run.records if r["status"] == "error"}
    assert {r["repeat"] for r in run.records if r["status"] == "error"} == {1}
    kept = [c for c in by_case if c not in failed]
    assert (len(by_case), len(kept)) == (23, 12)
    want = math.fsum(by_case[c]["scores"]["macro_recall"] for c in kept) / len(kept)
    assert want == pytest.approx(0.8333333333333334)
    assert run.overall["macro_recall"] == pytest.approx(want)
    assert run.overall["total_cases"] == 23 and run.overall["scored_cases"] == 12
    assert run.overall["errors"] == len(failed)
    assert run.results.vector("macro_recall") == pytest.approx(
        {c: by_case[c]["scores"]["macro_recall"] for c in kept})
    # the HTML Overall row: the value, its interval and n = 12 counted cases
    page = next(run.folder.glob("report_*.html")).read_text()
    m = re.search(r'<td>macro_recall</td><td class="num" data-v="([^"]+)">[^<]*</td>'
                  r'<td class="num ci">\[([0-9.]+), ([0-9.]+)\]</td><td class="num">(\d+)</td>', page)
    assert m, "no macro_recall row with an interval in the HTML"
    assert float(m[1]) == pytest.approx(want) and int(m[4]) == 12
    assert float(m[2]) <= want <= float(m[3])
    # the repeats section covers the same cases
    rep = run.metrics["repeats"]
    assert rep["cases"] == 12
    assert rep["overall"]["macro_recall_mean"]["mean"] == pytest.approx(want)
