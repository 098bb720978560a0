"""The pictures of docs/reports.md: every page and chart kind, rendered from the shipped
examples and photographed in headless Chromium at 1280 px (PNG, each at most 100 KB).

    python bench/chart_pictures.py [OUT]      # default docs/img

Runs (in a temporary folder): the sdmx example as recorded (a), with three cases fixed and
one emptied (b), with every response emptied (c); the retrieval example at k 1, 3, 5 with
3 documents per cluster... (its clusters: the documents); a run of the sdmx system with 3
repeats. Pages: a run report, the two-run compare page (forest plot, per-case
differences), the N-way compare page, the viewer's run page (its charts) and compare page.
Needs chromium (or chromium-browser) on PATH and the viewer's extras (starlette, uvicorn)."""

from __future__ import annotations

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


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    raise SystemExit("chromium is not installed")


def shoot(url: str, png: Path, height: int, profile: Path) -> None:
    """A 1280 px wide screenshot of ``url`` (JavaScript given 4 s of virtual time)."""
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                    "--virtual-time-budget=4000", f"--window-size=1280,{height}",
                    f"--screenshot={png}", url], check=True, capture_output=True, timeout=120)


def small(png: Path, limit: int = 100_000) -> None:
    """Reduce ``png`` to at most ``limit`` bytes (fewer colours, then narrower) with Pillow."""
    from PIL import Image

    img = Image.open(png).convert("RGB")
    for colors, scale in ((64, 1.0), (32, 1.0), (32, 0.8), (16, 0.7), (16, 0.55)):
        shown = img if scale == 1.0 else img.resize((int(img.width * scale), int(img.height * scale)))
        shown.quantize(colors=colors).save(png, optimize=True)
        if png.stat().st_size <= limit:
            return
    raise SystemExit(f"{png}: still {png.stat().st_size} bytes")


def main(out: Path) -> None:
    import uvicorn

    from queryeval.report.compare import compare_runs
    from queryeval.report.compare_nway import compare_many
    from queryeval.report.html import write_html_report
    from queryeval.report.html_compare import render_nway, write_comparison_html
    from queryeval.viewer.server import create_app

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        runs = build(tmp)
        pages = {"report-run": write_html_report(runs["ret"], tmp / "report.html", resamples=1000),
                 "compare-page": write_comparison_html(
                     compare_runs(runs["a"], runs["b"], resamples=1000), tmp / "compare.html")}
        (tmp / "nway.html").write_text(render_nway(compare_many(
            [runs["a"], runs["b"], runs["c"]], resamples=1000)), encoding="utf-8")
        pages["compare-nway"] = tmp / "nway.html"
        for key, page in pages.items():
            shoot(page.as_uri(), out / f"{key}.png", 1400, tmp / "profile")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        srv = uvicorn.Server(uvicorn.Config(create_app(tmp / "runs", resamples=1000),
                                            log_level="warning", lifespan="off"))
        thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not srv.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        ids = {k: p.stem[len("batch_"):] for k, p in runs.items()}
        try:
            shoot(url + "#/run/" + ids["ret"], out / "view-run-charts.png", 1500, tmp / "profile")
            shoot(url + "#/run/" + ids["rep"], out / "view-run-repeats.png", 1300, tmp / "profile")
            shoot(url + "#/compare?run=" + "&run=".join(ids[k] for k in "abc"),
                  out / "view-compare.png", 1300, tmp / "profile")
        finally:
            srv.should_exit = True
            thread.join(timeout=30)
            sock.close()
    for png in sorted(out.glob("*.png")):
        small(png)
        print(f"{png}: {png.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img")
