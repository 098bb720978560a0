"""Every page with charts, in headless Chromium at 1280 px (chromedriver's WebDriver API, the
client of test_html_browser): the two-run compare HTML (forest plot, per-case differences),
the N-way compare HTML, a retrieval run's HTML report, and the viewer's run pages (headline
figures with intervals, recall@k curve, per-case distribution, repeats pass-rate strip,
test-suite verdicts by reason), its cases table and its compare page. On each: the script
ran, the console is empty, nothing is wider than the window (no horizontal page scroll, every
chart and the cases table within it), and no two text labels of a chart overlap (their
bounding boxes, measured in the browser). A run named ``<script>…"`` by --name and a case
named ``<script>alert(1)</script>`` stay text in every chart. Screenshots go to
``$QUERYEVAL_SCREENSHOTS`` when set."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import queryeval as qe  # noqa: E402
from conftest import DEEP  # noqa: E402
from helpers.html_browser import HOSTILE, PNG_MAGIC, WebDriver, _answers_files  # noqa: E402
from helpers.live_server import LiveServer  # noqa: E402
from helpers.sdmx_variants import CANADA, FRANCE, GERMANY, USA  # noqa: E402
from helpers.sdmx_variants import variant_responses as _variant  # noqa: E402
from queryeval.report.compare import compare_many, compare_runs  # noqa: E402
from queryeval.report.compare_output import write as write_comparison  # noqa: E402
from queryeval.report.html import write_html_report  # noqa: E402
from queryeval.report.html_compare import render_nway  # noqa: E402
from queryeval.run.config import RunConfig  # noqa: E402
from queryeval.run.evaluate import start_run  # noqa: E402
from queryeval.run.results import RunResults  # noqa: E402
from queryeval.viewer.server import create_app  # noqa: E402

pytestmark = pytest.mark.slow
RUN_NAME = '<script>alert("run")</script> \'quoted\''
WIDTH = 1280

LAYOUT = """
var doc = document.documentElement, client = doc.clientWidth, overlaps = [], wide = [];
var charts = document.querySelectorAll('svg.chart');
Array.prototype.forEach.call(charts, function (svg, k) {
  var box = svg.getBoundingClientRect();
  if (box.right > client + 0.5 || box.left < -0.5) { wide.push([k, box.left, box.right]); }
  var texts = Array.prototype.map.call(svg.querySelectorAll('text'), function (t) {
    var r = t.getBoundingClientRect();
    return {t: t.textContent, l: r.left, r: r.right, top: r.top, b: r.bottom};
  }).filter(function (b) { return b.r - b.l > 0 && b.b - b.top > 0; });
  for (var i = 0; i < texts.length; i++) {
    for (var j = i + 1; j < texts.length; j++) {
      var a = texts[i], c = texts[j];
      var w = Math.min(a.r, c.r) - Math.max(a.l, c.l), h = Math.min(a.b, c.b) - Math.max(a.top, c.top);
      if (w > 0.5 && h > 0.5) { overlaps.push([k, a.t, c.t, w, h]); }
    }
  }
});
var table = document.getElementById('cases');
return {ok: document.body.getAttribute('data-ok'), client: client, scroll: doc.scrollWidth,
        height: doc.scrollHeight, charts: charts.length, wide: wide, overlaps: overlaps,
        ids: Array.prototype.map.call(document.querySelectorAll('[data-chart]'), function (f) {
          return f.getAttribute('data-chart'); }),
        table: table ? Math.ceil(table.getBoundingClientRect().right) : null,
        scripts: document.querySelectorAll('svg script, .charts script, #charts script').length};
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory, examples_dir):
    # the examples lie deep (tests/conftest.py's DEEP), and the runs as deep: every path a
    # page shows is long whatever the checkout's path, and a page must wrap it
    tmp = tmp_path_factory.mktemp("charts-view")
    root = tmp.joinpath(*DEEP, "runs")

    def sdmx(name: str, responses: Path, label: str) -> Path:
        return start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"), name=label,
                                   responses=str(responses), out=str(root / name),
                                   reports=False)).log.paths.batch

    a = sdmx("a", examples_dir / "sdmx" / "responses.jsonl", "base")
    records = RunResults.open(a).records
    b = sdmx("b", _variant(records, tmp / "b.jsonl", fix={FRANCE, GERMANY, CANADA},
                           empty={USA}), RUN_NAME)
    c = sdmx("c", _variant(records, tmp / "c.jsonl", empty={r["case_id"] for r in records}),
             "silent")
    ret = start_run(RunConfig(suite=str(examples_dir / "retrieval" / "questions.csv"),
                              out=str(root / "ret"), reports=False, task_options={
                                  "k": [1, 3, 5],
                                  "corpus": str(examples_dir / "retrieval" / "corpus.jsonl")})
                    ).log.paths.batch
    suite, responses = _answers_files(tmp, 12)
    ans = start_run(RunConfig(suite=str(suite), responses=str(responses), out=str(root / "ans"),
                              reports=False)).log.paths.batch
    sdmx_suite = examples_dir / "sdmx" / "suite"
    qe.evaluate(str(sdmx_suite), system=f"python:{sdmx_suite.parent / 'system.py'}:select",
                repeats=3, out=root / "rep", reports=False)
    rep = next((root / "rep").rglob("batch_*.json"))
    from helpers.matrix_testsuite import BOTS
    from helpers.testsuite_sql import build_example

    ts_dir = tmp / "ts"
    ts_dir.mkdir()
    build_example(ts_dir)
    (ts_dir / "bots.py").write_text(BOTS)
    ts = qe.evaluate(ts_dir / "suite.yaml", system=f"python:{ts_dir / 'bots.py'}:right",
                     out=root / "ts", reports=False, test_suite=5)
    pages = {"compare": write_comparison(compare_runs(a, b, resamples=300), tmp / "cmp.html", "html"),
             "report": write_html_report(ret, tmp / "report.html", resamples=300)}
    nway = compare_many([a, b, c], resamples=300)  # what the viewer's compare page computes
    (tmp / "nway.html").write_text(render_nway(nway), encoding="utf-8")
    pages["nway"] = tmp / "nway.html"
    ids = {k: p.stem[len("batch_"):] for k, p in
           {"a": a, "b": b, "c": c, "ret": ret, "ans": ans, "rep": rep}.items()}
    ids["ts"] = ts.batch_id
    server = LiveServer(create_app(root, resamples=300))
    yield {"url": server.url, "ids": ids, "pages": pages,
           "verdicts": {(v["run_b"], v["metric"]): v["verdict"] for v in nway.verdicts()
                        if v["run_a"] == 0}}
    server.close()


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    wd = WebDriver(tmp_path_factory.mktemp("wd-charts"))
    wd._call("POST", "/window/rect", {"width": WIDTH, "height": 1000})
    yield wd
    wd.close()


