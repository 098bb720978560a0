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

    examples = Path(__file__).resolve().parents[1] / "examples" / "sdmx"
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
