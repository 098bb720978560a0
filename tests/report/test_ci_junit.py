"""``--junit FILE`` on ``run`` and ``compare``, read back by junitparser (a JUnit consumer):
one testcase per case with the run model's verdict, expected vs got, the failed call's error,
the pass rate with repeats; a comparison's regressions as failures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.ci_lab import FAILING, NAMES, PLAIN, REPEATED, REPEATED_RATE, cli, make_lab, run_cli

junitparser = pytest.importorskip("junitparser")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return make_lab(tmp_path_factory.mktemp("junit"))


def read(path: Path) -> dict[str, tuple]:
    """{case_id: (verdict, kind of result, message, classname, name, system-out JSON)}"""
    xml = junitparser.JUnitXml.fromfile(str(path))
    out = {}
    for suite in xml:
        for case in suite:
            props = json.loads(case.system_out)
            res = case.result
            kind = type(res[0]).__name__ if res else "pass"
            out[props["case_id"]] = (props["verdict"], kind, res[0].message if res else None,
                                     case.classname, case.name, props)
    return out


def verdict_of(kind: str, message: str | None) -> str:
    """The verdict a CI system sees: no result, a failure, an error."""
    return {"pass": "pass", "Failure": "fail", "Error": "error"}[kind]


def test_run_junit_one_testcase_per_case_failed_and_errored(lab, tmp_path):
    res, batch = run_cli(lab, "failing", tmp_path / "runs", "--junit", tmp_path / "j.xml")
    assert res.exit_code == 0, res.output
    got = read(tmp_path / "j.xml")
    assert {c: v[0] for c, v in got.items()} == FAILING
    assert {c: verdict_of(v[1], v[2]) for c, v in got.items()} == FAILING
    assert got["c5"][2] == 'expected {"n": "5"}, got {"n": "x"}'
    assert got["c4"][2] == "call failed: RuntimeError: backend down: 100% <gone>\nsecond line"
    assert {v[3] for v in got.values()} == {"cases.answers"}  # suite and task
    assert got["c0"][4] == "c0 plain name" and got["c3"][4] == "c3"
    assert got["c1"][4] == "c1 " + NAMES[1]  # escaped in the file, whole when parsed
    assert got["c2"][4] == "c2 ctrlchar"  # a character XML cannot hold is dropped
    assert got["c5"][5]["metrics"]["all_correct"] == 0.0
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "j.xml"))
    suite = next(iter(xml))
    assert (suite.tests, suite.failures, suite.errors) == (6, 1, 1)


def test_run_junit_with_repeats_carries_the_pass_rate(lab, tmp_path):
    res, _ = run_cli(lab, "repeated", tmp_path / "runs", "--repeats", "4",
                     "--junit", tmp_path / "j.xml")
    assert res.exit_code == 0, res.output
    got = read(tmp_path / "j.xml")
    assert {c: v[0] for c, v in got.items()} == REPEATED
    assert {c: v[5]["pass_rate"] for c, v in got.items()} == REPEATED_RATE
    assert {c: v[5]["attempts"] for c, v in got.items()} == {c: 4 for c in REPEATED}
    assert got["c3"][1] == "pass" and got["c1"][1] == "Failure"
    assert got["c1"][2].startswith("flaky: passed 2 of 4 attempts (pass rate 0.5); first miss: "
                                   'repeat 2: expected {"n": "1"}, got {"n": "x"}')
    assert got["c2"][5]["metrics"]["all_correct"] == pytest.approx(0.75)


def test_junit_is_written_before_a_gate_fails(lab, tmp_path):
    res, _ = run_cli(lab, "plain", tmp_path / "runs", "--fail-under", "psaq=0.9",
                     "--junit", tmp_path / "j.xml")
    assert res.exit_code == 1
    assert {c: v[0] for c, v in read(tmp_path / "j.xml").items()} == PLAIN


@pytest.fixture(scope="module")
def ten(tmp_path_factory):
    """Ten cases: ``right`` answers all, ``wrong`` none (a regression, p = 2/1024)."""
    root = make_lab(tmp_path_factory.mktemp("ten"), n=10)
    a = run_cli(root, "right", root / "a")[1]
    b = run_cli(root, "wrong", root / "b")[1]
    return root, a, b


def test_compare_junit_failure_on_a_significant_regression(ten, tmp_path):
    root, a, b = ten
    res = cli(["compare", a, b, "-q", "--resamples", "2000", "--junit", tmp_path / "c.xml",
               "--json", tmp_path / "c.json"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "c.json").read_text())
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "c.xml"))
    cases = {c.name.split(" ")[0]: c for s in xml for c in s}
    assert set(cases) == {m["metric"] for m in doc["metrics"]}
    failed = {m for m, c in cases.items() if c.result}
    assert failed == set(doc["regressions"]) and "all_correct" in failed
    assert "significant regression, B - A = -1" in cases["all_correct"].result[0].message
    # the other direction: B better, no failure
    res = cli(["compare", b, a, "-q", "--resamples", "2000", "--junit", tmp_path / "d.xml"])
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "d.xml"))
    assert all(not c.result for s in xml for c in s)


def test_nway_compare_junit_per_run_against_the_baseline(ten, tmp_path):
    root, a, b = ten
    res = cli(["compare", a, b, a, "-q", "--resamples", "2000", "--junit", tmp_path / "n.xml",
               "--metric", "all_correct"])
    assert res.exit_code == 0, res.output
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "n.xml"))
    got = {c.name: bool(c.result) for s in xml for c in s}
    assert got == {"all_correct (wrong vs right)": True, "all_correct (right vs right)": False}


def test_an_unwritable_junit_path_is_one_line(lab, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res, _ = run_cli(lab, "plain", tmp_path / "runs", "--junit", blocker / "j.xml")
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: cannot write {blocker / 'j.xml'}")
    assert "Traceback" not in res.output


# the common JUnit schema (Jenkins/surefire junit-10, pytest's xunit2), as rules
_CHILDREN = {"testsuites": ["testsuite"], "testsuite": ["properties", "testcase", "system-out",
                                                        "system-err"],
             "properties": ["property"],
             "testcase": ["skipped", "error", "failure", "system-out", "system-err"]}
_ATTRS = {"testsuites": ({"name", "time", "tests", "failures", "errors", "disabled"}, set()),
          "testsuite": ({"name", "tests", "failures", "errors", "time", "disabled", "skipped",
                         "timestamp", "hostname", "id", "package", "file", "log", "url",
                         "version"}, {"name", "tests", "failures", "errors"}),
          "testcase": ({"name", "assertions", "time", "classname", "status"}, {"name"}),
          "property": ({"name", "value"}, {"name", "value"}),
          "failure": ({"message", "type"}, set()), "error": ({"message", "type"}, set()),
          "properties": (set(), set()), "system-out": (set(), set())}
_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?")
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")


def conforms(el) -> None:
    allowed, required = _ATTRS[el.tag]
    assert set(el.attrib) <= allowed and required <= set(el.attrib), (el.tag, el.attrib)
    if "time" in el.attrib:
        assert _TIME.fullmatch(el.get("time")), el.get("time")
    if "timestamp" in el.attrib:
        assert _STAMP.fullmatch(el.get("timestamp")), el.get("timestamp")
    order = _CHILDREN.get(el.tag, [])
    seen = [order.index(c.tag) for c in el]  # a tag outside the content model: ValueError
    assert seen == sorted(seen), (el.tag, [c.tag for c in el])
    for c in el:
        conforms(c)


@pytest.mark.parametrize("bot, extra", [("failing", ()), ("repeated", ("--repeats", "4"))])
def test_junit_keeps_to_the_common_schema(lab, tmp_path, bot, extra):
    import xml.etree.ElementTree as ET

    res, _ = run_cli(lab, bot, tmp_path / "runs", *extra, "--junit", tmp_path / "j.xml")
    assert res.exit_code == 0, res.output
    conforms(ET.parse(tmp_path / "j.xml").getroot())


def test_compare_junit_keeps_to_the_common_schema(ten, tmp_path):
    import xml.etree.ElementTree as ET

    root, a, b = ten
    cli(["compare", a, b, "-q", "--resamples", "200", "--junit", tmp_path / "c.xml"])
    cli(["compare", a, b, a, "-q", "--resamples", "200", "--junit", tmp_path / "n.xml"])
    for name in ("c.xml", "n.xml"):
        conforms(ET.parse(tmp_path / name).getroot())
