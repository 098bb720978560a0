"""Comparisons answer "which is better" (issue 23 item 9) and say which system is which
(item 8): a verdict per metric, Holm over distinct tested metrics only, the warnings, a
concise console, MultiComparison's files; labels from --name / name= or a stable default,
on every surface."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import queryeval as qe
from queryeval.cli.app import app

REPO = Path(__file__).resolve().parents[2]


def _cases(n: int, names: tuple[str, ...] = ("n",)) -> list[dict]:
    return [{"id": f"c{i}", "conversation": [{"role": "user", "content": f"question {i}?",
             "target": {"answers": [{"name": x, "value": str(i)} for x in names]}}]}
            for i in range(n)]


def _index(request: dict) -> int:
    text = json.dumps(request)
    return next(i for i in range(100) if f"question {i}?" in text)


def right(request: dict) -> dict:
    i = _index(request)
    return {"response": f"@n[{i}] @m[{i}]"}


def wrong(request: dict) -> dict:
    return {"response": "@n[x] @m[x]"}


def half(request: dict) -> dict:
    """First sub-answer right, the second wrong."""
    return {"response": f"@n[{_index(request)}] @m[x]"}


@pytest.fixture(scope="module")
def worse12(tmp_path_factory):
    root = tmp_path_factory.mktemp("w12")
    cases = _cases(12)
    return (qe.evaluate(cases, system=right, out=root / "a"),
            qe.evaluate(cases, system=wrong, out=root / "b"))


def test_b_worse_everywhere_leads_with_worse_and_counts_stay_out_of_holm(worse12):
    a, b = worse12
    comp = qe.compare(a, b)
    # one sub-answer per case: all_correct equals proportion_correct case by case (one test);
    # subquestions and correct_subquestions are counts (not tested). Family of 1: the exact
    # sign-flip p of 12 differences of -1 is 2 / 2**12, unadjusted.
    m = comp.metric("proportion_correct")
    assert m.tested and m.p_holm == pytest.approx(2 / 2**12) and m.verdict == "worse"
    twin = comp.metric("all_correct")
    assert (twin.tested, twin.same_as, twin.p_holm, twin.verdict) == (
        False, "proportion_correct", m.p_holm, "worse")
    for count in ("subquestions", "correct_subquestions"):
        assert comp.metric(count).verdict == "count (not tested)"
        assert comp.metric(count).p_holm is None
    assert comp.headline.startswith("B against A over 2 metric(s)")
    assert "worse on 2: proportion_correct, all_correct" in comp.headline
    assert comp.regressions == ["proportion_correct", "all_correct"]


def test_html_and_json_lead_with_the_verdict(worse12, tmp_path):
    a, b = worse12
    comp = qe.compare(a, b)
    page = comp.to_html(tmp_path / "c.html").read_text()
    assert "no significant regression" not in page
    head = page.index("worse on 2: proportion_correct, all_correct")
    assert head < page.index("<h2>Metrics</h2>")
    doc = json.loads(comp.to_json(tmp_path / "c.json").read_text())
    assert doc["verdicts"]["proportion_correct"] == "worse"
    assert doc["verdicts"]["subquestions"] == "count (not tested)"
    assert doc["headline"] == comp.headline


def test_ci_excluding_zero_beside_holm_p_above_alpha_is_explained(tmp_path):
    # 6 cases with two sub-answers: B gets the second wrong on every case. proportion_correct
    # differs by -0.5 and all_correct by -1 on all 6: raw p = 2 / 2**6 = 0.03125 each, Holm
    # over the 2 tested metrics: 0.0625 >= 0.05, while each bootstrap CI is a point below 0
    cases = _cases(6, ("n", "m"))
    a = qe.evaluate(cases, system=right, out=tmp_path / "a")
    b = qe.evaluate(cases, system=half, out=tmp_path / "b")
    comp = qe.compare(a, b)
    m = comp.metric("all_correct")
    assert (m.p_randomization, m.p_holm) == (pytest.approx(0.03125), pytest.approx(0.0625))
    assert (m.ci_low, m.ci_high) == (-1.0, -1.0) and m.verdict == "no detectable difference"
    text = " ".join(comp.warnings)
    assert "all_correct: the 95% CI of B − A [-1.0000, -1.0000] excludes 0" in text
    assert "becomes 0.0625 after Holm's adjustment over 2 tested metric(s)" in text
    assert "all_correct: only 6 case(s) differ; the smallest p the test can give is 0.03125" in text


def test_n_too_small_for_the_observed_difference_is_warned(tmp_path):
    # 20 cases: A wrong on c0..c2, B wrong on c3..c8. Differences: +1 x3, -1 x6, 0 x11;
    # mean -0.15, sd sqrt((9 - 20 * 0.15**2) / 19) = 0.67082; cases for 80% power at 0.05:
    # ((1.95996 + 0.84162) * 0.67082 / 0.15)**2 = 156.98 -> 157
    cases = _cases(20)

    def a_sys(request: dict) -> dict:
        return wrong(request) if _index(request) < 3 else right(request)

    def b_sys(request: dict) -> dict:
        return wrong(request) if 3 <= _index(request) < 9 else right(request)

    a = qe.evaluate(cases, system=a_sys, out=tmp_path / "a")
    b = qe.evaluate(cases, system=b_sys, out=tmp_path / "b")
    comp = qe.compare(a, b, metrics=["proportion_correct"])
    assert comp.metric("proportion_correct").verdict == "no detectable difference"
    assert any("n = 20 is too small to detect the observed difference (-0.1500): about 157 "
               "paired cases" in w for w in comp.warnings), comp.warnings


def test_a_run_compared_with_itself_is_warned(worse12):
    a, _ = worse12
    assert any("same run" in w for w in qe.compare(a, a).warnings)
    assert any("same run" in w for w in qe.compare(a, a, a).warnings)


def test_console_is_concise_and_details_list_the_flips(worse12):
    a, b = worse12
    comp = qe.compare(a, b)

    def lines(details: bool) -> list[str]:
        buf = io.StringIO()
        con = Console(file=buf, width=200, force_terminal=False)
        for r in comp.renderables(details=details):
            con.print(r)
        return buf.getvalue().splitlines()

    short, long = lines(False), lines(True)
    assert not any("│ regressed" in line for line in short)  # no flip lists by default
    assert any("12 regressed (--details lists them" in line for line in short)
    assert any("regressed" in line and "c0" in line for line in long)
    assert len(long) > len(short)
    assert len(short) <= 20


def test_multicomparison_writes_html_json_xlsx(worse12, tmp_path):
    a, b = worse12
    multi = qe.compare(a, b, a)
    doc = json.loads(multi.to_json(tmp_path / "m.json").read_text())
    assert doc["runs"][1]["cases"] == 12 and "worse on 2" in doc["headline"]
    assert "worse on 2" in multi.to_html(tmp_path / "m.html").read_text()
    from openpyxl import load_workbook

    assert load_workbook(multi.to_xlsx(tmp_path / "m.xlsx")).sheetnames == ["Compare", "Tests"]


# --- labels (item 8) --------------------------------------------------------------------------
def test_name_is_the_label_on_every_surface(tmp_path):
    cases = _cases(4)
    a = qe.evaluate(cases, system=right, out=tmp_path / "a", name="baseline-v1")
    b = qe.evaluate(cases, system=wrong, out=tmp_path / "b", system_name="candidate")
    assert (a.label, a.batch["label"], b.label) == ("baseline-v1", "baseline-v1", "candidate")
    comp = qe.compare(a, b)
    assert comp.labels == ["baseline-v1", "candidate"]
    assert comp.to_dict()["run_a"]["label"] == "baseline-v1"
    page = comp.to_html(tmp_path / "c.html").read_text()
    assert "baseline-v1" in page and "candidate" in page and "baseline-v1" in comp._repr_html_()
    assert "baseline-v1" in str(comp)
    assert qe.compare(a, b, pairs="all").labels == ["baseline-v1", "candidate"]


def test_default_label_is_stable_for_the_same_callable(tmp_path):
    cases = _cases(2)
    one = qe.evaluate(cases, system=right, out=tmp_path / "1")
    two = qe.evaluate(cases, system=right, out=tmp_path / "2")
    assert one.label == two.label == f"{__name__}.right"


def test_cli_name_and_builtin_label_in_compare_html(tmp_path):
    suite = REPO / "examples" / "retrieval"
    runner = CliRunner()
    for folder, extra in (("a", []), ("b", ["--name", "bm25-tuned"])):
        res = runner.invoke(app, ["run", str(suite / "questions.csv"), "--corpus",
                                  str(suite / "corpus.jsonl"), "--out", str(tmp_path / folder),
                                  "--k", "10", "--no-report", "-q", *extra])
        assert res.exit_code == 0, res.output
    a, b = (next((tmp_path / f).rglob("batch_*.json")) for f in "ab")
    res = runner.invoke(app, ["compare", str(a), str(b), "-q", "--html", str(tmp_path / "c.html"),
                              "--json", str(tmp_path / "c.json"), "--resamples", "100"])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "c.html").read_text()
    assert "recorded: None" not in page and "built-in: bm25" in page and "bm25-tuned" in page
    doc = json.loads((tmp_path / "c.json").read_text())
    assert (doc["run_a"]["label"], doc["run_b"]["label"]) == ("bm25", "bm25-tuned")
    # hit_rate@10 equals recall@10 case by case (one relevant chunk): one test, not two
    hit = next(m for m in doc["metrics"] if m["metric"].startswith("hit_rate@"))
    assert hit["same_as"] == hit["metric"].replace("hit_rate", "recall") and not hit["tested"]
    # precision@10 = recall@10 / 10 case by case: the same (scale-free) test
    prec = next(m for m in doc["metrics"] if m["metric"].startswith("precision@"))
    assert prec["same_as"] == prec["metric"].replace("precision", "recall")
    assert prec["p_holm"] == next(m["p_holm"] for m in doc["metrics"]
                                  if m["metric"] == prec["same_as"])


def test_qrels_compare_labels_runs_by_their_run_tag(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    paths = []
    for tag, docs in (("sysA", ("d1", "d2")), ("sysB", ("d2", "d1"))):
        p = tmp_path / f"{tag.lower()}.run"
        p.write_text(f"q1 Q0 {docs[0]} 1 2.0 {tag}\nq1 Q0 {docs[1]} 2 1.0 {tag}\n"
                     f"q2 Q0 {docs[1]} 1 2.0 {tag}\nq2 Q0 {docs[0]} 2 1.0 {tag}\n")
        paths.append(str(p))
    out = tmp_path / "c.json"
    res = CliRunner().invoke(app, ["compare", *paths, "--qrels", str(qrels), "-q", "--json",
                                   str(out), "-m", "mrr@10"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [r["label"] for r in doc["runs"]] == ["sysA", "sysB"]
    # sysA ranks each relevant document first, sysB second: mrr 1.0 vs 0.5
    assert doc["overall"]["metrics"][0]["means"] == [1.0, 0.5]
