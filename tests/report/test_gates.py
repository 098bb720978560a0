"""--fail-under thresholds and the assert_suite pytest helper."""

from __future__ import annotations

from pathlib import Path

import pytest

from queryeval.errors import ConfigError, GateFailure
from queryeval.report.gates import check_thresholds, evaluate_thresholds, parse_thresholds
from queryeval.testing import assert_suite

METRICS = {"overall_metrics": {"macro_recall": 0.85, "macro_precision": 0.7, "tp": 47,
                               "micro_recall": None, "errors_by_kind": {}, "flag": True}}


def test_parse_thresholds():
    assert parse_thresholds(["macro_recall=0.8", " tp = 40 "]) == {"macro_recall": 0.8, "tp": 40.0}
    assert parse_thresholds(["a=1", "a=1.0"]) == {"a": 1.0}
    for bad, msg in [("macro_recall", "METRIC=VALUE"), ("=0.8", "METRIC=VALUE"),
                     ("macro_recall=", "METRIC=VALUE"), ("macro_recall=high", "not a number"),
                     ("macro_recall=nan", "finite")]:
        with pytest.raises(ConfigError, match=msg):
            parse_thresholds([bad])
    with pytest.raises(ConfigError, match="given twice"):
        parse_thresholds(["a=1", "a=2"])


def test_check_thresholds_pass_and_boundary():
    results = check_thresholds(METRICS, {"macro_recall": 0.85, "tp": 47})  # equal passes
    assert [(r.metric, r.value, r.passed) for r in results] == [("macro_recall", 0.85, True),
                                                                ("tp", 47.0, True)]
    assert check_thresholds(METRICS["overall_metrics"], {"macro_precision": 0.5})[0].passed


def test_check_thresholds_names_every_failure():
    with pytest.raises(GateFailure) as info:
        check_thresholds(METRICS, {"macro_recall": 0.8, "macro_precision": 0.75, "tp": 50,
                                   "micro_recall": 0.1})
    msg = str(info.value)
    assert msg == ("quality gate failed: macro_precision = 0.7000 < 0.75; tp = 47.0000 < 50; "
                   "micro_recall = undefined (threshold 0.1)")
    assert info.value.exit_code == 1


def test_unknown_metric_lists_available():
    with pytest.raises(ConfigError) as info:
        evaluate_thresholds(METRICS, {"recall": 0.8})
    assert str(info.value) == ("unknown metric(s) for --fail-under: recall; available: "
                               "macro_recall, macro_precision, tp, micro_recall")


def test_assert_suite(examples_dir, tmp_path):
    suite = examples_dir / "sdmx" / "suite"
    responses = examples_dir / "sdmx" / "responses.jsonl"
    metrics = assert_suite(suite, responses=responses, thresholds={"macro_recall": 0.8})
    assert metrics["overall_metrics"]["macro_recall"] == pytest.approx(19.5 / 23)
    with pytest.raises(AssertionError) as info:
        assert_suite(suite, responses=responses, thresholds={"macro_recall": 0.9,
                                                             "macro_precision": 0.8})
    assert str(info.value) == (f"suite {suite}: quality gate failed: macro_recall = 0.8478 < 0.9")
    # task options pass through: without extra dimensions precision rises to 19.5/23
    metrics = assert_suite(suite, responses=responses, thresholds={"macro_precision": 0.84},
                           include_extra_dimensions=False, out=tmp_path)
    assert metrics["overall_metrics"]["macro_precision"] == pytest.approx(19.5 / 23)
    assert list(tmp_path.rglob("batch_*.json"))
    with pytest.raises(ConfigError, match="unknown metric"):
        assert_suite(suite, responses=responses, thresholds={"recal": 0.5})
    with pytest.raises(ValueError):
        assert_suite(suite, responses=responses, thresholds={})


def test_unknown_gate_name_stops_the_run_before_any_call(tmp_path, capsys):
    """A typo in --fail-under is found before the system is called or a log is written."""
    import queryeval as qe
    from queryeval.cli.app import main
    from queryeval.errors import ConfigError, GateFailure

    examples = Path(__file__).resolve().parents[2] / "examples" / "sdmx"
    calls = tmp_path / "calls.txt"
    system = tmp_path / "count.py"
    system.write_text(
        "import sys\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n    open(%r, 'a').write('x')\n    return real(req)\n"
        % (str(examples), str(calls)))
    out = tmp_path / "out"
    code = main(["run", str(examples / "suite"), "--system", f"python:{system}:select",
                 "--out", str(out), "-q", "--fail-under", "macro_recal=0.5"])
    err = capsys.readouterr().err
    assert code == 2 and not calls.exists() and not out.exists()
    assert err.startswith("error: unknown metric(s) for --fail-under: macro_recal; available: ")
    with pytest.raises(ConfigError, match="unknown metric"):
        qe.evaluate(examples / "suite", responses=examples / "responses.jsonl",
                    fail_under={"macro_recal": 0.5})
    run = qe.evaluate(examples / "suite", responses=examples / "responses.jsonl",
                      fail_under={"macro_recall": 0.99})
    with pytest.raises(GateFailure, match=r"macro_recall = 0\.8478 < 0\.99"):
        run.check_gates()
    assert run.check_gates({"macro_recall": 0.8})[0].passed


# -- repeats figures are gateable (issue 23, item 7) -------------------------------------------

# three one-question closed-form cases; over 4 attempts (repeat 0..3) "a" always passes, "b"
# passes on the even repeats (c = 2 of n = 4), "c" never
FLAKY_CASES = [{"id": c, "conversation": [{"role": "user", "content": c,
                                           "target": {"answers": {"n": "3"}}}]} for c in "abc"]
