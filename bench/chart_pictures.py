"""The pictures of docs/reports.md: one of each page and each chart kind, rendered from the
shipped examples and photographed in headless Chromium at 1280 px (PNG, each at most 100 KB).

    python bench/chart_pictures.py [OUT]      # default docs/img

Runs (in a temporary folder, removed after, which is the working directory meanwhile; the
compare page names each run's files relative to it, ``runs/<name>/…`` and ``<name>.jsonl``,
never by the temporary folder's path): the sdmx example as recorded (a, ``recorded``), with three cases fixed
and one emptied (b, ``three fixed``), with every response emptied (c, ``silent``); the
retrieval example at k 1, 3, 5 (built-in bm25); the sdmx system with 3 repeats;
examples/testsuite's predictions under ``--test-suite 5``. Pages (the top 1280 × 1000 px):
the retrieval run's HTML report, the compare page of a and b, the N-way page of a, b, c,
the viewer's run page and compare page. Charts (each ``figure`` element): the forest plot,
the per-case differences and the A-vs-B scatter (compare page), the N-way forest plot, and
from the viewer the headline figures, recall@k over k, the per-case distribution, the
repeats pass-rate strip and the test-suite verdicts by reason. The browser client and the
sdmx variants are the tests' (tests/helpers/browser_driver.py, tests/helpers/sdmx_variants.py). Needs
chromium and chromedriver (Debian: chromium, chromium-driver), the viewer's extras
(starlette, uvicorn) and Pillow."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(ROOT / "tests"))  # the tests' helpers, as bench/fuzz.py does

from helpers.browser_driver import WebDriver  # noqa: E402
from helpers.sdmx_variants import CANADA, FRANCE, GERMANY, USA, variant_responses  # noqa: E402


def build() -> dict[str, Path]:
    """The runs the pictures show (batch files), under ``runs/`` of the working directory,
    each responses file named after its run."""
    import queryeval as qe
    from queryeval.run.config import RunConfig
    from queryeval.run.evaluate import start_run
    from queryeval.run.results import RunResults

    def sdmx(name: str, responses: Path, label: str) -> Path:
        return start_run(RunConfig(suite=str(EXAMPLES / "sdmx" / "suite"), responses=str(responses),
                                   out=str(Path("runs") / name), reports=False,
                                   name=label)).log.paths.batch

    recorded = Path("recorded.jsonl")
    shutil.copyfile(EXAMPLES / "sdmx" / "responses.jsonl", recorded)
    a = sdmx("recorded", recorded, "recorded")
    records = RunResults.open(a).records
    b = sdmx("three-fixed", variant_responses(records, Path("three-fixed.jsonl"),
                                              fix={FRANCE, GERMANY, CANADA}, empty={USA}),
             "three fixed")
    c = sdmx("silent", variant_responses(records, Path("silent.jsonl"),
                                         empty={r["case_id"] for r in records}), "silent")
    ret = start_run(RunConfig(suite=str(EXAMPLES / "retrieval" / "questions.csv"),
                              out="runs/retrieval", reports=False, name="retrieval",
                              task_options={"k": [1, 3, 5],
                                            "corpus": str(EXAMPLES / "retrieval" / "corpus.jsonl")}
                              )).log.paths.batch
    suite = EXAMPLES / "sdmx" / "suite"
    qe.evaluate(str(suite), system=f"python:{suite.parent / 'system.py'}:select", repeats=3,
                out=Path("runs") / "repeats", reports=False, name="repeats")
    rep = next(Path("runs", "repeats").rglob("batch_*.json"))
    return {"a": a, "b": b, "c": c, "ret": ret, "rep": rep}


class Browser(WebDriver):
    """The tests' WebDriver client, waiting for each page and writing PNG files."""

    def show(self, url: str) -> None:
        self._call("POST", "/window/rect", {"width": 1280, "height": 1000})
        self.go(url)
        self.wait_ok(timeout=30)

    def page(self, png: Path) -> None:
        png.write_bytes(self.screenshot(1000))

    def element(self, css: str, png: Path) -> None:
        self.run(f"document.querySelector({json.dumps(css)}).scrollIntoView()")
        png.write_bytes(self.element_png(css))


def by_name(comp, folder: Path):
    """The comparison with its runs' files (batch, recorded responses) named relative to
    ``folder``, where the runs were made (``runs/three-fixed/…``, ``three-fixed.jsonl``),
    as a reader's own folder would show them, not the temporary folder's path."""
    for info in (comp.run_a, comp.run_b):
        for key in ("path", "responses"):
            value = info.get(key)
            if isinstance(value, str) and Path(value).is_relative_to(folder):
                info[key] = str(Path(value).relative_to(folder))
    return comp


