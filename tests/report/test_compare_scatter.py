"""The compare HTML's A-vs-B per-case scatter (report/html_charts.py ``scatter_chart``,
report/html_svg.py ``scatter_plot``): x is A's score, y B's, one panel per metric, each
point coloured by the comparison's own flips, at hand-computed positions; drawn from the
comparison's own paired values (``MetricComparison.paired_values``: no batch file is read
again, a ``--cases`` subset draws its own cases); hostile run and case names stay text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from helpers.charts import HOSTILE
from helpers.sdmx_variants import FRANCE, GERMANY, USA
from queryeval.report.compare import compare_runs
from queryeval.report.html_charts import compare_charts
from queryeval.report.html_svg import scatter_plot

SVG = "{http://www.w3.org/2000/svg}"


def _points(svg: str) -> list[ET.Element]:
    return [c for c in ET.fromstring(svg).iter(f"{SVG}circle") if c.get("class") == "point"]


def test_scatter_points_at_the_hand_computed_places(pair):
    comp = compare_runs(*pair[:2], resamples=200)
    assert compare_charts(comp)[2:] == []  # the scatter only when asked for (the HTML page)
    charts = compare_charts(comp, scatter=True)
    assert [c["id"] for c in charts] == ["forest", "paired", "scatter"]
    svg = charts[2]["svg"]
    points = _points(svg)
    by_kind: dict[str, int] = {}
    for c in points:
        by_kind[c.get("data-kind")] = by_kind.get(c.get("data-kind"), 0) + int(c.get("data-n"))
    assert by_kind == {"better": 2, "worse": 2, "same": 42}  # 2 panels x (1, 1, 21)
    # panel 1 (macro_precision): its square at x 40..230, y 42..232 (legend 20 + title 22)
    better = [c for c in points if c.get("data-kind") == "better"]
    worse = [c for c in points if c.get("data-kind") == "worse"]
    assert (better[0].get("cx"), better[0].get("cy")) == ("40", "42")  # A 0, B 1
    assert (worse[0].get("cx"), worse[0].get("cy")) == ("230", "232")  # A 1, B 0
    assert better[0].find(f"{SVG}title").text.startswith(
        "macro_precision: 1 case(s), better: A 0.0000, B 1.0000: ")
    # the second panel starts one cell (40 + 190 + 26 = 256 px) to the right
    assert (better[1].get("cx"), worse[1].get("cx")) == ("296", "486")
    text = "".join(ET.fromstring(svg).itertext())
    assert text.count("better 1 · worse 1 · same 21") == 2
    assert f"B: {HOSTILE}" in text  # the hostile run name: text, not markup
    assert {el.tag.split("}")[-1] for el in ET.fromstring(svg).iter()} <= {
        "svg", "title", "g", "text", "line", "rect", "circle"}


def test_the_scatter_is_the_comparisons_own_values(pair):
    comp = compare_runs(*pair[:2], resamples=200)
    m = comp.metric("macro_precision")
    assert len(m.paired_values) == m.n == 23
    assert [b - a for _, _, a, b in m.paired_values] == m.diffs
    assert sorted((c, a, b) for c, _, a, b in m.paired_values if a != b) == [
        (USA, 1.0, 0.0), (FRANCE, 0.0, 1.0)]  # France fixed, the USA emptied (ids sorted)
    assert "paired_values" not in m.to_dict()  # the per-case lists stay out of the JSON
    # no batch file is read again: the runs gone, the same scatter
    before = compare_charts(comp, scatter=True)[2]["svg"]
    comp.run_a = {**comp.run_a, "path": str(Path(comp.run_a["path"]).with_name("gone.json"))}
    assert compare_charts(comp, scatter=True)[2]["svg"] == before


def test_a_cases_subset_draws_its_own_cases(pair):
    comp = compare_runs(*pair[:2], resamples=200, cases={FRANCE, USA, GERMANY})
    charts = compare_charts(comp, scatter=True)
    assert [c["id"] for c in charts] == ["forest", "paired", "scatter"]
    points = _points(charts[2]["svg"])
    # one panel: on these 3 cases macro_recall equals macro_precision (its twin, not drawn);
    # France better at A 0 B 1, the USA worse at A 1 B 0, Germany 0 in both
    assert sorted((c.get("data-kind"), c.get("data-n"), c.get("cx"), c.get("cy"))
                  for c in points) == [("better", "1", "40", "42"), ("same", "1", "40", "232"),
                                       ("worse", "1", "230", "232")]
    text = "".join(ET.fromstring(charts[2]["svg"]).itertext())
    assert comp.metric("macro_recall").same_as == "macro_precision"
    assert text.count("better 1 · worse 1 · same 1") == 1


def test_compare_html_carries_the_scatter(pair, tmp_path):
    from queryeval.report.compare_output import write as write_comparison

    html = write_comparison(compare_runs(*pair[:2], resamples=200), tmp_path / "c.html",
                            "html").read_text(encoding="utf-8")
    assert html.count('data-chart="scatter"') == 1
    assert "<script>alert" not in html


def test_cases_at_one_place_are_one_mark():
    svg = scatter_plot([("m", [(1.0, 1.0, "same", f"c{i}") for i in range(5)]
                        + [(0.0, 1.0, "better", "<b>")])], title="t", x_label="A", y_label="B")
    points = _points(svg)
    assert [(c.get("data-kind"), c.get("data-n")) for c in points] == [("same", "5"),
                                                                       ("better", "1")]
    assert points[0].find(f"{SVG}title").text == (
        "m: 5 case(s), same: A 1.0000, B 1.0000: c0, c1, c2, c3, … 1 more")
    assert points[1].find(f"{SVG}title").text.endswith(": <b>")
