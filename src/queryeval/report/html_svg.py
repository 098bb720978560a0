"""Inline SVG charts for the HTML reports, drawn in Python (no JavaScript library, no network).

On a fixed [0, 1] scale because every figure they show is a proportion: :func:`bar_chart`
(horizontal grouped bars, optional confidence whiskers), :func:`radar_chart` (the seed 001
"spider chart": one axis per group member) and :func:`line_chart` (a figure over k). On a
scale centred on 0: :func:`forest_plot` (differences with their intervals, one row each).
On any range: :func:`strip_chart` (per row, how many cases fall at each value: a per-case
distribution, a per-case pass rate, per-case differences). On [0, 1] × [0, 1]:
:func:`scatter_plot` (two runs' per-case scores, one panel per metric). The last three
style themselves
(presentation attributes, no stylesheet needed: a notebook shows them as they are); the
others take :data:`CHART_CSS` from the page. All text is
escaped, its control characters (NUL, ESC, other C0 and C1, bidirectional overrides) shown
as the console shows them (``\\x1b``, :func:`queryeval.io.safetext.visible_controls`); long
labels are shortened on screen and given in full in a ``<title>`` tooltip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape as _html_escape

from queryeval.io.safetext import visible_controls

PALETTE = ["#2f6db5", "#e07b24", "#3a9a5b", "#b23a48", "#7d5ba6", "#8c6d31"]
VERDICT_COLORS = {"better": "#1f7a3f", "worse": "#b3261e"}
"""A forest-plot row's colour by its verdict (any other: grey)."""
CHART_CSS = (
    "svg.chart text{font:11.5px system-ui,sans-serif;fill:#333}svg.chart .lab{text-anchor:end}"
    "svg.chart .tick{text-anchor:middle;fill:#777;font-size:10px}\n"
    "svg.chart .grid{stroke:#e3e5ea}svg.chart .ring{fill:none;stroke:#d5d8df}svg.chart .ci"
    "{stroke:#222;stroke-width:1.3;fill:none}svg.chart .val{font-size:10.5px;fill:#444}\n"
    "figure.chart{margin:4px 0}figure.chart figcaption{margin-top:2px}\n")
"""The stylesheet of the charts drawn with classes (bar, radar, line): the HTML pages' and
the viewer's (served after its app.css)."""


def escape(text: object) -> str:
    """Text for an SVG ``<text>``, ``<title>`` or attribute: controls made visible, then
    HTML-escaped (quotes too)."""
    return _html_escape(visible_controls(str(text)), quote=True)