def small(png: Path, limit: int = 100_000) -> None:
    """Reduce ``png`` to at most ``limit`` bytes (fewer colours, then narrower) with Pillow."""
    try:
        from PIL import Image
    except ImportError:  # a tool for the docs' pictures only, not a dependency of queryeval
        raise SystemExit("bench/chart_pictures.py shrinks the pictures with Pillow: "
                         "pip install pillow") from None

    img = Image.open(png).convert("RGB")
    img.save(png, optimize=True)
    if png.stat().st_size <= limit:
        return
    for colors, scale in ((64, 1.0), (32, 1.0), (32, 0.8), (16, 0.7), (16, 0.55)):
        shown = img if scale == 1.0 else img.resize((int(img.width * scale), int(img.height * scale)))
        shown.quantize(colors=colors).save(png, optimize=True)
        if png.stat().st_size <= limit:
            return
    raise SystemExit(f"{png}: still {png.stat().st_size} bytes")


def _photograph(out: Path, tmp: Path) -> None:
    """Build the runs and pages in the working directory (``tmp``) and photograph them."""
    import uvicorn

    import queryeval as qe
    from queryeval.report.compare import compare_many, compare_runs
    from queryeval.report.compare_output import write as write_comparison
    from queryeval.report.html import write_html_report
    from queryeval.report.html_compare import render_nway
    from queryeval.viewer.server import create_app

    runs = build()
    ts = Path("testsuite")
    shutil.copytree(EXAMPLES / "testsuite", ts)
    subprocess.run([sys.executable, "build_db.py"], check=True, cwd=ts)
    qe.evaluate(ts / "suite.yaml", responses=ts / "predictions.jsonl", out=Path("runs") / "ts",
                reports=False, test_suite=5, name="test suite")
    pages = {"report": write_html_report(runs["ret"], Path("report.html"), resamples=1000),
             "compare": write_comparison(
                 by_name(compare_runs(runs["a"], runs["b"], resamples=1000), tmp),
                 Path("compare.html"), "html")}
    Path("nway.html").write_text(render_nway(compare_many(
        [runs["a"], runs["b"], runs["c"]], resamples=1000)), encoding="utf-8")
    pages["nway"] = Path("nway.html")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(create_app(Path("runs"), resamples=1000),
                                        log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    ids = {k: p.stem[len("batch_"):] for k, p in runs.items()}
    ids["ts"] = next(Path("runs", "ts").rglob("batch_*.json")).stem[len("batch_"):]
    browser = Browser(tmp / "profile")
    try:
        browser.show(pages["report"].resolve().as_uri())
        browser.page(out / "page-run-report.png")
        browser.show(pages["compare"].resolve().as_uri())
        browser.page(out / "page-compare.png")
        for chart in ("forest", "paired", "scatter"):
            browser.element(f'figure[data-chart="{chart}"]', out / f"chart-{chart}.png")
        browser.show(pages["nway"].resolve().as_uri())
        browser.page(out / "page-compare-nway.png")
        browser.element('figure[data-chart="forest"]', out / "chart-nway-forest.png")
        browser.show(url + "#/run/" + ids["ret"])
        browser.page(out / "page-view-run.png")
        for chart in ("overall", "by-k", "distribution"):
            browser.element(f'figure[data-chart="{chart}"]', out / f"chart-{chart}.png")
        browser.show(url + "#/run/" + ids["rep"])
        browser.element('figure[data-chart="pass-rate"]', out / "chart-pass-rate.png")
        browser.show(url + "#/run/" + ids["ts"])
        browser.element('figure[data-chart="test-suite"]', out / "chart-test-suite.png")
        browser.show(url + "#/compare?run=" + "&run=".join(ids[k] for k in "abc"))
        browser.page(out / "page-view-compare.png")
    finally:
        browser.close()
        srv.should_exit = True
        thread.join(timeout=30)
        sock.close()


def main(out: Path) -> None:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        os.chdir(tmp)  # the pages show runs/<name>/… and <name>.jsonl, no temporary path
        try:
            _photograph(out, tmp)
        finally:
            os.chdir(here)
    for png in sorted(out.glob("*.png")):
        small(png)
        print(f"{png.relative_to(out.parent) if out.parent in png.parents else png}: "
              f"{png.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img")
