"""The recall@k chart's value labels never overlap (each other, the legend, the axis ticks)
and stay inside the chart, whatever the values: a property test over random curves of up to
four series (recall@k, mrr@k, ndcg@k, hit_rate@k) over up to 20 k, labels taken as 11 px high boxes 6.5 px a
character wide (the chart's 10.5 px font)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.report.html_svg import line_chart

NAMES = ["recall@k", "mrr@k", "ndcg@k", "hit_rate@k"]


def _boxes(svg: str, cls: str) -> list[tuple[float, float, float, float]]:
    out = []
    for x, y, text in re.findall(rf'<text x="([\d.]+)" y="([\d.]+)" class="{cls}">([^<]*)</text>',
                                 svg):
        x, y = float(x), float(y)
        w = 6.5 * len(text)
        left = x - w / 2 if cls == "tick" else x
        out.append((left, y - 11, left + w, y))
    return out


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@st.composite
def curves(draw):
    n = draw(st.integers(1, 20))
    ks = sorted(draw(st.sets(st.integers(1, 100), min_size=n, max_size=n)))
    values = st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=n, max_size=n)
    return ks, draw(st.lists(values, min_size=1, max_size=4))


@settings(max_examples=150, deadline=None)
@given(curves())
def test_value_labels_never_overlap(drawn):
    ks, series = drawn
    svg = line_chart(ks, dict(zip(NAMES, series, strict=False)), title="recall@k over k")
    vals, width = _boxes(svg, "val"), float(re.search(r'width="(\d+)"', svg)[1])
    others = _boxes(svg, "tick") + _boxes(svg, "lg")
    for i, a in enumerate(vals):
        assert 0 <= a[1] and a[2] <= width, a
        assert not any(_overlap(a, b) for b in vals[i + 1:]), (a, vals)
        assert not any(_overlap(a, b) for b in others), (a, others)
