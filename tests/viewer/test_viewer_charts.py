"""The viewer's charts through its API: ``/api/runs/{id}`` and ``/api/compare`` carry the SVG
that report/html_charts.py draws from the same figures as the HTML pages (the same text,
byte for byte), well-formed XML with no element of its own for a hostile run name (--name)
or case name; the served stylesheet holds the charts' rules once (report/html_svg.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from helpers.html_browser import HOSTILE, _answers_files  # noqa: E402
from queryeval.report.case_rows import case_rows  # noqa: E402
from queryeval.report.compare import compare_many  # noqa: E402
from queryeval.report.html_charts import nway_charts, run_charts  # noqa: E402
from queryeval.report.html_svg import CHART_CSS  # noqa: E402
from queryeval.run.config import RunConfig  # noqa: E402
from queryeval.run.evaluate import start_run  # noqa: E402
from queryeval.run.results import RunResults  # noqa: E402
from queryeval.viewer.results import run_figures  # noqa: E402
from queryeval.viewer.server import create_app  # noqa: E402

RUN_NAME = '<script>alert("run")</script> \'quoted\' & more'
SVG_TAGS = {"svg", "title", "g", "text", "line", "path", "rect", "circle", "polygon"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("viewcharts")
    suite, responses = _answers_files(tmp, 12)
    batches = [start_run(RunConfig(suite=str(suite), responses=str(responses), name=name,
                                   out=str(tmp / "runs" / f"r{k}"), reports=False)).log.paths.batch
               for k, name in enumerate(["plain", RUN_NAME])]
    client = TestClient(create_app(tmp / "runs", resamples=200), base_url="http://127.0.0.1")
    return client, batches, [b.stem[len("batch_"):] for b in batches]


def _elements(svg: str) -> tuple[set[str], str]:
    tree = ET.fromstring(svg)
    return {el.tag.split("}")[-1] for el in tree.iter()}, "".join(tree.itertext())


def test_run_document_carries_the_charts_drawn_from_its_figures(served):
    client, batches, ids = served
    doc = client.get(f"/api/runs/{ids[0]}").json()
    loaded = RunResults.open(batches[0])
    want = run_charts(loaded.task, run_figures(loaded, resamples=200)["overall_rows"],
                      loaded.metrics["overall_metrics"], case_rows(loaded))
    assert doc["charts"] == want and [c["id"] for c in want] == ["overall", "distribution"]
    tags, text = _elements(next(c["svg"] for c in doc["charts"] if c["id"] == "distribution"))
    assert tags <= SVG_TAGS and HOSTILE in text  # the hostile case name: a tooltip's text


def test_compare_document_charts_escape_a_hostile_run_name(served):
    client, batches, ids = served
    doc = client.get("/api/compare", params=[("run", i) for i in ids]).json()
    assert doc["charts"] == nway_charts(compare_many(batches, resamples=200))
    for chart in doc["charts"]:
        tags, text = _elements(chart["svg"])
        assert tags <= SVG_TAGS and "<script>" not in chart["svg"]
    _, text = _elements(doc["charts"][0]["svg"])
    assert f"({RUN_NAME} − plain)" in text  # the forest's tooltips name the runs


def test_stylesheet_holds_the_chart_rules_once(served):
    client, _, _ = served
    css = client.get("/static/app.css").text
    assert css.count(CHART_CSS) == 1 and css.count("svg.chart .lab") == 1
