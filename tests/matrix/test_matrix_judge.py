"""The cross-feature matrix for a judged answers-task run (issue 27): plain, repeats, cached
and resumed runs whose free-text responses the LLM judge (the loopback fake) decides, read by
every consumer (tests/helpers/matrix_checks.py), compared, served by the viewer, and gated
(``--fail-under pass_rate=...``)."""

from __future__ import annotations

import pytest

import queryeval as qe
from helpers.judge_fixtures import values_judge_module  # noqa: F401 - the fixture "fake", one per module
from helpers.matrix_checks import (
    build_kind,
    built_once,
    check_compare,
    check_consumers,
    check_corrected,
    write_lab,
)
from queryeval.cli.app import main
from queryeval.engines.judge.checks import save_check
from queryeval.engines.judge.prompt import PROMPT_VERSION

N = 6
BOTS = '''
import re

def _i(request):
    return int(re.search(r"question (\\d+)\\?", str(request)).group(1))

def plain(request):
    i = _i(request)
    return {"response": ["@n[0]", "@n[x]", "The answer is 2.", "It is about 30.",
                         "I make it 4", "@n[5]"][i]}

def repeated(request):          # case i right (in words, so judged) on repeats 0 .. i % 4
    i = _i(request)
    return {"response": f"the answer is {i if request.get('repeat', 0) <= i % 4 else 99}"}
'''
# hand-computed all_correct: c0 and c5 by the rules, c2/c3/c4 by the judge, c1 by the rules
PLAIN = {"c0": 1.0, "c1": 0.0, "c2": 1.0, "c3": 0.0, "c4": 1.0, "c5": 1.0}
JUDGED_PLAIN = 3
REPEATED = {f"c{i}": (i % 4 + 1) / 4 for i in range(N)}


@pytest.fixture(scope="module")
def lab(tmp_path_factory, fake):
    root = tmp_path_factory.mktemp("matrix_judge")
    # the judge's recorded judge-check: TPR 40/50 = 0.8, TNR 45/50 = 0.9
    save_check({"model": "judge-test", "prompt_version": PROMPT_VERSION, "n": 100,
                "tpr": {"value": 0.8}, "tnr": {"value": 0.9},
                "confusion": [[45, 5], [10, 40]]}, root / "judge-checks")
    return write_lab(root, BOTS, {f"c{i}": {"answers": [{"name": "n", "value": str(i)}]}
                                  for i in range(N)})


def _judge(lab, fake) -> dict:
    return {"model": "judge-test", "base_url": fake.url, "cache_dir": str(lab / "judge-cache"),
            "checks_dir": str(lab / "judge-checks")}


def _spec(lab, fn: str) -> str:
    return f"python:{lab / 'bots.py'}:{fn}"


def _build(kind: str, lab, fake) -> qe.Run:
    before: list[int] = []
    run = build_kind(kind, str(lab / "cases.jsonl"), lab / "bots.py", lab / "runs", n=N, keep=2,
                     judge=_judge(lab, fake), on_warm=lambda: before.append(len(fake.requests)))
    if kind == "cached":  # no judge call either
        assert len(fake.requests) == before[0]
    return run


EXPECTED = {"plain": PLAIN, "repeats": REPEATED, "cached": PLAIN, "resumed": PLAIN}
KINDS = list(EXPECTED)


@pytest.fixture(scope="module")
def built(lab, fake):
    return built_once(lambda kind: _build(kind, lab, fake))


@pytest.mark.parametrize("kind", KINDS)
def test_every_consumer(built, lab, kind):
    run = built(kind)
    check_consumers(run, "all_correct", EXPECTED[kind], overall="abq",
                    viewer_root=lab / "runs")
    recs = {}
    for r in run.records:
        recs.setdefault(r["case_id"], []).append(r)
    if kind == "repeats":  # every attempt is free text: the judge decided all of them
        assert all(r["decided_by"] == "judge" for rs in recs.values() for r in rs)
        assert run.overall["judge_decided"] == pytest.approx(N)  # per repeat, averaged
    else:
        assert {c: rs[0]["decided_by"] for c, rs in recs.items()} == {
            "c0": "rules", "c1": "rules", "c2": "judge", "c3": "judge", "c4": "judge",
            "c5": "rules"}
        assert run.overall["judge_decided"] == JUDGED_PLAIN
        assert recs["c3"][0]["judge"]["reason"] == "value missing"


def _rg(q: float) -> float:  # Rogan-Gladen by hand for that check, clipped to [0, 1]
    return min(1.0, max(0.0, (q + 0.9 - 1) / (0.8 + 0.9 - 1)))