def _look(driver: WebDriver, url: str, name: str, tmp: Path) -> dict:
    """Open ``url`` at 1280 px, wait for the page's script, check the layout (see LAYOUT)
    and the console; a full-page screenshot to $QUERYEVAL_SCREENSHOTS when set."""
    driver._call("POST", "/window/rect", {"width": WIDTH, "height": 1000})
    driver.console()
    driver._call("POST", "/url", {"url": url})
    deadline = time.monotonic() + 30
    while driver.run("return document.body.getAttribute('data-ok')") != "1":
        assert time.monotonic() < deadline, driver.run(
            "var e = document.getElementById('error'); return e && e.textContent")
        time.sleep(0.1)
    state = driver.run(LAYOUT)
    assert state["scroll"] <= state["client"] <= WIDTH, state  # no horizontal page scroll
    assert state["wide"] == [], state  # every chart within the window
    assert state["overlaps"] == [], state["overlaps"]  # no two labels of a chart overlap
    assert state["scripts"] == 0
    assert [e for e in driver.console() if e.get("level") in ("SEVERE", "WARNING")] == []
    png = driver.screenshot(min(state["height"] + 40, 6000))
    assert png[:8] == PNG_MAGIC
    for folder in [tmp] + ([Path(os.environ["QUERYEVAL_SCREENSHOTS"])]
                           if os.environ.get("QUERYEVAL_SCREENSHOTS") else []):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.png").write_bytes(png)
    return state


def test_html_pages_with_charts_fit_1280(lab, driver, tmp_path):
    state = _look(driver, lab["pages"]["compare"].as_uri(), "charts-compare", tmp_path)
    assert state["ids"] == ["forest", "paired", "scatter"] and state["charts"] == 4  # + means
    # the forest's rows are the metrics, coloured by the compare's verdicts
    rows = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                      "'svg.forest g.row'), function (g) { return [g.querySelector('text')"
                      ".textContent, g.getAttribute('data-verdict')]; })")
    assert [r[0] for r in rows] == ["macro_precision", "macro_recall"]
    state = _look(driver, lab["pages"]["nway"].as_uri(), "charts-nway", tmp_path)
    assert state["ids"] == ["forest", "paired"]
    tips = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                      "'svg.forest g.row > title'), function (t) { return t.textContent; })")
    assert len(tips) == 4 and all(RUN_NAME in t for t in tips if ": b − a" in t)
    state = _look(driver, lab["pages"]["report"].as_uri(), "charts-report", tmp_path)
    assert state["charts"] >= 2


