"""One judge path for the three tasks that ask it (``freeform``, ``answers``, ``query``):
the same record fields, the same ``decided_by`` for a judge that gives no verdict, the same
overall figures (``judge_decided``, ``judge_errors``, ``judge_check_<key>``) and the same
console note. The judge is a fake patched where :mod:`queryeval.tasks.judging` looks it up;
every figure is counted by hand from the cases below."""

from __future__ import annotations

import pytest

import queryeval as qe
from queryeval.engines.judge import JudgeItem, JudgeVerdict

RECORD_KEYS = {"verdict", "reason", "error", "why", "model", "prompt_version", "cached"}


class Judge:
    """pass for case ``p``, fail for ``f``, a reply without a verdict for ``m``, a raising
    call for ``r``; hostile reasons (HTML, a spreadsheet formula)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def judge(self, item: JudgeItem) -> JudgeVerdict:
        self.asked.append(item.case_id)
        if item.case_id == "r":
            raise ConnectionError("refused")
        if item.case_id == "m":
            return JudgeVerdict("maybe", reason="<script>x</script>", model="fake")
        if item.case_id == "f":
            return JudgeVerdict("fail", reason='=HYPERLINK("http://x")<b>bold</b>',
                                model="fake", prompt_version="v9")
        return JudgeVerdict("pass", reason="=cmd|' /C calc'!A0", model="fake",
                            prompt_version="v9")

    def close(self) -> None:
        pass


@pytest.fixture
def judge(monkeypatch):
    fake = Judge()
    monkeypatch.setattr("queryeval.engines.judge.make_judge", lambda options: fake)
    monkeypatch.setattr("queryeval.engines.judge.recorded_agreement",
                        lambda options: {"kappa": {"value": -0.25}, "tpr": 0.5, "n": 12})
    return fake


def _turn(cid: str, target: dict) -> dict:
    return {"id": cid, "conversation": [{"role": "user", "content": f"q {cid}?",
                                         "target": target}]}


def _run(kind: str, tmp_path, db, **kw):
    """Cases p, f, m, r, each inconclusive for its task's rules, and d, decided by them."""
    ids = ("p", "f", "m", "r")
    if kind == "freeform":
        cases = [_turn(c, {"reference": {"answer": "a supply shortage"}}) for c in ids]
        cases.append(_turn("d", {"reference": {"answer": "Paris"}}))
        resp = [{"id": c, "response": "Suppliers could not deliver."} for c in ids]
        resp.append({"id": "d", "response": "Paris"})
    elif kind == "answers":
        cases = [_turn(c, {"answers": [{"name": "n", "value": "2"}]}) for c in (*ids, "d")]
        resp = [{"id": c, "response": "It is two."} for c in ids]
        resp.append({"id": "d", "response": "@n[2]"})
    else:
        bad = "SELECT name FROM nosuchtable"  # a failing gold: execution cannot decide
        cases = [_turn(c, {"query": {"gold": bad}}) for c in ids]
        cases.append(_turn("d", {"query": {"gold": "SELECT name FROM items"}}))
        resp = [{"case_id": c, "query": "SELECT name FROM items"} for c in (*ids, "d")]
        kw["database"] = str(db)
    return qe.evaluate(cases, responses=resp, out=tmp_path / "runs",
                       judge={"model": "fake", "base_url": "http://127.0.0.1:9/v1"}, **kw)


@pytest.mark.parametrize("kind", ["freeform", "answers", "query"])
def test_one_path_in_every_task(kind, judge, tmp_path, shop):
    run = _run(kind, tmp_path, shop)
    assert run.task.name == kind and sorted(judge.asked) == ["f", "m", "p", "r"]
    recs = {r["case_id"]: r for r in run.records}
    for cid in ("p", "f", "m", "r"):
        assert set(recs[cid]["judge"]) == RECORD_KEYS, cid
    assert recs["d"]["judge"] is None
    assert recs["p"]["decided_by"] == "judge" and recs["p"]["judge"]["verdict"] == "pass"
    assert recs["p"]["judge"]["reason"] == "=cmd|' /C calc'!A0"
    assert recs["p"]["judge"]["why"] == ("gold_failed" if kind == "query" else "inconclusive")
    # no verdict, or a failed call: an error on its case, never a pass, decided_by "error"
    assert recs["m"]["judge"]["error"]["kind"] == "judge_malformed"
    assert recs["m"]["judge"]["verdict"] is None
    assert recs["r"]["judge"]["error"]["kind"] == "judge_call"
    for cid in ("m", "r"):
        assert (recs[cid]["status"], recs[cid]["decided_by"]) == ("error", "error"), cid
        assert run.results.case(cid).verdict == "error"
    assert run.results.case("p").verdict == "pass" and run.results.case("f").verdict == "fail"
    assert recs["f"]["decided_by"] == "judge"
    o = run.overall
    assert (o["judge_decided"], o["judge_errors"], o["errors"]) == (2, 2, 2)
    assert (o["judge_check_kappa"], o["judge_check_tpr"], o["judge_check_n"]) == (-0.25, 0.5, 12)
    assert "judge_check_tnr" not in o
    assert run.config["judge"]["agreement"]["n"] == 12
    notes = [n.text for n in run.task.summary(run.metrics) if hasattr(n, "text")
             and n.text.startswith("judge fake")]
    assert len(notes) == 1
    assert "2 case(s) decided by the judge, 2 left without a verdict (errors)." in notes[0]
    assert "on 12 labelled case(s): kappa -0.250, TPR 0.500, TNR n/a, accuracy n/a." in notes[0]


