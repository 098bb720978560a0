"""The pictures of docs/reports.md: one of each page and each chart kind, rendered from the
shipped examples and photographed in headless Chromium at 1280 px (PNG, each at most 100 KB).

    python bench/chart_pictures.py [OUT]      # default docs/img

Runs (in a temporary folder, removed after): the sdmx example as recorded (a, ``recorded``),
with three cases fixed and one emptied (b, ``three fixed``), with every response emptied (c,
``silent``); the retrieval example at k 1, 3, 5 (built-in bm25); the sdmx system with 3
repeats; examples/testsuite's predictions under ``--test-suite 5``. Pages (the top 1280 ×
1000 px): the retrieval run's HTML report, the compare page of a and b, the N-way page of
a, b, c, the viewer's run page and compare page. Charts (each ``figure`` element): the
forest plot and the per-case differences (compare page), the N-way forest plot, and from
the viewer the headline figures, recall@k over k, the per-case distribution, the repeats
pass-rate strip and the test-suite verdicts by reason. Needs chromium and chromedriver
(Debian: chromium, chromium-driver), the viewer's extras (starlette, uvicorn) and Pillow."""

from __future__ import annotations

import base64
import json
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
FRANCE = "5eed0000-0000-0000-0000-00000001eef0"
USA = "5eed0000-0000-0000-0000-000000017334"
GERMANY = "5eed0000-0000-0000-0000-000000013556"
CANADA = "5eed0000-0000-0000-0000-000000015445"


def variant(records: list[dict], path: Path, *, fix=(), empty=()) -> Path:
    """The sdmx responses with some cases answered right (``fix``) or empty (``empty``)."""
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            for t in r["turns"]:
                out = t["target"] if r["case_id"] in fix else [] if r["case_id"] in empty \
                    else t["output"]
                fh.write(json.dumps({"case_id": r["case_id"], "turn": t["turn"],
                                     "indicator_selection": out}) + "\n")
    return path


def build(tmp: Path) -> dict[str, Path]:
    """The runs the pictures show (batch files), under ``tmp/runs``."""
    import queryeval as qe
    from queryeval.report.compare import load_run
    from queryeval.run.evaluate import RunConfig, start_run

    def sdmx(name: str, responses: Path, label: str) -> Path:
        return start_run(RunConfig(suite=str(EXAMPLES / "sdmx" / "suite"), responses=str(responses),
                                   out=str(tmp / "runs" / name), reports=False,
                                   name=label)).log.paths.batch

    a = sdmx("a", EXAMPLES / "sdmx" / "responses.jsonl", "recorded")
    records = load_run(a).records
    b = sdmx("b", variant(records, tmp / "b.jsonl", fix={FRANCE, GERMANY, CANADA}, empty={USA}),
             "three fixed")
    c = sdmx("c", variant(records, tmp / "c.jsonl", empty={r["case_id"] for r in records}),
             "silent")
    ret = start_run(RunConfig(suite=str(EXAMPLES / "retrieval" / "questions.csv"),
                              out=str(tmp / "runs" / "ret"), reports=False,
                              task_options={"k": [1, 3, 5],
                                            "corpus": str(EXAMPLES / "retrieval" / "corpus.jsonl")}
                              )).log.paths.batch
    suite = EXAMPLES / "sdmx" / "suite"
    qe.evaluate(str(suite), system=f"python:{suite.parent / 'system.py'}:select", repeats=3,
                out=tmp / "runs" / "rep", reports=False)
    rep = next((tmp / "runs" / "rep").rglob("batch_*.json"))
    return {"a": a, "b": b, "c": c, "ret": ret, "rep": rep}


