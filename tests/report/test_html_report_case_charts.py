"""The run HTML report draws the viewer's per-case charts (one implementation:
report/html_charts.py ``case_charts``): the distribution of each [0, 1] score, the per-case
pass rate under ``--repeats`` with the repeats section's mean and interval, the test-suite
verdicts by reason. Each chart's SVG in the report is the viewer's, byte for byte, and its
figures are the hand-counted ones."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from queryeval.report.case_rows import case_rows
from queryeval.report.html import render_report
from queryeval.report.html_charts import run_charts
from queryeval.run.results import RunResults
from queryeval.viewer.results import run_figures

SVG = "{http://www.w3.org/2000/svg}"


def _figures(html: str) -> dict[str, tuple[str, str]]:
    """The report's chart figures: {data-chart: (svg, caption)}."""
    found = re.findall(r'<figure class="chart" data-chart="([^"]+)">(<svg.*?</svg>)'
                       r'<figcaption class="note">(.*?)</figcaption>', html, re.DOTALL)
    return {cid: (svg, caption) for cid, svg, caption in found}


def _viewer(batch: Path) -> dict[str, dict]:
    loaded = RunResults.open(batch)
    figs = run_figures(loaded, resamples=200)
    charts = run_charts(loaded.task, figs["overall_rows"], loaded.metrics["overall_metrics"],
                        case_rows(loaded), figs["repeats"])
    return {c["id"]: c for c in charts}


def _bins(svg: str) -> list[str]:
    return [r.find(f"{SVG}title").text for r in ET.fromstring(svg).iter(f"{SVG}rect")
            if r.get("class") == "bin"]


@pytest.fixture(scope="module")
def repeated(tmp_path_factory, examples_dir) -> Path:
    import queryeval as qe

    tmp = tmp_path_factory.mktemp("repcharts")
    suite = examples_dir / "sdmx" / "suite"
    qe.evaluate(str(suite), system=f"python:{suite.parent / 'system.py'}:select", repeats=3,
                out=tmp / "rep", reports=False)
    return next((tmp / "rep").rglob("batch_*.json"))


def test_repeats_report_has_distribution_and_pass_rate_with_interval(repeated):
    html = render_report(repeated, resamples=200)
    figures = _figures(html)
    viewer = _viewer(repeated)
    assert {"distribution", "pass-rate"} <= set(figures)
    for cid in ("distribution", "pass-rate"):
        assert figures[cid][0] == viewer[cid]["svg"]  # the viewer's chart, byte for byte
    rep = RunResults.open(repeated).metrics["repeats"]["overall"]["pass_rate"]
    # the example system is deterministic: 18 of the 23 cases pass all 3 attempts, 5 none
    assert rep["mean"] == pytest.approx(18 / 23)
    caption = (f"Per-case pass rate over 3 attempts (mean over cases 0.7826, 95% interval "
               f"[{rep['ci_low']:.4f}, {rep['ci_high']:.4f}])")
    assert figures["pass-rate"][1] == caption == viewer["pass-rate"]["title"]
    bins = _bins(figures["pass-rate"][0])
    assert [b.split(":")[1].strip() for b in bins] == ["5 case(s) in [-0.1667, 0.1667)",
                                                       "18 case(s) in [0.8333, 1.167]"]


def test_pass_rate_caption_needs_every_figure_of_the_interval():
    from queryeval.report.html_charts import case_charts

    rows = [{"case_id": "a", "name": None, "metrics": {}, "pass_rate": 0.5,
             "attempts": [{}, {}]}]
    broken = {"overall": {"pass_rate": {"mean": 0.5, "ci_low": None, "ci_high": 0.9}}}
    [chart] = case_charts(None, [], rows, broken)
    assert chart["title"] == "Per-case pass rate over 2 attempts"
    whole = {"overall": {"pass_rate": {"mean": 0.5, "ci_low": 0.25, "ci_high": 0.75}},
             "confidence": 0.9}
    [chart] = case_charts(None, [], rows, whole)
    assert chart["title"] == ("Per-case pass rate over 2 attempts (mean over cases 0.5000, "
                              "90% interval [0.2500, 0.7500])")


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory) -> Path:
    import queryeval as qe
    from helpers.testsuite_sql import build_example

    tmp = tmp_path_factory.mktemp("tscharts")
    folder = tmp / "emp"
    folder.mkdir()
    build_example(folder)
    qe.evaluate(folder / "suite.yaml", responses=folder / "predictions.jsonl",
                out=tmp / "runs", reports=False, test_suite=5)
    return next((tmp / "runs").rglob("batch_*.json"))