def test_viewer_run_pages_show_every_chart_kind(lab, driver, tmp_path):
    url, ids = lab["url"], lab["ids"]
    state = _look(driver, f"{url}#/run/{ids['ret']}", "charts-view-retrieval", tmp_path)
    assert state["ids"] == ["overall", "by-k", "distribution"]
    assert state["table"] is not None and state["table"] <= state["client"]  # the cases table
    # the headline bars carry the Overall table's intervals (the same figures)
    bars = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                      "'figure[data-chart=overall] rect > title'), function (t) {"
                      " return t.textContent; })")
    cells = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                       "'#overall tbody tr'), function (r) { return [r.cells[0].textContent,"
                       " r.cells[1].textContent]; })")
    shown = {k: v for k, v in cells}
    assert bars and all(t.split(" · ")[0] in shown and t.endswith(shown[t.split(" · ")[0]])
                        for t in bars), (bars, shown)
    state = _look(driver, f"{url}#/run/{ids['rep']}", "charts-view-repeats", tmp_path)
    assert "pass-rate" in state["ids"]
    state = _look(driver, f"{url}#/run/{ids['ts']}", "charts-view-testsuite", tmp_path)
    assert "test-suite" in state["ids"]
    labels = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                        "'figure[data-chart=\"test-suite\"] text.lab title'), function (t) {"
                        " return t.textContent; })")
    # the example: 3 cases equal on every neighbour, 2 refuted by one
    assert sorted(labels) == ["pass: equal on the original and all N neighbours (3)",
                              "refuted: refuted by neighbour N (2)"], labels
    state = _look(driver, f"{url}#/run/{ids['ans']}", "charts-view-answers", tmp_path)
    tips = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                      "'figure[data-chart=distribution] rect > title'), function (t) {"
                      " return t.textContent; }).join(' | ')")
    assert HOSTILE in tips  # the hostile case name is a tooltip's text, not an element
    assert state["table"] <= state["client"]


def test_viewer_index_and_case_pages_fit_1280(lab, driver, tmp_path):
    """The viewer's other pages (no charts): the index of seven runs, the first case of the
    retrieval run (its ranked chunks), an answers case and the hostile-named one."""
    from urllib.parse import quote

    url, ids = lab["url"], lab["ids"]
    _look(driver, url, "charts-view-index", tmp_path)
    assert driver.run("return document.querySelectorAll('#runs tbody tr').length") >= 7
    _look(driver, f"{url}#/run/{ids['ret']}", "charts-view-ret-cases", tmp_path)
    first = driver.run("return document.querySelector('#cases tbody tr').getAttribute('data-case')")
    for run, case in (("ret", first), ("ans", "q1"), ("ans", "q0")):
        _look(driver, f"{url}#/case/{ids[run]}/{quote(case, safe='')}",
              f"charts-view-case-{run}-{case[:8]}", tmp_path)
        assert driver.run("return document.getElementById('case-title') !== null") is True


def test_viewer_compare_page_charts(lab, driver, tmp_path):
    ids = lab["ids"]
    state = _look(driver, lab["url"] + "#/compare?" + "&".join(
        f"run={ids[k]}" for k in "abc"), "charts-view-compare", tmp_path)
    assert state["ids"] == ["forest", "paired"]
    rows = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                      "'svg.forest g.row'), function (g) { return [g.querySelector('text')"
                      ".textContent, g.getAttribute('data-verdict')]; })")
    want = [[f"{m}: {x} − a", lab["verdicts"][(j, m)]]
            for m in ("macro_precision", "macro_recall") for j, x in ((1, "b"), (2, "c"))]
    assert rows == want and [r[1] for r in want if r[0].endswith("c − a")] == ["worse", "worse"]
    assert driver.run("return document.querySelectorAll('#charts svg.forest').length") == 1


def test_the_layout_check_finds_overlaps_and_overflow(driver, tmp_path):
    """The check above can fail: two labels drawn over each other and a chart wider than
    the window are both reported."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body data-ok="1"><svg class="chart" width="1500" height="40" '
        'xmlns="http://www.w3.org/2000/svg"><text x="10" y="20">first label</text>'
        '<text x="30" y="24">second label</text><text x="400" y="20">apart</text></svg>'
        "</body></html>", encoding="utf-8")
    driver._call("POST", "/url", {"url": page.as_uri()})
    state = driver.run(LAYOUT)
    assert [o[1:3] for o in state["overlaps"]] == [["first label", "second label"]]
    assert len(state["wide"]) == 1 and state["scroll"] > state["client"]