# abq corrected for the judge's errors: plain, the rules' 2 passes (c0, c5) and the judge's
# 3 cases with q = 2/3; repeats, the mean over the 4 repeats of each one's corrected abq
# (every attempt judged; repeat r passes the cases with i % 4 >= r: 6, 4, 2, 1 of 6)
_PLAIN_CORRECTED = (2 + 3 * _rg(2 / 3)) / 6
CORRECTED = {"plain": _PLAIN_CORRECTED, "cached": _PLAIN_CORRECTED,
             "resumed": _PLAIN_CORRECTED,
             "repeats": sum(_rg(k / 6) for k in (6, 4, 2, 1)) / 4}


@pytest.mark.parametrize("kind", KINDS)
def test_judge_corrected_abq_on_every_surface(built, lab, kind):
    assert CORRECTED["plain"] == pytest.approx(31 / 42)
    assert CORRECTED["repeats"] == pytest.approx(47 / 84)
    check_corrected(built(kind), "abq", CORRECTED[kind],
                    raw=sum(EXPECTED[kind].values()) / N, viewer_root=lab / "runs")


@pytest.mark.parametrize("kind", ["repeats", "cached", "resumed"])
def test_compare_with_plain(built, kind, tmp_path):
    check_compare(built("plain"), built(kind), "all_correct", PLAIN, EXPECTED[kind], tmp_path)


def test_pass_rate_gate_on_a_judged_run(lab, fake, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "qc"))  # the judge's default cache
    rate = sum(REPEATED.values()) / N  # 3.25 / 6
    args = ["run", str(lab / "cases.jsonl"), "--system", _spec(lab, "repeated"), "--repeats",
            "4", "--out", str(tmp_path / "g"), "-q", "--no-report", "--retries", "0",
            "--judge-model", "judge-test", "--judge-base-url", fake.url]
    assert main([*args, "--fail-under", f"pass_rate={rate - 1e-6}"]) == 0
    assert main([*args, "--fail-under", f"pass_rate={rate + 1e-6}"]) == 1
    assert "pass_rate" in capsys.readouterr().err
    assert list((tmp_path / "qc" / "judge").glob("*.json"))  # the judge was asked and cached


@pytest.mark.parametrize("kind", KINDS)
def test_the_judge_on_every_surface(built, lab, kind, tmp_path):
    """The xlsx Overview, the HTML case details and the viewer's case page show what decided
    each case and the judge's verdict and reason, as the records have them."""
    from openpyxl import load_workbook
    from starlette.testclient import TestClient

    from helpers.viewer_js import render_case_page
    from queryeval.viewer.server import create_app

    run = built(kind)
    folder = run.path.parent
    want = sorted((r["case_id"], r["decided_by"], (r["judge"] or {}).get("verdict") or "",
                   (r["judge"] or {}).get("reason") or "") for r in run.records)
    ws = load_workbook(next(folder.glob("report_*.xlsx")), read_only=True)["Overview"]
    rows = list(ws.iter_rows(values_only=True))
    col = {h: i for i, h in enumerate(rows[0])}
    got = sorted((r[col["id"]], r[col["decided by"]], r[col["judge verdict"]] or "",
                  r[col["judge reason"]] or "") for r in rows[1:])
    assert got == want
    page = next(folder.glob("report_*.html")).read_text(encoding="utf-8")
    assert "<b>decided by</b> judge" in page
    assert "<b>judge</b> fail: value missing <span" in page  # a case the judge failed
    bid = run.path.stem.removeprefix("batch_")
    client = TestClient(create_app(lab / "runs", resamples=50), base_url="http://127.0.0.1")
    failed = next(r for r in run.records if (r["judge"] or {}).get("verdict") == "fail")
    attempt = {"repeat": failed["repeat"]} if failed.get("repeat") is not None else {}
    doc = client.get(f"/api/runs/{bid}/case", params={"id": failed["case_id"], **attempt}).json()
    assert doc["record"]["judge"] == failed["judge"]
    shown = render_case_page(doc, tmp_path, bid, failed["case_id"])
    assert shown["ids"]["decided-by"] == "judge"
    assert shown["ids"]["judge"].startswith("judge fail: value missing (asked: inconclusive; ")
    if kind == "repeats":  # the judge decided every attempt
        return
    ruled = next(r for r in run.records if r["decided_by"] == "rules")
    doc = client.get(f"/api/runs/{bid}/case", params={"id": ruled["case_id"]}).json()
    shown = render_case_page(doc, tmp_path, bid, ruled["case_id"])
    assert shown["ids"]["decided-by"] == "rules" and "judge" not in shown["ids"]
