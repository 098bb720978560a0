"""The charts of the reports and the viewer (report/html_charts.py, report/html_svg.py): the
forest plot's geometry and figures against hand-computed positions and the compare model's
own differences and intervals (cluster-robust ones when the cases have clusters), the strip
chart's bins against a brute-force count, hostile names escaped (the SVG stays well-formed
XML with no element of its own), and the compare HTML, the N-way page and the notebook repr
carrying them."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET

import pytest

from helpers.charts import HOSTILE  # noqa: E402,F401
from queryeval.report.html_charts import (
    compare_charts,
    nway_charts,
    reason_kind,
    run_charts,
)
from queryeval.report.html_svg import forest_plot, nice_extent, strip_chart

SVG = "{http://www.w3.org/2000/svg}"


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises on anything that is not well-formed XML


def _rows(svg: str) -> list[ET.Element]:
    return [g for g in _tree(svg).iter(f"{SVG}g") if g.get("class") == "row"]


def _fig(v: float) -> str:
    """A figure as the charts write it: signed, 4 decimals, a true minus sign."""
    return "0.0000" if v == 0 else f"{v:+.4f}".replace("-", "−")


def _ci(m) -> str:
    return f"{_fig(m.diff)} [{_fig(m.ci_low)}, {_fig(m.ci_high)}]"


def _val(row: ET.Element) -> str:
    return next(t for t in row.iter(f"{SVG}text") if t.get("class") == "val").text or ""


def test_nice_extent_is_the_smallest_round_half_width():
    assert [nice_extent([v]) for v in (0, 0.004, 0.03, 0.13, 0.21, 0.3, 1, 1.2, 12)] == \
        [0.01, 0.01, 0.05, 0.2, 0.25, 0.5, 1.0, 2.0, 20.0]
    assert nice_extent([None, -0.7, float("nan"), 0.1]) == 1.0


def test_forest_plot_positions_and_figures_by_hand():
    # width 760, labels 230, values 190: the plot is x 230..570; the largest |value| is 0.3,
    # so the scale is [-0.5, 0.5]
    svg = forest_plot([("recall", 0.1, -0.05, 0.2, "better"), ("mrr", -0.2, -0.3, -0.1, "worse"),
                       ("none", None, None, None, "no detectable difference")], title="t")
    rows = _rows(svg)
    assert [r.get("data-verdict") for r in rows] == ["better", "worse", "no detectable difference"]
    ci, point = [p for p in rows[0].iter(f"{SVG}path")]
    # diff 0.1: 230 + (0.1 + 0.5) / 1.0 * 340 = 434; CI -0.05 -> 383, 0.2 -> 468
    assert point.get("d").startswith("M434 ")
    assert ci.get("d").startswith("M383 ") and "H468" in ci.get("d")
    assert ci.get("stroke") == "#1f7a3f" and _val(rows[0]) == "+0.1000 [−0.0500, +0.2000]"
    ci, point = [p for p in rows[1].iter(f"{SVG}path")]  # -0.3 -> 298, -0.2 -> 332
    assert ci.get("d").startswith("M298 ") and point.get("d").startswith("M332 ")
    assert ci.get("stroke") == "#b3261e" and _val(rows[1]) == "−0.2000 [−0.3000, −0.1000]"
    assert list(rows[2].iter(f"{SVG}path")) == [] and _val(rows[2]) == "n/a"
    ticks = [t.text for t in _tree(svg).iter(f"{SVG}text") if t.get("class") == "tick"]
    assert ticks == ["−0.5", "−0.25", "0", "+0.25", "+0.5"]
    # rows 22 px apart from y 10: each label's baseline at its row's middle + 4
    assert [float(r.find(f"{SVG}text").get("y")) for r in rows] == [25, 47, 69]


def test_strip_chart_bins_match_a_brute_force_count():
    values = [0.0, 0.05, 0.1, 0.49, 0.5, 0.999, 1.0, 1.0, -0.3, 1.7]
    svg = strip_chart([("m", [(v, f"case{i}") for i, v in enumerate(values)])], title="t",
                      low=0.0, high=1.0, bins=10, ticks=[0, 1], x_label="v")
    want: dict[int, int] = {}
    for v in values:  # brute force: the bin whose [a, b) holds v, the ends taking the rest
        b = next((k for k in range(10) if k / 10 <= v < (k + 1) / 10), 0 if v < 0 else 9)
        want[b] = want.get(b, 0) + 1
    got = {}
    for rect in _tree(svg).iter(f"{SVG}rect"):
        title = rect.find(f"{SVG}title").text
        count, low = re.match(r"m: (\d+) case\(s\) in \[([-0-9.e]+),", title).groups()
        got[round(float(low) * 10)] = int(count)
    assert got == want
    (row,) = _rows(svg)
    assert _val(row) == f"n={len(values)}"
    heights = {round(float(r.get("x"))): float(r.get("height")) for r in _tree(svg).iter(f"{SVG}rect")}
    assert max(heights.values()) == 24 and min(heights.values()) == pytest.approx(24 * math.sqrt(1 / 4))


def test_hostile_labels_stay_text_in_every_chart():
    svgs = [forest_plot([(HOSTILE, 0.1, 0.0, 0.2, "better")], title=HOSTILE),
            strip_chart([(HOSTILE, [(0.5, HOSTILE)])], title=HOSTILE, low=0, high=1, bins=4,
                        ticks=[0, 1], x_label=HOSTILE)]
    for svg in svgs:
        tree = _tree(svg)
        assert {el.tag.removeprefix(SVG) for el in tree.iter()} <= {
            "svg", "title", "g", "text", "line", "path", "rect"}
        texts = "".join(tree.itertext())
        assert HOSTILE in texts and "<script>" not in svg


def test_reason_kind_drops_the_particulars():
    assert reason_kind("refuted by neighbour 3 (12 rows): gold row ...") == "refuted by neighbour N"
    assert reason_kind("equal on the original and all 5 neighbours") == \
        "equal on the original and all N neighbours"
    assert reason_kind("no neighbour databases: the gold x") == "no neighbour databases"
    assert reason_kind(None) == "no reason recorded"


# --- from real runs ---------------------------------------------------------------------------


def test_compare_forest_and_strip_read_the_comparison(pair):
    from queryeval.report.compare import compare_runs

    a, _, c = pair
    comp = compare_runs(a, c, resamples=300)
    forest, paired = compare_charts(comp)
    assert (forest["id"], paired["id"]) == ("forest", "paired")
    rows = _rows(forest["svg"])
    drawn = [m for m in comp.metrics if m.tested]
    assert [r.find(f"{SVG}title").text.split(":")[0] for r in rows] == [m.metric for m in drawn]
    for row, m in zip(rows, drawn, strict=True):
        # the compare's own difference and paired interval, as it computed them
        assert _val(row) == _ci(m)
        assert row.get("data-verdict") == m.verdict == "worse"
        assert "paired interval" in row.find(f"{SVG}title").text
    # per-case differences: the flips at their B − A, the other cases at 0, in 21 bins over
    # the round half-width holding the largest |B − A| (brute force below)
    for row, m in zip(_rows(paired["svg"]), drawn, strict=True):
        deltas = [f.b - f.a for f in m.improved + m.regressed]
        deltas += [0.0] * (m.n - len(deltas))
        e = nice_extent(deltas)
        want: dict[int, int] = {}
        for d in deltas:
            k = next((k for k in range(21) if -e + k * 2 * e / 21 <= d < -e + (k + 1) * 2 * e / 21),
                     20 if d > 0 else 0)
            want[k] = want.get(k, 0) + 1
        got = {}
        for rect in row.iter(f"{SVG}rect"):
            n, low = re.match(r".*: (\d+) case\(s\) in \[([-0-9.e]+),",
                              rect.find(f"{SVG}title").text).groups()
            got[round((float(low) + e) / (2 * e / 21))] = int(n)
        assert got == want and sum(got.values()) == m.n == 23
        assert want.get(10) == m.n - len(m.improved) - len(m.regressed)


def test_cluster_robust_interval_is_the_one_drawn(tmp_path):
    """Cases in 4 clusters: the forest row is the compare's cluster-bootstrap interval and
    says so (the compare computed it: it is not recomputed for the chart)."""
    from queryeval.report.compare import compare_runs
    from queryeval.run.config import RunConfig
    from queryeval.run.evaluate import start_run

    docs, a_lines, b_lines = [], [], []
    for i in range(16):
        docs.append(json.dumps({"id": f"q{i}", "name": f"question {i}", "cluster": f"doc{i % 4}",
                                "conversation": [{"role": "user", "content": f"q{i}?",
                                                  "target": {"answers": {"a": "1"}}}]}))
        a_lines.append(json.dumps({"id": f"q{i}", "response": "@a[1]" if i % 3 else "@a[2]"}))
        b_lines.append(json.dumps({"id": f"q{i}", "response": "@a[1]" if i % 5 else "@a[2]"}))
    (tmp_path / "cases.jsonl").write_text("\n".join(docs) + "\n")
    for name, lines in (("a", a_lines), ("b", b_lines)):
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    runs = [start_run(RunConfig(suite=str(tmp_path / "cases.jsonl"), out=str(tmp_path / n),
                                responses=str(tmp_path / f"{n}.jsonl"), reports=False)
                      ).log.paths.batch for n in "ab"]
    comp = compare_runs(*runs, resamples=300)
    m = next(m for m in comp.metrics if m.tested)
    assert m.clusters == 4
    (forest, _) = compare_charts(comp)
    assert "cluster-robust (4 clusters)" in forest["title"]
    row = _rows(forest["svg"])[0]
    assert _val(row) == _ci(m)


def test_nway_forest_has_every_run_against_the_baseline(pair):
    from queryeval.report.compare import compare_many
    from queryeval.report.html_compare import render_nway

    comp = compare_many(list(pair), resamples=300)
    forest, paired = nway_charts(comp)
    verdicts = {(v["run_b"], v["metric"]): v["verdict"] for v in comp.verdicts() if v["run_a"] == 0}
    want = []
    for metric in dict.fromkeys(m.metric for (i, _), res in comp.pair_results.items() if i == 0
                                for m in res if m.tested):
        for j in (1, 2):
            m = next(m for m in comp.pair_results[(0, j)] if m.metric == metric)
            want.append((f"{metric}: {'abc'[j]} − a", verdicts[(j, metric)], _ci(m)))
    got = [(r.find(f"{SVG}text").text, r.get("data-verdict"), _val(r)) for r in _rows(forest["svg"])]
    assert got == want and {w[1] for w in want} >= {"worse"}
    page = render_nway(comp)
    assert page.count('<figure class="chart"') == 2 and HOSTILE not in page


def test_compare_page_and_notebook_show_the_forest(pair, tmp_path):
    import queryeval as qe
    from queryeval.report.html_compare import render_comparison

    a, b, _ = pair
    comp = qe.compare(a, b, resamples=300)
    html = render_comparison(comp.raw)
    assert html.index('data-chart="forest"') < html.index("<h2>Metrics</h2>")
    assert 'data-chart="paired"' in html and HOSTILE not in html
    repr_html = comp._repr_html_()
    svg = re.search(r"<svg.*?</svg>", repr_html, re.S)[0]
    assert _tree(svg).get("class") == "chart forest"
    assert [_val(r) for r in _rows(svg)] == [_val(r) for r in _rows(compare_charts(comp.raw)[0]["svg"])]


def test_run_charts_from_the_viewers_figures(pair):
    from queryeval.report.case_rows import case_rows
    from queryeval.run.results import RunResults
    from queryeval.viewer.results import run_figures

    loaded = RunResults.open(pair[1])
    rows = case_rows(loaded)
    figs = run_figures(loaded, resamples=200)
    charts = run_charts(loaded.task, figs["overall_rows"], loaded.metrics["overall_metrics"], rows)
    assert [c["id"] for c in charts] == ["overall", "distribution"]
    dist = _rows(charts[1]["svg"])
    names = [r.find(f"{SVG}text/{SVG}title").text for r in dist]
    assert names == ["macro_precision", "macro_recall"]
    for row, name in zip(dist, names, strict=True):
        values = [r["metrics"][name] for r in rows]
        assert _val(row) == f"n={len(values)}"
        top = next(rect for rect in row.iter(f"{SVG}rect")
                   if rect.find(f"{SVG}title").text.startswith(f"{name}: ") and "[0.95, 1]" in
                   rect.find(f"{SVG}title").text)
        assert f": {sum(v >= 0.95 for v in values)} case(s)" in top.find(f"{SVG}title").text
