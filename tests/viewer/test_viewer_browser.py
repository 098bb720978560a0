"""``queryeval view`` in headless Chromium (through chromedriver's WebDriver API, the small
client of test_html_browser): the server runs in a thread on a free loopback port over a
folder of four real runs (three of the example term-selection suite, one answers run whose
first case is named ``<script>alert(1)</script>``, one SPARQL run). The test opens the index, filters it,
opens a run, filters its cases, opens a case, selects three runs and compares them; the
browser console stays empty and each step's screenshot is written to
``$QUERYEVAL_SCREENSHOTS`` when set."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from helpers.html_browser import HOSTILE, PNG_MAGIC, WebDriver, _answers_files  # noqa: E402
from helpers.live_server import LiveServer  # noqa: E402
from helpers.sdmx_variants import FRANCE, USA  # noqa: E402
from helpers.sdmx_variants import variant_responses as _variant  # noqa: E402
from queryeval.run.config import RunConfig  # noqa: E402
from queryeval.run.evaluate import start_run  # noqa: E402
from queryeval.run.results import RunResults  # noqa: E402
from queryeval.viewer.server import create_app  # noqa: E402

pytestmark = pytest.mark.slow


def _sdmx(examples: Path, out: Path, responses: Path) -> Path:
    return start_run(RunConfig(suite=str(examples / "sdmx" / "suite"), responses=str(responses),
                               out=str(out), reports=False)).log.paths.batch


@pytest.fixture(scope="module")
def server(tmp_path_factory, examples_dir):
    tmp = tmp_path_factory.mktemp("view")
    root = tmp / "runs"
    a = _sdmx(examples_dir, root / "a", examples_dir / "sdmx" / "responses.jsonl")
    records = RunResults.open(a).records
    b = _sdmx(examples_dir, root / "b", _variant(records, tmp / "fixed.jsonl", fix={FRANCE},
                                                  empty={USA}))
    c = _sdmx(examples_dir, root / "c", _variant(records, tmp / "silent.jsonl",
                                                  empty={r["case_id"] for r in records}))
    suite, responses = _answers_files(tmp, 12)
    d = start_run(RunConfig(suite=str(suite), responses=str(responses), out=str(root / "d"),
                            reports=False)).log.paths.batch
    e = start_run(RunConfig(suite=str(examples_dir / "sparql" / "suite.yaml"), out=str(root / "e"),
                            responses=str(examples_dir / "sparql" / "predictions.jsonl"),
                            task_options={"store_dir": str(tmp / "store")},
                            reports=False)).log.paths.batch
    server = LiveServer(create_app(root, resamples=300))
    ids = [p.stem[len("batch_"):] for p in (a, b, c, d, e)]
    yield {"url": server.url, "ids": ids, "paths": [a, b, c, d, e]}
    server.close()


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    wd = WebDriver(tmp_path_factory.mktemp("wd-view"))
    yield wd
    wd.close()


def _wait(driver: WebDriver, script: str, want, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        got = driver.run(script)
        if got == want:
            return got
        if time.monotonic() > deadline:
            shown = driver.run("var e = document.getElementById('error');"
                               "return e && e.textContent")
            raise AssertionError(f"{script!r}: {got!r} != {want!r}; page error: {shown}")
        time.sleep(0.1)


def _ready(driver: WebDriver) -> None:
    _wait(driver, "return document.body.getAttribute('data-ok')", "1")


def _shot(driver: WebDriver, name: str, tmp: Path) -> None:
    height = driver.run("return document.documentElement.scrollHeight")
    png = driver.screenshot(min(height + 40, 4000))
    assert png[:8] == PNG_MAGIC and len(png) > 10_000
    (tmp / f"{name}.png").write_bytes(png)
    target = os.environ.get("QUERYEVAL_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / f"{name}.png").write_bytes(png)


def _errors(driver: WebDriver) -> list[dict]:
    return [e for e in driver.console() if e.get("level") in ("SEVERE", "WARNING")]


def test_browse_filter_open_and_compare(server, driver, tmp_path):
    ids = server["ids"]
    driver.console()
    driver._call("POST", "/url", {"url": server["url"]})
    _ready(driver)
    assert driver.run("return document.querySelectorAll('#runs tbody tr').length") == 5
    # filtering the index
    shown = driver.run("var f = document.getElementById('run-filter'); f.value = 'silent';"
                       "f.dispatchEvent(new Event('input')); return Array.prototype.filter.call("
                       "document.querySelectorAll('#runs tbody tr'), function (r) {"
                       " return !r.hidden; }).map(function (r) { return r.getAttribute('data-run'); })")
    assert shown == [ids[2]]
    driver.run("var f = document.getElementById('run-filter'); f.value = '';"
               "f.dispatchEvent(new Event('input'));")
    _shot(driver, "view-index", tmp_path)
    # one run: 23 cases, filtered to the six naming or tagged cpi
    driver.run(f"document.querySelector('tr[data-run=\"{ids[0]}\"] a.runlink').click()")
    _ready(driver)
    assert driver.run("return document.querySelectorAll('#cases tbody tr').length") == 23
    # the Overall table is the HTML report's (same rows, same CI text; 300 resamples both)
    from queryeval.report.html import figure_kinds, no_interval, overall_rows, report_figures

    fig = report_figures(server["paths"][0], resamples=300)
    loaded = RunResults.open(server["paths"][0])
    kinds = figure_kinds(loaded.task)
    want = [[k, ("—" + (f" {why}" if (why := no_interval(k, v, fig.cis, kinds)) else ""))
             if ci is None else f"[{ci.low:.4f}, {ci.high:.4f}]"]
            for k, v, ci in overall_rows(loaded, fig.metrics, fig.cis)]
    assert driver.run("return Array.prototype.map.call(document.querySelectorAll("
                      "'#overall tbody tr'), function (r) { return [r.cells[0].textContent,"
                      " r.cells[2].textContent]; })") == want
    driver.run("var f = document.getElementById('case-filter'); f.value = 'cpi';"
               "f.dispatchEvent(new Event('input'));")
    _wait(driver, "return document.body.getAttribute('data-cases')", "6")
    _wait(driver, "return document.querySelectorAll('#cases tbody tr').length", 6)
    assert driver.run("return document.getElementById('case-count').textContent") == \
        "1–6 of 6 matching (23 cases)"
    _shot(driver, "view-run", tmp_path)
    # one case
    driver.run(f"document.querySelector('tr[data-case=\"{USA}\"] a.caselink').click()")
    _ready(driver)
    assert driver.run("return document.getElementById('case-title').textContent") == \
        "monthly_cpi_usa"
    assert driver.run("return document.querySelectorAll('dd.found').length") >= 1
    _shot(driver, "view-case", tmp_path)
    # three runs selected on the index -> the N-way comparison
    driver._call("POST", "/url", {"url": server["url"] + "#/"})
    _ready(driver)
    for run_id in ids[:3]:
        driver.run(f"document.querySelector('input[data-run=\"{run_id}\"]').click()")
    driver.run("document.getElementById('compare-btn').click()")
    _ready(driver)
    heads = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                       "'#nway thead th'), function (t) { return t.textContent; })")
    assert heads == ["metric", "n", "a: responses.jsonl", "b: fixed.jsonl", "c: silent.jsonl"]
    best = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                      "'#nway tbody tr'), function (r) { return Array.prototype.map.call("
                      "r.querySelectorAll('td.best'), function (c) { return c.textContent; }); })")
    # A and B tie (B fixes one case and breaks another); against the baseline only, A is
    # marked significantly better than C ("c"), B is not tested against C
    assert best == [["0.8333c", "0.8333"], ["0.8478c", "0.8478"]]
    # the headline, per run against the baseline, from the compare model's verdicts
    verdict = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                         "'#verdict li'), function (li) { return li.textContent; })")
    assert verdict[1].startswith("c (silent.jsonl) against a (responses.jsonl): significantly "
                                 "worse on ") and "macro_precision" in verdict[1]
    flips = driver.run("return document.querySelectorAll('#flips tbody tr').length")
    assert flips > 20
    _shot(driver, "view-compare", tmp_path)
    # every pair: now B is tested against C too and marked better
    driver.run("document.getElementById('pairs-toggle').click()")
    _wait(driver, "return Array.prototype.map.call(document.querySelectorAll("
                  "'#nway tbody tr td.best'), function (c) { return c.textContent; }).join(' ')",
          "0.8333c 0.8333c 0.8478c 0.8478c")
    # a flipped case links to the case in the run
    driver.run("document.querySelector('#flips tbody tr td:nth-child(6) a').click()")
    _ready(driver)
    assert driver.run("return document.getElementById('case-title') !== null") is True
    assert _errors(driver) == []


def test_hostile_case_name_stays_text(server, driver, tmp_path):
    driver.console()
    driver._call("POST", "/url", {"url": server["url"] + "#/run/" + server["ids"][3]})
    _ready(driver)
    cells = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                       "'#cases tbody tr td:nth-child(2)'), function (c) { return c.textContent; })")
    assert HOSTILE in cells
    assert driver.run("return document.querySelectorAll('#cases script, #cases img').length") == 0
    _shot(driver, "view-answers", tmp_path)
    assert _errors(driver) == []


def test_sparql_case_shows_gold_and_predicted_rows(server, driver, tmp_path):
    driver.console()
    driver._call("POST", "/url", {"url": server["url"] + "#/case/" + server["ids"][4] +
                                  "/ahu-feeds-vav"})
    _ready(driver)
    tables = driver.run(
        "return Array.prototype.map.call(document.querySelectorAll('table.result'), function (t) {"
        " return [Array.prototype.map.call(t.tHead.rows[0].cells, function (c) {"
        " return c.textContent; }), t.querySelectorAll('tbody tr.found').length,"
        " t.tBodies[0].rows.length]; })")
    # gold rows (ahu, vav) and predicted rows (vav, ahu): all five matched under the mapping
    assert tables == [[["ahu", "vav"], 5, 5], [["vav", "ahu"], 5, 5]]
    _shot(driver, "view-sparql-case", tmp_path)
    assert _errors(driver) == []


def test_malformed_runs_derived_k_and_width(driver, tmp_path, examples_dir):
    """An index holding a run whose task is an object and timestamp a number, an unreadable
    batch (a JSON list) and a built-in retrieval run with its derived k=1 batch: the page
    renders every row (the two unreadable ones with their reasons: the typed batch names the
    field of the wrong type), names the retrieval systems like the HTML report, and at
    1200 px the table fits the window."""
    import shutil

    from queryeval.cli.app import main

    root = tmp_path / "runs"
    a = _sdmx(examples_dir, root / "odd", examples_dir / "sdmx" / "responses.jsonl")
    doc = json.loads(a.read_text(encoding="utf-8"))
    doc.update(task={"x": 1}, timestamp=5)
    a.write_text(json.dumps(doc), encoding="utf-8")
    (root / "broken").mkdir()
    (root / "broken" / "batch_broken.json").write_text("[1, 2]", encoding="utf-8")
    assert main(["run", str(examples_dir / "retrieval" / "questions.csv"), "--corpus",
                 str(examples_dir / "retrieval" / "corpus.jsonl"), "--k", "1,3",
                 "--out", str(root / "ret"), "-q"]) == 0
    server = LiveServer(create_app(root, resamples=100))
    try:
        driver.console()
        driver._call("POST", "/window/rect", {"width": 1200, "height": 900})
        driver._call("POST", "/url", {"url": server.url})
        _ready(driver)
        assert driver.run("return document.getElementById('error')") is None
        cells = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                           "'#runs tbody tr'), function (r) { return [r.cells[3].textContent,"
                           " r.cells[5].textContent, r.cells[7].textContent]; })")
        by_task = sorted(cells)
        assert any(c[2].startswith("unreadable: batch_") and c[2].endswith("(and 1 more error)")
                   and ".json: timestamp: not a run log file: " in c[2]  # the first, then task
                   for c in by_task), by_task
        assert sorted(c[1] for c in cells if c[0] == "retrieval") == [
            "built-in: bm25", "built-in: bm25 (derived, k=1)"]
        assert any(c[2].startswith("unreadable: broken/batch_broken.json")
                   or c[2].startswith("unreadable: batch_broken.json") for c in cells), cells
        heads = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                           "'#runs td.headline'), function (c) { return c.textContent; })")
        assert any("recall@3" in h for h in heads) and not any("recall_at_k" in h for h in heads)
        right = driver.run("return Math.ceil(document.getElementById('runs')"
                           ".getBoundingClientRect().right)")
        width = driver.run("return document.documentElement.clientWidth")
        assert right <= width, (right, width)
        png = __import__("base64").b64decode(driver._call("GET", "/screenshot"))
        assert png[:8] == PNG_MAGIC
        target = os.environ.get("QUERYEVAL_SCREENSHOTS")
        for folder in [tmp_path] + ([Path(target)] if target else []):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "view-index-malformed-1200.png").write_bytes(png)
        assert _errors(driver) == []
    finally:
        driver._call("POST", "/window/rect", {"width": 1280, "height": 1000})
        server.close()
        shutil.rmtree(root / "broken", ignore_errors=True)


def test_verdicts_attempts_derived_k_headline_and_expected_text(driver, tmp_path, examples_dir):
    """Issue 23 items 2, 3, 10 in the page: a recorded retrieval run at k 1 and 5 whose
    recall@5 is set to 1.0 in its metrics (as a dense run scored on this suite; the page
    used to drop any figure equal to 1.0) with its derived k=1 batch listed under it; the
    verdict filter keeps the 15 misses, whose page shows the expected chunk's text from the
    corpus in the folder; a run with 3 repeats lists each case once with a link per attempt."""
    import shutil

    import queryeval as qe
    from queryeval.cli.app import main

    root = tmp_path / "runs"
    root.mkdir()
    corpus = root / "corpus.jsonl"
    shutil.copy(examples_dir / "retrieval" / "corpus.jsonl", corpus)
    ex = examples_dir / "retrieval"
    assert main(["run", str(ex / "questions.csv"), "--responses", str(ex / "responses.jsonl"),
                 "--corpus", str(corpus), "--k", "1,5", "-q", "--no-report",
                 "--out", str(root / "ret")]) == 0
    (parent,) = [p for p in root.rglob("batch_*.json") if "derived_from" not in p.read_text()]
    (derived,) = [p for p in root.rglob("batch_*.json") if p != parent]
    metrics = next(parent.parent.glob(f"metrics_{parent.stem[6:]}.json"))
    doc = json.loads(metrics.read_text())
    doc["overall_metrics"]["recall@5"] = 1.0
    metrics.write_text(json.dumps(doc))
    suite = examples_dir / "sdmx" / "suite"
    qe.evaluate(str(suite), system=f"python:{suite.parent / 'system.py'}:select", repeats=3,
                out=root / "rep", reports=False)
    rep = next((root / "rep").rglob("batch_*.json")).stem[6:]
    server = LiveServer(create_app(root, resamples=100))
    try:
        url = server.url
        driver.console()
        driver._call("POST", "/url", {"url": url})
        _ready(driver)
        head = driver.run(f"var c = document.querySelector('tr[data-run=\"{parent.stem[6:]}\"] "
                          "[data-metric=\"recall@5\"]'); return c && c.textContent")
        assert head == "recall@5 1.0000"
        order = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                           "'#runs tbody tr'), function (r) { return [r.getAttribute('data-run'),"
                           " r.className]; })")
        at = order.index([parent.stem[6:], ""])
        assert order[at + 1] == [derived.stem[6:], "derived"]
        # the misses: verdict fail though the call status is ok; the expected chunk's text
        driver._call("POST", "/url", {"url": url + "#/run/" + parent.stem[6:]})
        _ready(driver)
        driver.run("var s = document.getElementById('case-verdict'); s.value = 'fail';"
                   "s.dispatchEvent(new Event('change'));")
        _wait(driver, "return document.body.getAttribute('data-cases')", "15")
        cells = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                           "'#cases tbody tr'), function (r) { return [r.cells[2].textContent,"
                           " r.cells[4].textContent]; })")  # verdict, (reason,) status
        assert cells == [["fail", "ok"]] * 15
        driver.run("document.querySelector('#cases tbody a.caselink').click()")
        _ready(driver)
        text = driver.run("return document.getElementById('expected-text').textContent")
        chunks = [json.loads(line)["content"] for line in corpus.read_text().splitlines()]
        assert text in chunks
        # a repeated run: 23 rows (one per case), three attempt links each
        driver._call("POST", "/url", {"url": url + "#/run/" + rep})
        _ready(driver)
        assert driver.run("return document.querySelectorAll('#cases tbody tr').length") == 23
        assert driver.run("return document.querySelectorAll('#cases tbody a.attempt').length") == 69
        assert driver.run("return document.querySelector('#repeats') !== null") is True
        driver.run("document.querySelectorAll('#cases tbody tr')[0].querySelectorAll("
                   "'a.attempt')[2].click()")
        _ready(driver)
        assert driver.run("return document.querySelector('#attempts b.current').textContent"
                          ).startswith("repeat 2")
        assert _errors(driver) == []
    finally:
        server.close()