def test_test_suite_report_has_verdicts_by_reason(suite_run):
    html = render_report(suite_run, resamples=200)
    figures = _figures(html)
    viewer = _viewer(suite_run)
    assert figures["test-suite"][0] == viewer["test-suite"]["svg"]
    # the example's 5 predictions: 3 equal on every neighbour, 2 refuted (high-earners by
    # neighbour 4, count-at-least-120 by neighbour 0)
    text = "".join(ET.fromstring(figures["test-suite"][0]).itertext())
    assert "pass: equal on the original and all N neighbours (3)" in text
    assert "refuted: refuted by neighbour N (2)" in text
    assert "0.6000" in text and "0.4000" in text


FLAKY = '''import importlib.util

_spec = importlib.util.spec_from_file_location("sdmx_example_system_for_charts", {path!r})
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)


def select(request):
    if request.get("repeat", 0) == 1 and sum(map(ord, request["case_id"])) % 2 == 1:
        raise ValueError("a failed second attempt")
    return _example.select(request)
'''


@pytest.fixture(scope="module")
def skipped(tmp_path_factory, examples_dir) -> Path:
    """The SDMX example twice over with a second attempt that fails for about half the
    cases, under --on-error skip: those cases are left out of every figure."""
    import queryeval as qe

    tmp = tmp_path_factory.mktemp("skipcharts")
    suite = examples_dir / "sdmx" / "suite"
    system = tmp / "flaky.py"
    system.write_text(FLAKY.format(path=str(suite.parent / "system.py")), encoding="utf-8")
    qe.evaluate(str(suite), system=f"python:{system}:select", repeats=2, on_error="skip",
                retries=0, out=tmp / "run", reports=False)
    return next((tmp / "run").rglob("batch_*.json"))


def _counts(svg: str) -> dict[str, int]:
    """Cases drawn per strip: {strip: sum of its bins' counts}."""
    out: dict[str, int] = {}
    for title in _bins(svg):
        name, rest = title.split(":", 1)
        out[name] = out.get(name, 0) + int(re.match(r"\s*(\d+) case", rest).group(1))
    return out


def test_charts_draw_the_cases_the_figures_count(skipped):
    """The per-case charts drew every case, the ones --on-error skip leaves out of the
    figures included: the pass-rate chart's caption gave the counted cases' mean while its
    bars held all 23 (one chart, two numbers). Now both charts draw the counted cases only
    and say how many were left out; the viewer draws the same."""
    run = RunResults.open(skipped)
    counted = len(run.counted())
    left = len(run.cases) - counted
    assert len(run.cases) == 23 and 0 < left < 23
    html = render_report(skipped, resamples=200)
    figures, viewer = _figures(html), _viewer(skipped)
    note = f"({left} case(s) left out by --on-error skip, as from the headline figures)"
    for cid in ("distribution", "pass-rate"):
        svg, caption = figures[cid]
        assert svg == viewer[cid]["svg"] and caption == viewer[cid]["title"]
        assert caption.endswith(note), caption
        assert set(_counts(svg).values()) == {counted}, _counts(svg)
    rep = run.metrics["repeats"]["overall"]["pass_rate"]
    drawn = [(float(re.search(r"in \[(-?[\d.]+), (-?[\d.]+)", t).group(1)) + 0.25,
              int(re.search(r": (\d+) case", t).group(1)))
             for t in _bins(figures["pass-rate"][0])]  # bins of width 0.5 from -0.25
    assert sum(n for _, n in drawn) == counted
    assert sum(x * n for x, n in drawn) / counted == pytest.approx(rep["mean"])
    macro = run.metrics["overall_metrics"]["macro_recall"]
    assert macro == pytest.approx(sum(c.means["macro_recall"] for c in run.counted()) / counted)