class Browser:
    """A minimal W3C WebDriver client for chromedriver (headless, 1280 px wide)."""

    def __init__(self, profile: Path) -> None:
        import httpx

        self.http = httpx
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        self.proc = subprocess.Popen([shutil.which("chromedriver") or "chromedriver",
                                      f"--port={port}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                httpx.get(f"{self.base}/status", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        binary = next(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                      if shutil.which(n))
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": binary, "args": ["--headless", "--no-sandbox", "--disable-gpu",
                                       "--disable-dev-shm-usage", "--hide-scrollbars",
                                       f"--user-data-dir={profile}", "--window-size=1280,1000"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method: str, path: str, body: dict | None = None):
        url = self.base + path if path == "/session" else f"{self.base}/session/{self.session}{path}"
        r = self.http.request(method, url, json=body, timeout=90)
        if r.status_code != 200:
            raise RuntimeError(f"webdriver {method} {path}: {r.text[:300]}")
        return r.json()["value"]

    def open(self, url: str) -> None:
        self.call("POST", "/window/rect", {"width": 1280, "height": 1000})
        self.call("POST", "/url", {"url": url})
        for _ in range(300):
            if self.call("POST", "/execute/sync", {
                    "script": "return document.body.getAttribute('data-ok')", "args": []}) == "1":
                return
            time.sleep(0.1)
        raise RuntimeError(f"{url}: the page did not finish")

    def page(self, png: Path) -> None:
        png.write_bytes(base64.b64decode(self.call("GET", "/screenshot")))

    def element(self, css: str, png: Path) -> None:
        found = self.call("POST", "/element", {"using": "css selector", "value": css})
        eid = next(iter(found.values()))
        png.write_bytes(base64.b64decode(self.call("GET", f"/element/{eid}/screenshot")))

    def close(self) -> None:
        try:
            self.call("DELETE", "")
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=30)


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


def main(out: Path) -> None:
    import uvicorn

    import queryeval as qe
    from queryeval.report.compare import compare_many, compare_runs
    from queryeval.report.html import write_html_report
    from queryeval.report.html_compare import render_nway, write_comparison_html
    from queryeval.viewer.server import create_app

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        runs = build(tmp)
        ts = tmp / "ts"
        shutil.copytree(EXAMPLES / "testsuite", ts)
        subprocess.run([sys.executable, str(ts / "build_db.py")], check=True, cwd=ts)
        qe.evaluate(ts / "suite.yaml", responses=ts / "predictions.jsonl",
                    out=tmp / "runs" / "ts", reports=False, test_suite=5)
        pages = {"report": write_html_report(runs["ret"], tmp / "report.html", resamples=1000),
                 "compare": write_comparison_html(
                     compare_runs(runs["a"], runs["b"], resamples=1000), tmp / "compare.html")}
        (tmp / "nway.html").write_text(render_nway(compare_many(
            [runs["a"], runs["b"], runs["c"]], resamples=1000)), encoding="utf-8")
        pages["nway"] = tmp / "nway.html"
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        srv = uvicorn.Server(uvicorn.Config(create_app(tmp / "runs", resamples=1000),
                                            log_level="warning", lifespan="off"))
        thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not srv.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        ids = {k: p.stem[len("batch_"):] for k, p in runs.items() if k != "ts"}
        ids["ts"] = next((tmp / "runs" / "ts").rglob("batch_*.json")).stem[len("batch_"):]
        browser = Browser(tmp / "profile")
        try:
            browser.open(pages["report"].as_uri())
            browser.page(out / "page-run-report.png")
            browser.open(pages["compare"].as_uri())
            browser.page(out / "page-compare.png")
            browser.element('figure[data-chart="forest"]', out / "chart-forest.png")
            browser.element('figure[data-chart="paired"]', out / "chart-paired.png")
            browser.open(pages["nway"].as_uri())
            browser.page(out / "page-compare-nway.png")
            browser.element('figure[data-chart="forest"]', out / "chart-nway-forest.png")
            browser.open(url + "#/run/" + ids["ret"])
            browser.page(out / "page-view-run.png")
            for chart in ("overall", "by-k", "distribution"):
                browser.element(f'figure[data-chart="{chart}"]', out / f"chart-{chart}.png")
            browser.open(url + "#/run/" + ids["rep"])
            browser.element('figure[data-chart="pass-rate"]', out / "chart-pass-rate.png")
            browser.open(url + "#/run/" + ids["ts"])
            browser.element('figure[data-chart="test-suite"]', out / "chart-test-suite.png")
            browser.open(url + "#/compare?run=" + "&run=".join(ids[k] for k in "abc"))
            browser.page(out / "page-view-compare.png")
        finally:
            browser.close()
            srv.should_exit = True
            thread.join(timeout=30)
            sock.close()
    for png in sorted(out.glob("*.png")):
        small(png)
        print(f"{png.relative_to(out.parent) if out.parent in png.parents else png}: "
              f"{png.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img")