def _short(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if v == v else "0"


def _legend(series: Sequence[str], x: float, y: float) -> tuple[list[str], float]:
    out, cx = [], x
    for i, name in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{_num(cx)}" y="{_num(y - 9)}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{_num(cx + 14)}" y="{_num(y)}" class="lg">{escape(name)}</text>')
        cx += 26 + 7.5 * len(name)
    return out, cx


def bar_chart(rows: Sequence[tuple[str, Sequence[float | None]]], series: Sequence[str], *,
              title: str, ci: Sequence[Sequence[tuple[float, float] | None]] | None = None,
              width: int = 760, label_width: int = 230, legend: bool = False,
              label_chars: int = 34) -> str:
    """Horizontal grouped bars on [0, 1]: one group per row, one bar per series.

    ``rows``: ``(label, values per series)``; a None value is drawn as "n/a".
    ``ci``: per row, per series, an optional ``(low, high)`` whisker.
    ``legend``: name the series even when there is one (always named when several).
    ``label_chars``: longer labels are shortened (in full in their tooltip).
    """
    legend = legend or len(series) > 1
    bar_h, gap, top = 13, 9, 34 if legend else 16
    plot_x, plot_w = label_width, width - label_width - 56
    group_h = bar_h * len(series) + gap
    height = top + group_h * len(rows) + 24
    parts = [f'<svg class="chart bar" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    if legend:
        parts += _legend(series, plot_x, 16)[0]
    axis_y = top + group_h * len(rows)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = plot_x + tick * plot_w
        parts.append(f'<line x1="{_num(x)}" y1="{top - 4}" x2="{_num(x)}" y2="{axis_y}" class="grid"/>'
                     f'<text x="{_num(x)}" y="{axis_y + 14}" class="tick">{tick:g}</text>')
    for r, (label, values) in enumerate(rows):
        y0 = top + r * group_h
        parts.append(f'<text x="{plot_x - 8}" y="{_num(y0 + (group_h - gap) / 2 + 4)}" class="lab">'
                     f'<title>{escape(label)}</title>{escape(_short(label, label_chars))}</text>')
        for s, value in enumerate(values):
            y = y0 + s * bar_h
            color = PALETTE[s % len(PALETTE)]
            if value is None or not math.isfinite(value):
                parts.append(f'<text x="{plot_x + 4}" y="{y + bar_h - 3}" class="val">n/a</text>')
                continue
            w = max(0.0, min(1.0, value)) * plot_w
            parts.append(f'<rect x="{plot_x}" y="{y + 1}" width="{_num(w)}" height="{bar_h - 2}" '
                         f'fill="{color}"><title>{escape(label)} · {escape(series[s])}: '
                         f'{value:.4f}</title></rect>')
            whisker = ci[r][s] if ci is not None else None
            end = w
            if whisker is not None:
                lo, hi = (plot_x + max(0.0, min(1.0, v)) * plot_w for v in whisker)
                cy = y + bar_h / 2
                parts.append(f'<path d="M{_num(lo)} {_num(cy)}H{_num(hi)}M{_num(lo)} {_num(cy - 4)}'
                             f'v8M{_num(hi)} {_num(cy - 4)}v8" class="ci"/>')
                end = max(w, hi - plot_x)
            parts.append(f'<text x="{_num(plot_x + end + 4)}" y="{y + bar_h - 3}" class="val">'
                         f'{value:.3f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def radar_chart(labels: Sequence[str], series: dict[str, Sequence[float]], *, title: str,
                size: int = 460) -> str:
    """A spider chart on [0, 1]: one axis per label (at least 3), one polygon per series."""
    if len(labels) < 3:
        raise ValueError("a radar chart needs at least 3 axes")
    n = len(labels)
    pad_x, pad_top = 175, 40
    r = size / 2 - 30
    cx, cy = pad_x + r, pad_top + r + 10
    width, height = int(2 * (pad_x + r)), int(cy + r + 40)

    def point(i: int, v: float) -> tuple[float, float]:
        angle = 2 * math.pi * i / n - math.pi / 2
        return cx + r * v * math.cos(angle), cy + r * v * math.sin(angle)

    parts = [f'<svg class="chart radar" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    parts += _legend(list(series), 10, 16)[0]
    for level in (0.25, 0.5, 0.75, 1.0):
        pts = " ".join(f"{_num(x)},{_num(y)}" for x, y in (point(i, level) for i in range(n)))
        parts.append(f'<polygon points="{pts}" class="ring"/>')
        lx, ly = point(0, level)
        parts.append(f'<text x="{_num(lx + 3)}" y="{_num(ly + 10)}" class="tick">{level:g}</text>')
    for i, label in enumerate(labels):
        x, y = point(i, 1.0)
        parts.append(f'<line x1="{_num(cx)}" y1="{_num(cy)}" x2="{_num(x)}" y2="{_num(y)}" class="grid"/>')
        lx, ly = point(i, 1.08)
        anchor = "middle" if abs(lx - cx) < 1e-6 * size + 2 else ("start" if lx > cx else "end")
        parts.append(f'<text x="{_num(lx)}" y="{_num(ly + 4)}" text-anchor="{anchor}" class="lab2">'
                     f'<title>{escape(label)}</title>{escape(_short(label, 30))}</text>')
    for s, (name, values) in enumerate(series.items()):
        if len(values) != n:
            raise ValueError(f"series {name!r} has {len(values)} values for {n} axes")
        color = PALETTE[s % len(PALETTE)]
        pts = [point(i, max(0.0, min(1.0, v))) for i, v in enumerate(values)]
        parts.append(f'<polygon points="{" ".join(f"{_num(x)},{_num(y)}" for x, y in pts)}" '
                     f'fill="{color}" fill-opacity="0.15" stroke="{color}" stroke-width="2"/>')
        for (x, y), label, v in zip(pts, labels, values, strict=True):
            parts.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3" fill="{color}">'
                         f'<title>{escape(label)} · {escape(name)}: {v:.4f}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(xs: Sequence[int | float], series: dict[str, Sequence[float | None]], *,
               title: str, x_label: str = "k", width: int = 560, height: int = 300) -> str:
    """A curve per series on [0, 1] over the ordered ``xs`` (e.g. recall@k over k), the xs
    evenly spaced and labelled; a None value leaves a gap."""
    if not xs:
        raise ValueError("a line chart needs at least one x")
    left, right, top, bottom = 46, 64, 34 if len(series) > 1 else 18, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / max(1, len(xs) - 1)

    def px(i: int) -> float:
        return left + (i * step if len(xs) > 1 else plot_w / 2)

    def py(v: float) -> float:
        return top + (1.0 - max(0.0, min(1.0, v))) * plot_h

    parts = [f'<svg class="chart line" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    if len(series) > 1:
        parts += _legend(list(series), left, 16)[0]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = py(tick)
        parts.append(f'<line x1="{left}" y1="{_num(y)}" x2="{left + plot_w}" y2="{_num(y)}" '
                     f'class="grid"/><text x="{left - 6}" y="{_num(y + 4)}" class="lab">'
                     f"{tick:g}</text>")
    for i, x in enumerate(xs):
        parts.append(f'<text x="{_num(px(i))}" y="{top + plot_h + 16}" class="tick">'
                     f"{escape(str(x))}</text>")
    parts.append(f'<text x="{_num(left + plot_w / 2)}" y="{height - 6}" class="tick">'
                 f"{escape(x_label)}</text>")
    placed: list[tuple[float, float, float, str]] = []  # value labels drawn: their boxes
    for s, (name, values) in enumerate(series.items()):
        if len(values) != len(xs):
            raise ValueError(f"series {name!r} has {len(values)} values for {len(xs)} xs")
        color = PALETTE[s % len(PALETTE)]
        pts = [(px(i), py(v), v) for i, v in enumerate(values)
               if v is not None and math.isfinite(v)]
        if len(pts) > 1:
            path = " ".join(f"{'M' if j == 0 else 'L'}{_num(x)} {_num(y)}"
                            for j, (x, y, _) in enumerate(pts))
            parts.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for (x, y, v), xv in zip(pts, [x for x, v in zip(xs, values, strict=True)
                                       if v is not None and math.isfinite(v)], strict=True):
            parts.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3.5" fill="{color}">'
                         f'<title>{escape(name)} at {escape(x_label)}={escape(str(xv))}: '
                         f'{v:.4f}</title></circle>')
            label_y = _free_label_y(placed, x + 5, y, f"{v:.3f}", top - 4,
                                    top + plot_h + 4)
            if label_y is not None:
                parts.append(f'<text x="{_num(x + 5)}" y="{_num(label_y)}" class="val">'
                             f"{v:.3f}</text>")
    parts.append("</svg>")
    return "".join(parts)


LABEL_GAP = 12  # the vertical room a value label needs (its font is about 11 px)


LABEL_CHAR_W = 6.5  # the width a value label's character needs (10.5 px font)


def _free_label_y(placed: list[tuple[float, float, float, str]], x: float, y: float,
                  text: str, low: float, high: float) -> float | None:
    """Where a point's value label (drawn from ``x``) goes so that its box overlaps no label
    already drawn, at this x or a neighbouring one (``placed``: each label's left, right,
    baseline and text): above the point, else below, else further out, its box kept within
    ``low``..``high`` (below the legend, above the axis ticks); None (the point's tooltip
    still has the value) when the same text is already there or no room is left."""
    width = LABEL_CHAR_W * len(text)
    for left, _, other_y, other in placed:
        if other == text and left == x and abs(other_y - (y - 6)) < 2 * LABEL_GAP:
            return None
    for candidate in (y - 6, y + 14, y - 6 - LABEL_GAP, y + 14 + LABEL_GAP):
        if candidate - LABEL_GAP + 1 < low or candidate > high:
            continue
        if all(x + width <= left or right <= x or abs(candidate - other_y) >= LABEL_GAP
               for left, right, other_y, _ in placed):
            placed.append((x, x + width, candidate, text))
            return candidate
    return None


_FONT = 'font-family="system-ui,sans-serif"'


def nice_extent(values: Sequence[float | None]) -> float:
    """The half-width of a scale centred on 0 that holds every value: the smallest of 1, 2,
    2.5 or 5 times a power of ten (0.01 at least) that is at least max |v|."""
    top = max((abs(v) for v in values if v is not None and math.isfinite(v)), default=0.0)
    for e in range(-2, 16):
        for m in (1.0, 2.0, 2.5, 5.0):
            if m * 10.0 ** e >= top:
                return round(m * 10.0 ** e, 2 - e if e < 2 else 0)
    return top


def _tick_text(v: float, signed: bool = True) -> str:
    text = (f"{v:+.4g}" if signed else f"{v:.4g}") if v else "0"
    return text.replace("-", "\u2212")


def _diff_text(v: float) -> str:
    """A difference as the tables write it (4 decimals), signed, with a true minus sign."""
    return "0.0000" if v == 0 else f"{v:+.4f}".replace("-", "\u2212")


def _open(kind: str, width: int, height: int, title: str) -> str:
    return (f'<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" {_FONT} '
            f'font-size="11.5" aria-label="{escape(title)}"><title>{escape(title)}</title>')


def _axis(plot_x: float, plot_w: float, top: float, bottom: float, ticks: Sequence[float],
          lo: float, hi: float, label: str, signed: bool) -> list[str]:
    """Grid lines and tick labels of a horizontal scale lo..hi, the axis label under them;
    ``signed``: a scale of differences (ticks with their sign, 0 dashed)."""
    out = []
    for t in ticks:
        x = plot_x + (t - lo) / (hi - lo) * plot_w
        stroke = '#9aa0ab" stroke-dasharray="4 3' if t == 0 and signed else "#e3e5ea"
        out.append(f'<line x1="{_num(x)}" y1="{_num(top)}" x2="{_num(x)}" y2="{_num(bottom)}" '
                   f'stroke="{stroke}"/>'
                   f'<text x="{_num(x)}" y="{_num(bottom + 14)}" text-anchor="middle" '
                   f'font-size="10" fill="#666" class="tick">{escape(_tick_text(t, signed))}</text>')
    out.append(f'<text x="{_num(plot_x + plot_w / 2)}" y="{_num(bottom + 30)}" '
               f'text-anchor="middle" font-size="10.5" fill="#555" class="axis">{escape(label)}</text>')
    return out


def forest_plot(rows: Sequence[tuple[str, float | None, float | None, float | None, str]], *,
                title: str, x_label: str = "difference (B − A)", width: int = 760,
                label_width: int = 230, tips: Sequence[str] | None = None) -> str:
    """Differences with their intervals on a scale centred on 0, one row each:
    ``(label, difference, low, high, verdict)`` (``verdict``: ``better``/``worse`` colour the
    row; None values: "no interval" or "n/a"). The value and its interval are written at the
    right of each row; ``tips``: each row's tooltip (default: its label and figures)."""
    extent = nice_extent([v for r in rows for v in r[1:4]])
    row_h, top, value_w = 22, 10, 190
    plot_x, plot_w = label_width, width - label_width - value_w
    bottom = top + row_h * len(rows) + 4
    height = int(bottom + 38)
    parts = [_open("forest", width, height, title)]
    parts += _axis(plot_x, plot_w, top, bottom, [-extent, -extent / 2, 0.0, extent / 2, extent],
                   -extent, extent, x_label, True)

    def px(v: float) -> float:
        return plot_x + (max(-extent, min(extent, v)) + extent) / (2 * extent) * plot_w

    for r, (label, diff, low, high, verdict) in enumerate(rows):
        cy = top + r * row_h + row_h / 2
        color = VERDICT_COLORS.get(verdict, "#555")
        figures = ("n/a" if diff is None else _diff_text(diff) if low is None or high is None
                   else f"{_diff_text(diff)} [{_diff_text(low)}, {_diff_text(high)}]")
        tip = tips[r] if tips is not None else f"{label}: {figures}"
        parts.append(f'<g class="row" data-verdict="{escape(verdict)}"><title>{escape(tip)}</title>'
                     f'<text x="{plot_x - 8}" y="{_num(cy + 4)}" text-anchor="end" class="lab">'
                     f'{escape(_short(label))}</text>')
        if diff is not None and math.isfinite(diff):
            if low is not None and high is not None:
                lo, hi = px(low), px(high)
                parts.append(f'<path d="M{_num(lo)} {_num(cy)}H{_num(hi)}M{_num(lo)} '
                             f'{_num(cy - 5)}v10M{_num(hi)} {_num(cy - 5)}v10" stroke="{color}" '
                             'stroke-width="1.6" fill="none" class="ci"/>')
            x = px(diff)
            parts.append(f'<path d="M{_num(x)} {_num(cy - 5)}l5 5l-5 5l-5 -5z" fill="{color}" '
                         'class="point"/>')
        parts.append(f'<text x="{_num(plot_x + plot_w + 10)}" y="{_num(cy + 4)}" '
                     f'font-size="10.5" fill="{color}" class="val">{escape(figures)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def strip_chart(rows: Sequence[tuple[str, Sequence[tuple[float, str]]]], *, title: str,
                low: float, high: float, bins: int, ticks: Sequence[float], x_label: str,
                width: int = 760, label_width: int = 230, names: int = 4,
                signed: bool = False) -> str:
    """Per row, the cases at each value: ``(label, [(value, case name), …])`` binned into
    ``bins`` equal bins over ``low``..``high`` (a value outside goes to the end bin), each bin
    a bar whose height goes with the square root of its share of the row's largest bin (one
    case among hundreds still shows, 5 px at least), its tooltip the count, the range and
    the first ``names`` case names; the row's n at the right. ``signed``: the values are
    differences (ticks with their sign, 0 dashed)."""
    if not high > low or bins < 1:
        raise ValueError("a strip chart needs low < high and at least one bin")
    row_h, top, bar_max = 30, 10, 24
    plot_x, plot_w = label_width, width - label_width - 70
    step = (high - low) / bins
    bottom = top + row_h * len(rows) + 4
    height = int(bottom + 38)
    parts = [_open("strip", width, height, title)]
    parts += _axis(plot_x, plot_w, top, bottom, ticks, low, high, x_label, signed)
    for r, (label, items) in enumerate(rows):
        y_base = top + r * row_h + row_h - 2
        counts: list[list[str]] = [[] for _ in range(bins)]
        for value, name in items:
            if value is None or not math.isfinite(value):
                continue
            counts[max(0, min(bins - 1, math.floor((value - low) / step)))].append(name)
        peak = max((len(c) for c in counts), default=0)
        shown = sum(len(c) for c in counts)
        parts.append(f'<g class="row"><text x="{plot_x - 8}" y="{_num(y_base - 8)}" '
                     f'text-anchor="end" class="lab"><title>{escape(label)}</title>'
                     f'{escape(_short(label))}</text>')
        parts.append(f'<line x1="{plot_x}" y1="{_num(y_base)}" x2="{_num(plot_x + plot_w)}" '
                     f'y2="{_num(y_base)}" stroke="#c9ced8"/>')
        for b, cases in enumerate(counts):
            if not cases:
                continue
            h = max(5.0, bar_max * math.sqrt(len(cases) / peak))  # area-like: 1 case shows
            a, z = low + b * step, low + (b + 1) * step
            listed = ", ".join(cases[:names]) + (f", … {len(cases) - names} more"
                                                 if len(cases) > names else "")
            parts.append(f'<rect x="{_num(plot_x + b * plot_w / bins + 0.5)}" '
                         f'y="{_num(y_base - h)}" width="{_num(max(1.0, plot_w / bins - 1))}" '
                         f'height="{_num(h)}" fill="#2f6db5" class="bin"><title>'
                         f'{escape(label)}: {len(cases)} case(s) in [{a:.4g}, {z:.4g}'
                         f'{"]" if b == bins - 1 else ")"}: {escape(listed)}</title></rect>')
        parts.append(f'<text x="{_num(plot_x + plot_w + 10)}" y="{_num(y_base - 8)}" '
                     f'font-size="10.5" fill="#444" class="val">n={shown}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


SCATTER_COLORS = {"better": VERDICT_COLORS["better"], "worse": VERDICT_COLORS["worse"],
                  "same": "#8a909c"}
"""A paired scatter's point colour: B better, B worse, the same."""


def _marks(points: Sequence[tuple[float, float, str, str]], size: int
           ) -> list[tuple[str, list[tuple[float, float, str]]]]:
    """The points of one panel grouped into marks: by kind and by the pixel they fall on
    (cases at one place are one mark: a binary metric's 100 cases at (1, 1) are one
    circle), kinds in the order same, better, worse (the moved drawn on top)."""
    groups: dict[tuple[str, int, int], list[tuple[float, float, str]]] = {}
    for x, y, kind, name in points:
        groups.setdefault((kind, round(x * size), round(y * size)), []).append((x, y, name))
    order = {"same": 0, "better": 1, "worse": 2}
    return [(kind, groups[(kind, px, py)])
            for kind, px, py in sorted(groups, key=lambda g: (order.get(g[0], 3), g[1], g[2]))]


def _span(values: Sequence[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.4f}" if lo == hi else f"{lo:.4f}–{hi:.4f}"


def scatter_plot(panels: Sequence[tuple[str, Sequence[tuple[float, float, str, str]]]], *,
                 title: str, x_label: str, y_label: str, size: int = 190, columns: int = 4,
                 names: int = 4) -> str:
    """Per-case paired scatters on [0, 1] × [0, 1], one panel per metric:
    ``(label, [(a, b, kind, case name), …])`` with ``kind`` ``better``/``worse``/``same``
    (:data:`SCATTER_COLORS`); x is run A's score, y run B's, the dashed
    diagonal is "the same". Cases on the same pixel and of the same kind are one mark
    whose area grows with their number; its tooltip gives the count, the values and the
    first ``names`` case names. Under each panel: how many cases of each kind."""
    if not panels:
        raise ValueError("a scatter plot needs at least one panel")
    left, top, bottom, gap, legend_h = 40, 22, 50, 26, 20
    cols = min(columns, len(panels))
    rows_n = math.ceil(len(panels) / cols)
    cell_w, cell_h = left + size + gap, top + size + bottom
    width, height = int(cols * cell_w + 10), int(legend_h + rows_n * cell_h)
    parts = [_open("scatter", width, height, title)]
    lx = 10.0
    for kind, word in (("better", "B better"), ("worse", "B worse"), ("same", "the same")):
        parts.append(f'<circle cx="{_num(lx + 5)}" cy="12" r="4.5" fill="{SCATTER_COLORS[kind]}"/>'
                     f'<text x="{_num(lx + 14)}" y="16" font-size="10.5" fill="#444">{word}</text>')
        lx += 30 + 6.5 * len(word)
    for p, (label, points) in enumerate(panels):
        ox = (p % cols) * cell_w + left
        oy = legend_h + (p // cols) * cell_h + top

        def px(v: float, ox: float = ox) -> float:
            return ox + max(0.0, min(1.0, v)) * size

        def py(v: float, oy: float = oy) -> float:
            return oy + (1.0 - max(0.0, min(1.0, v))) * size

        parts.append(f'<g class="panel"><text x="{_num(ox + size / 2)}" y="{_num(oy - 8)}" '
                     f'text-anchor="middle" font-size="11" fill="#333" class="lab2"><title>'
                     f'{escape(label)}</title>{escape(_short(label, 30))}</text>'
                     f'<rect x="{_num(ox)}" y="{_num(oy)}" width="{size}" height="{size}" '
                     'fill="none" stroke="#c9ced8"/>'
                     f'<line x1="{_num(px(0))}" y1="{_num(py(0))}" x2="{_num(px(1))}" '
                     f'y2="{_num(py(1))}" stroke="#9aa0ab" stroke-dasharray="4 3"/>')
        for t in (0.0, 0.5, 1.0):
            parts.append(f'<text x="{_num(px(t))}" y="{_num(oy + size + 13)}" text-anchor="middle" '
                         f'font-size="10" fill="#666">{t:g}</text><text x="{_num(ox - 5)}" '
                         f'y="{_num(py(t) + 3.5)}" text-anchor="end" font-size="10" '
                         f'fill="#666">{t:g}</text>')
        counts = {k: 0 for k in SCATTER_COLORS}
        for kind, cases in _marks(points, size):
            counts[kind] = counts.get(kind, 0) + len(cases)
            x0, y0 = cases[0][0], cases[0][1]
            r = min(12.0, 3.0 + 1.6 * math.sqrt(len(cases) - 1))
            listed = ", ".join(n for _, _, n in cases[:names]) + (
                f", … {len(cases) - names} more" if len(cases) > names else "")
            tip = (f"{label}: {len(cases)} case(s), {kind}: A "
                   f"{_span([c[0] for c in cases])}, B {_span([c[1] for c in cases])}: "
                   f"{listed}")
            parts.append(f'<circle cx="{_num(px(x0))}" cy="{_num(py(y0))}" r="{_num(r)}" '
                         f'fill="{SCATTER_COLORS.get(kind, "#555")}" fill-opacity="0.6" '
                         f'data-kind="{escape(kind)}" data-n="{len(cases)}" class="point">'
                         f"<title>{escape(tip)}</title></circle>")
        parts.append(f'<text x="{_num(ox + size / 2)}" y="{_num(oy + size + 27)}" '
                     f'text-anchor="middle" font-size="10" fill="#555" class="axis">'
                     f'{escape(_short(x_label, 40))}</text>'
                     f'<text x="{_num(ox + size / 2)}" y="{_num(oy + size + 41)}" '
                     f'text-anchor="middle" font-size="10" fill="#444" class="val">'
                     f'better {counts["better"]} · worse {counts["worse"]} · same '
                     f'{counts["same"]}</text></g>')
    parts.append(f'<text x="10" y="{_num(legend_h + top + size / 2)}" font-size="10" fill="#555" '
                 f'transform="rotate(-90 10 {_num(legend_h + top + size / 2)})" '
                 f'text-anchor="middle" class="axis">{escape(_short(y_label, 40))}</text>')
    parts.append("</svg>")
    return "".join(parts)