FLAKY_BOT = '''
def bot(request):
    case, rep = request["messages"][-1]["content"], request.get("repeat", 0)
    ok = case == "a" or (case == "b" and rep % 2 == 0)
    return {"response": "@n[3]" if ok else "@n[4]"}
'''
# hand-computed means over the 3 cases: pass@k = 1 - C(n-c, k)/C(n, k), pass^k = C(c, k)/C(n, k)
# b: pass@2 = 1 - 1/6 = 5/6, pass^2 = 1/6, pass@4 = 1, pass^4 = 0
FLAKY_FIGURES = {"pass_rate": 1.5 / 3, "pass@2": (1 + 5 / 6) / 3, "pass^2": (1 + 1 / 6) / 3,
                 "pass@4": 2 / 3, "pass^4": 1 / 3}


def flaky_bot(tmp_path: Path):
    (tmp_path / "flaky_bot.py").write_text(FLAKY_BOT)
    ns: dict = {}
    exec(FLAKY_BOT, ns)
    return tmp_path / "flaky_bot.py", ns["bot"]


def test_gates_read_every_repeats_figure_from_the_metrics():
    """pass_rate, pass@k, pass^k (and the other figures of ``repeats.overall``) are gateable by
    the names the metrics JSON gives them, with the value stored there (its ``mean``); a name
    of the task's own ``overall_metrics`` keeps meaning that figure, and ``repeats.NAME`` always
    names the repeats one."""
    metrics = {"overall_metrics": {"psaq": 0.5, "pass_rate": 0.25},
               "repeats": {"repeats": 4, "pass_k": [2], "flaky_share": 1 / 3, "overall": {
                   "pass_rate": {"mean": 0.5, "ci_low": 0.0, "ci_high": 1.0, "n": 3},
                   "pass@2": {"mean": 11 / 18, "ci_low": 0.0, "ci_high": 1.0, "n": 3},
                   "pass^2": {"mean": 7 / 18, "ci_low": 0.0, "ci_high": 1.0, "n": 3},
                   "psaq_mean": {"mean": 0.5, "ci_low": 0.0, "ci_high": 1.0, "n": 3},
                   "mean_psaq_std": {"mean": 0.19}}}}
    got = {r.metric: r.value for r in evaluate_thresholds(
        metrics, {"pass@2": 0.6, "pass^2": 0.5, "pass_rate": 0.2, "repeats.pass_rate": 0.5,
                  "psaq_mean": 0.5, "mean_psaq_std": 0.0, "flaky_share": 0.0, "psaq": 0.5})}
    assert got == {"pass@2": 11 / 18, "pass^2": 7 / 18, "pass_rate": 0.25,
                   "repeats.pass_rate": 0.5, "psaq_mean": 0.5, "mean_psaq_std": 0.19,
                   "flaky_share": 1 / 3, "psaq": 0.5}
    with pytest.raises(GateFailure, match=r"^quality gate failed: pass\^2 = 0\.3889 < 0\.5$"):
        check_thresholds(metrics, {"pass@2": 0.6, "pass^2": 0.5})
    with pytest.raises(ConfigError) as info:
        evaluate_thresholds(metrics, {"pass@3": 0.5})
    assert "pass@3" in str(info.value) and "pass@2, pass^2" in str(info.value)


def test_fail_under_repeats_figures_on_the_cli_and_in_the_api(tmp_path, capsys):
    """``--fail-under pass@2=…`` / ``fail_under={"pass^4": …}`` on a run with repeats gate on the
    run's figures (hand-computed above); a pass@k the run will not report is refused before any
    call (exit 2)."""
    import json

    import queryeval as qe
    from queryeval.cli.app import main

    bot_file, bot = flaky_bot(tmp_path)
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in FLAKY_CASES))
    base = ["run", str(suite), "--system", f"python:{bot_file}:bot", "-q", "--no-report",
            "--repeats", "4", "--pass-k", "2,4"]
    assert main([*base, "--out", str(tmp_path / "o1"), "--fail-under", "pass@2=0.61",
                 "--fail-under", "pass_rate=0.5"]) == 0
    assert "gates passed: pass@2 >= 0.61, pass_rate >= 0.5" in capsys.readouterr().out
    assert main([*base, "--out", str(tmp_path / "o2"), "--fail-under", "pass^4=0.34"]) == 1
    assert "pass^4 = 0.3333 < 0.34" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "o3"), "--fail-under", "pass@3=0.1"]) == 2
    assert "pass@3" in capsys.readouterr().err and not (tmp_path / "o3").exists()
    assert main(["run", str(suite), "--system", f"python:{bot_file}:bot", "-q", "--no-report",
                 "--out", str(tmp_path / "o4"), "--fail-under", "pass@2=0.1"]) == 2
    assert not (tmp_path / "o4").exists()

    run = qe.evaluate(FLAKY_CASES, system=bot, repeats=4, pass_k=[2, 4],
                      fail_under={"pass^4": 0.3, "pass@2": 0.6})
    results = {r.metric: r.value for r in run.check_gates()}
    assert results == {"pass^4": run.metrics["repeats"]["overall"]["pass^4"]["mean"],
                       "pass@2": run.metrics["repeats"]["overall"]["pass@2"]["mean"]}
    for name, value in results.items():
        assert value == pytest.approx(FLAKY_FIGURES[name], abs=1e-12)
    with pytest.raises(ConfigError, match="pass@3"):
        qe.evaluate(FLAKY_CASES, system=bot, repeats=4, fail_under={"pass@3": 0.5})