def test_judge_errors_are_counted_when_errors_are_skipped(judge, tmp_path, shop):
    """``on_error: skip`` drops the errors from the means, not from the judge's counts."""
    run = _run("freeform", tmp_path, shop, options={"on_error": "skip"})
    assert (run.overall["judge_decided"], run.overall["judge_errors"]) == (2, 2)
    assert run.overall["pass_rate"] == 2 / 3  # p (judge), d (exact); f failed (judge)


def _xlsx_rows(run) -> dict[str, dict]:
    """The first sheet's rows by case id, headers normalised (``judge reason`` ->
    ``judge_reason``), each value with its cell type."""
    from openpyxl import load_workbook

    book = load_workbook(next(run.path.parent.glob("report_*.xlsx")))
    ws = book.worksheets[0]
    rows = list(ws.iter_rows())
    heads = [str(c.value).replace(" ", "_") for c in rows[0]]
    key = "id" if "id" in heads else "case_id"
    out = {}
    for row in rows[1:]:
        cells = dict(zip(heads, row, strict=False))
        out.setdefault(str(cells[key].value), {k: (c.value, c.data_type) for k, c in cells.items()})
    return out


@pytest.mark.parametrize("kind", ["freeform", "answers", "query"])
def test_every_surface_shows_the_judge(kind, judge, tmp_path, shop):
    """CSV, xlsx, the HTML case details and the viewer's case page show each case's
    ``decided_by`` and the judge's verdict and reason as the record has them, hostile text
    as text (``<script>``, a ``=cmd|`` formula)."""
    import csv

    from queryeval.report.html_page import esc

    run = _run(kind, tmp_path, shop, reports=True)
    recs = {r["case_id"]: r for r in run.records}
    with open(next(run.path.parent.glob("results_*.csv")), newline="", encoding="utf-8") as fh:
        csv_rows = {r["case_id"]: r for r in csv.DictReader(fh)}
    xlsx = _xlsx_rows(run)
    page = next(run.path.parent.glob("report_*.html")).read_text(encoding="utf-8")
    assert "<script>x</script>" not in page
    for cid, rec in recs.items():
        j = rec["judge"] or {}
        want = (rec["decided_by"], j.get("verdict") or "", j.get("reason") or "")
        got = (csv_rows[cid]["decided_by"], csv_rows[cid]["judge_verdict"],
               csv_rows[cid]["judge_reason"])
        assert got in (want, (want[0], want[1], "'" + want[2])), cid  # CSV neutralises =
        cells = xlsx[cid]
        assert tuple(cells[k][0] or "" for k in ("decided_by", "judge_verdict",
                                                  "judge_reason")) == want, cid
        assert cells["judge_reason"][1] != "f", cid  # text, never a formula
        if rec["judge"] and cid != "p":  # the HTML report details the cases not passed
            assert f"<b>judge</b> {esc(j.get('verdict') or 'no verdict')}: {esc(want[2])}" in page
    assert recs["d"]["judge"] is None and recs["d"]["decided_by"] not in ("judge", "error")
    assert page.count("<b>decided by</b> judge") == 1 and page.count("<b>decided by</b> error") == 2
    assert esc('=HYPERLINK("http://x")<b>bold</b>') in page and "<b>bold</b>" not in page
    assert "judge error — judge_call: ConnectionError: refused" in page

    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from helpers.viewer_js import render_case_page
    from queryeval.viewer.server import create_app

    client = TestClient(create_app(tmp_path / "runs", resamples=50), base_url="http://127.0.0.1")
    bid = run.path.stem.removeprefix("batch_")
    shown = {}
    for cid in ("p", "f", "m", "d"):
        doc = client.get(f"/api/runs/{bid}/case", params={"id": cid}).json()
        assert doc["record"]["judge"] == recs[cid]["judge"], cid
        shown[cid] = render_case_page(doc, tmp_path, bid, cid)
    assert shown["p"]["ids"]["decided-by"] == "judge"
    assert shown["p"]["ids"]["judge"].startswith("judge pass: =cmd|' /C calc'!A0 (asked: ")
    assert shown["f"]["ids"]["judge"].startswith('judge fail: =HYPERLINK("http://x")<b>bold</b>')
    assert shown["m"]["ids"]["decided-by"] == "error"
    assert shown["m"]["ids"]["judge"].startswith("judge no verdict: <script>x</script>")
    assert shown["m"]["ids"]["judge-error"] == "judge error — judge_malformed: no verdict"
    assert "script" not in shown["m"]["tags"]
    assert shown["d"]["ids"]["decided-by"] == recs["d"]["decided_by"]
    assert "judge" not in shown["d"]["ids"]
