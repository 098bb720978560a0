"""Open the HTML reports in headless Chromium: the page script runs without error (it sets
``<body data-ok="1">`` only after wiring the table; an exception leaves ``data-ok="0"``), the
SVG charts are in the DOM, no console error is logged, and a screenshot renders.

Needs Debian's ``chromium`` package (``apt-get install -y chromium chromium-driver``); the
tests skip with that reason when it is missing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from queryeval.report.compare import compare_runs, load_run
from queryeval.report.html import write_html_report
from queryeval.report.html_compare import write_comparison_html
from queryeval.run.evaluate import RunConfig, start_run

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
    assert charts == 7
    assert dom.stdout.count("<svg") >= 7 and dom.stdout.count("<rect") > 20
    assert dom.stdout.count("<polygon") >= 3
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
    run = load_run(report.with_name(report.name.replace("report_", "batch_").replace(".html", ".json")))
    page = write_comparison_html(compare_runs(run, run, resamples=200), tmp_path / "cmp.html")
    dom = _chromium(tmp_path / "profile", page.as_uri(), "--dump-dom")
    body = re.search(r"<body[^>]*>", dom.stdout).group(0)
    assert 'data-ok="1"' in body and 'data-charts="1"' in body
    assert "0 of 0 cases" in dom.stdout  # identical runs: nothing flipped
