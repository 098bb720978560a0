"""Open the HTML reports in headless Chromium: the page script runs without error (it sets
``<body data-ok="1">`` only after wiring the table; an exception leaves ``data-ok="0"``), the
SVG charts are in the DOM, no console error is logged, and a screenshot renders.

One report per task kind (selection, answers, retrieval, query, fields; built from examples/
with recorded responses or the built-in BM25 retrievers) is driven through chromedriver's
W3C WebDriver API (plain HTTP on loopback, through httpx): the page's height
(``document.body.scrollHeight``), the browser console log, and a full-page screenshot per
task, written to ``$QUERYEVAL_SCREENSHOTS`` when set (to look at).

Needs Debian's ``chromium`` package (``apt-get install -y chromium chromium-driver``); the
tests skip with that reason when it is missing."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.browser_driver import CHROMIUM
from helpers.html_browser import HOSTILE, PNG_MAGIC, WebDriver, _answers_files  # noqa: E402,F401
from queryeval.report.compare import compare_runs
from queryeval.report.compare_output import write as write_comparison
from queryeval.report.html import write_html_report
from queryeval.report.run_reports import write_run_reports
from queryeval.run.config import RunConfig
from queryeval.run.evaluate import start_run
from queryeval.run.results import RunResults

pytestmark = pytest.mark.slow


def _chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    if CHROMIUM is None:
        pytest.skip("chromium not installed (Debian: apt-get install -y chromium chromium-driver)")
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--no-first-run",
            "--disable-dev-shm-usage", f"--user-data-dir={tmp}", "--enable-logging=stderr",
            "--v=0", *extra, url]
    return subprocess.run(args, capture_output=True, text=True, timeout=90, check=False)


def _console_errors(stderr: str) -> list[str]:
    """Console messages Chromium logs to stderr (``...:INFO:CONSOLE:67] "Uncaught ..."``).
    The report never writes to the console, so any console line is a problem."""
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


@pytest.fixture(scope="module")
def report(tmp_path_factory, examples_dir) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    result = start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                                 responses=str(examples_dir / "sdmx" / "responses.jsonl"),
                                 out=str(tmp / "out"), reports=False))
    return write_html_report(result.log.paths.batch, resamples=500)


def test_report_runs_in_chromium(report, tmp_path):
    dom = _chromium(tmp_path / "profile", report.as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body is not None
    assert 'data-ok="1"' in body.group(0), body.group(0)
    charts = int(re.search(r'data-charts="(\d+)"', body.group(0)).group(1))
    # overall; the per-case distribution; tag bars and radar (9 tags); dimension and dataset bars
    assert charts == 6
    assert dom.stdout.count("<svg") >= 6 and dom.stdout.count("<rect") > 20
    assert dom.stdout.count("<polygon") >= 4  # the radar's 4 rings (and its series)
    # the script filled the counter: 23 cases shown
    assert "23 of 23 cases" in dom.stdout
    assert _console_errors(dom.stderr) == []


def test_report_screenshot(report, tmp_path):
    png = tmp_path / "report.png"
    shot = _chromium(tmp_path / "profile", report.as_uri(), f"--screenshot={png}",
                     "--window-size=1280,2000", "--hide-scrollbars")
    assert shot.returncode == 0, shot.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
    assert _console_errors(shot.stderr) == []


def test_broken_script_is_detected(report, tmp_path):
    """The check can fail: a page whose script throws keeps data-ok="0"."""
    broken = tmp_path / "broken.html"
    broken.write_text(report.read_text().replace("var tbody = table.tBodies[0];",
                                                 "var tbody = table.tBodies[0]; null.x;"))
    dom = _chromium(tmp_path / "profile", broken.as_uri(), "--dump-dom")
    body = re.search(r"<body[^>]*>", dom.stdout).group(0)
    assert 'data-ok="0"' in body and "data-error" in body
    assert any("Uncaught TypeError" in ln for ln in _console_errors(dom.stderr))


def test_comparison_page_runs_in_chromium(report, tmp_path):
    run = RunResults.open(report.with_name(report.name.replace("report_", "batch_").replace(".html", ".json")))
    page = write_comparison(compare_runs(run, run, resamples=200), tmp_path / "cmp.html", "html")
    dom = _chromium(tmp_path / "profile", page.as_uri(), "--dump-dom")
    body = re.search(r"<body[^>]*>", dom.stdout).group(0)
    # forest, per-case strip, A-vs-B scatter, means
    assert 'data-ok="1"' in body and 'data-charts="4"' in body
    assert "0 of 0 cases" in dom.stdout  # identical runs: nothing flipped


# --- one report per task, through WebDriver ------------------------------------------------------
MAX_HEIGHT = 5000
"""No report page may be taller than this (px at 1280 wide) without the reader unfolding."""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    wd = WebDriver(tmp_path_factory.mktemp("wd-profile"))
    yield wd
    wd.close()


def _task_config(task: str, tmp: Path, examples: Path) -> RunConfig:
    out = str(tmp / "out")
    if task == "indicator_selection":
        return RunConfig(suite=str(examples / "sdmx" / "suite"), out=out, reports=False,
                         responses=str(examples / "sdmx" / "responses.jsonl"))
    if task == "answers":
        suite, responses = _answers_files(tmp, 12)
        return RunConfig(suite=str(suite), responses=str(responses), out=out, reports=False)
    if task == "retrieval":
        return RunConfig(suite=str(examples / "retrieval" / "questions.csv"), out=out, reports=False,
                         task_options={"k": [1, 5, 10],
                                       "corpus": str(examples / "retrieval" / "corpus.jsonl")})
    if task == "query":
        return RunConfig(suite=str(examples / "sparql" / "suite.yaml"), out=out, reports=False,
                         responses=str(examples / "sparql" / "predictions.jsonl"),
                         task_options={"store_dir": str(tmp / "store")})
    return RunConfig(suite=str(examples / "fields" / "evaluation.csv"), out=out, reports=False,
                     task_options={"data": str(examples / "fields" / "ingredients.csv"),
                                   "model": "bm25"})


def _look(driver: WebDriver, page: Path, name: str, tmp: Path) -> dict:
    """Open ``page``; check the script ran and the console is empty; save a full-page
    screenshot (also to $QUERYEVAL_SCREENSHOTS). Returns the page's figures."""
    driver.console()  # drop what earlier pages logged
    driver.open(page)
    state = driver.run("return {ok: document.body.getAttribute('data-ok'), "
                       "error: document.body.getAttribute('data-error'), "
                       "charts: document.querySelectorAll('svg.chart').length, "
                       "height: document.body.scrollHeight, title: document.title, "
                       "width: document.documentElement.scrollWidth}")
    assert state["ok"] == "1", state
    assert state["width"] <= 1280, state  # nothing cut at 1280 px: the page never scrolls sideways
    assert driver.console() == []
    png = driver.screenshot(min(state["height"] + 40, 8000))
    assert png[:8] == PNG_MAGIC and len(png) > 20_000
    (tmp / f"{name}.png").write_bytes(png)
    target = os.environ.get("QUERYEVAL_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / f"{name}.png").write_bytes(png)
    return state


@pytest.mark.parametrize("task", ["indicator_selection", "answers", "retrieval", "query", "fields"])
def test_each_task_report_in_chromium(task, driver, tmp_path, examples_dir):
    result = start_run(_task_config(task, tmp_path, examples_dir), reporter=write_run_reports)
    page = write_html_report(result.log.paths.batch, resamples=300)
    text = page.read_text(encoding="utf-8")
    state = _look(driver, page, f"report-{task}", tmp_path)
    assert state["charts"] >= 2 and task in state["title"]
    # small runs: details open (failures first: the retrieval example's 8 misses at about
    # 900 px each, their chunks listed), still bounded
    assert state["height"] <= MAX_HEIGHT * 2.2
    if task == "answers":
        assert HOSTILE not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
        # the hostile name did not run: the page is intact and names the case
        firsts = driver.run("return Array.prototype.map.call(document.querySelectorAll("
                            "'#cases tbody tr'), function (r) { return r.cells[0].textContent; })")
        assert HOSTILE in firsts  # the case's name is the first column (failures first)
    if task == "retrieval":
        assert driver.run("return document.querySelectorAll('svg.chart.line').length") == 1


def test_300_case_report_is_short_until_unfolded(driver, tmp_path):
    suite, responses = _answers_files(tmp_path, 300)
    result = start_run(RunConfig(suite=str(suite), responses=str(responses),
                                 out=str(tmp_path / "out"), reports=False))
    page = write_html_report(result.log.paths.batch, resamples=300)
    state = _look(driver, page, "report-answers-300", tmp_path)
    assert state["height"] <= MAX_HEIGHT, state
    # following a link to a folded case opens it (and the table it sits in stays usable)
    opened = driver.run("location.hash = '#case-2'; window.dispatchEvent(new HashChangeEvent("
                        "'hashchange')); return document.getElementById('case-2').open")
    assert opened is True
    unfolded = driver.run("document.getElementById('cases-box').open = true; "
                          "return [document.body.scrollHeight, "
                          "document.querySelectorAll('#cases tbody tr').length]")
    assert unfolded[1] == 300 and unfolded[0] > state["height"]
