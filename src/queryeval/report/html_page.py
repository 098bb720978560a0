"""The page template shared by the HTML reports: inline CSS, a few lines of vanilla JS (table
filtering and sorting), formatting helpers. Nothing is loaded from the network.

The script marks ``<body data-ok="1" data-charts="N">`` once it has wired the tables, so a
headless browser test can tell the page ran without errors (``data-ok="0"`` and
``data-error`` otherwise).
"""

from __future__ import annotations

import math
from html import escape

from queryeval.io.safetext import visible_controls
from queryeval.report.html_svg import CHART_CSS
from queryeval.report.numbers import figure

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1180px;padding:18px 28px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:4px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#5a6275;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}th,td{border:1px solid #d9dce5;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f7}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
#cases{width:100%}#cases td.case{max-width:340px;overflow-wrap:anywhere}#cases th.num{overflow-wrap:anywhere;max-width:84px;font-size:12px}#cases td.id{white-space:nowrap}#cases th{cursor:pointer;user-select:none}td.ci .why{color:#5a6275;font-size:11.5px}#cases th[data-sort=asc]:after{content:" \\25B2"}#cases th[data-sort=desc]:after{content:" \\25BC"}
.pass{color:#1f7a3f}.fail{color:#b45f06}.error{color:#b3261e;font-weight:600}.worse{color:#b3261e;font-weight:600}.better{color:#1f7a3f}
.charts{display:flex;flex-wrap:wrap;gap:14px 28px;align-items:flex-start}
""" + CHART_CSS + """.filters{display:flex;gap:10px;align-items:center;margin:6px 0}input[type=search]{padding:4px 6px;width:280px}
pre{background:#f6f7f9;border:1px solid #e1e4ea;padding:6px 8px;overflow:auto;max-height:320px;font-size:12px;white-space:pre-wrap;word-break:break-word}
.case{border:1px solid #dfe2ea;border-radius:6px;padding:4px 14px 10px;margin:12px 0}.case:target{outline:3px solid #f0b429}
ul.terms{margin:2px 0;padding-left:18px}.tag{background:#eef1f7;border-radius:3px;padding:0 4px;margin-right:3px;font-size:12px}
a.back{font-size:12px;margin-left:8px}.note{color:#5a6275;font-size:12.5px}
td{overflow-wrap:break-word}table.meta td,td.path,h1{overflow-wrap:anywhere}.scroll{overflow-x:auto}.reason,.wrap{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
.banner{border:1px solid #e0a9a4;background:#fdf1f0;color:#7a1b14;border-radius:6px;padding:8px 14px;margin:10px 0}.banner ul{margin:4px 0;padding-left:20px}
details.case>summary,details.fold>summary{cursor:pointer;padding:4px 0}details.case>summary{font-weight:600}
table.rows td.hit{background:#e6f4ea}table.rows td.miss{background:#fdf1e6}.rowsbox{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:10px 24px;align-items:start}.rowsbox>div{min-width:0}
table.rows{table-layout:fixed;width:100%}table.rows td{overflow-wrap:anywhere}table.rows th:first-child{width:22px}
blockquote.expected{margin:4px 0 8px;padding:6px 10px;border-left:4px solid #3a9a5b;background:#f3faf5}
details.long>summary{cursor:pointer;list-style:none}details.long[open]>summary{display:none}
ul.subs{list-style:none;padding-left:4px;margin:4px 0}ul.subs li.ok{color:#1f7a3f}ul.subs li.no{color:#b3261e}
"""

SCRIPT = r"""
(function () {
  var body = document.body;
  try {
    var table = document.getElementById('cases');
    if (table) {
      var tbody = table.tBodies[0];
      var rows = Array.prototype.slice.call(tbody.rows);
      var text = document.getElementById('filter-text');
      var status = document.getElementById('filter-status');
      var count = document.getElementById('filter-count');
      var apply = function () {
        var q = text.value.toLowerCase(), s = status.value, shown = 0;
        rows.forEach(function (r) {
          var ok = (!q || (r.textContent + ' ' + (r.getAttribute('data-case') || '')).toLowerCase().indexOf(q) >= 0) &&
                   (!s || r.getAttribute('data-status') === s);
          r.hidden = !ok;
          if (ok) { shown += 1; }
        });
        count.textContent = shown + ' of ' + rows.length + ' cases';
      };
      var key = function (row, i) {
        var cell = row.cells[i], v = cell.getAttribute('data-v');
        if (v !== null) { return v === '' ? -Infinity : parseFloat(v); }
        return cell.textContent.toLowerCase();
      };
      var heads = table.tHead.rows[0].cells;
      Array.prototype.forEach.call(heads, function (th, i) {
        th.addEventListener('click', function () {
          var asc = th.getAttribute('data-sort') !== 'asc';
          Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('data-sort'); });
          th.setAttribute('data-sort', asc ? 'asc' : 'desc');
          rows.sort(function (a, b) {
            var x = key(a, i), y = key(b, i);
            var c = x < y ? -1 : (x > y ? 1 : 0);
            return asc ? c : -c;
          });
          rows.forEach(function (r) { tbody.appendChild(r); });
        });
      });
      text.addEventListener('input', apply);
      status.addEventListener('change', apply);
      apply();
    }
    var reveal = function () {  // a followed link to a folded case opens it
      var id = decodeURIComponent(location.hash.slice(1));
      var el = id ? document.getElementById(id) : null;
      while (el) {
        if (el.tagName === 'DETAILS') { el.open = true; }
        el = el.parentElement;
      }
    };
    window.addEventListener('hashchange', reveal);
    reveal();
    body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
    body.setAttribute('data-ok', '1');
  } catch (e) {
    body.setAttribute('data-ok', '0');
    body.setAttribute('data-error', String(e));
    throw e;
  }
})();
"""


def esc(value: object) -> str:
    """HTML-escaped text (quotes too, so it is safe in attributes)."""
    return escape("" if value is None else str(value), quote=True)


fmt = figure  # a figure for display: one formatter for every surface (report.numbers)


def num_cell(value: object, digits: int = 4, cls: str = "num") -> str:
    """A right-aligned cell carrying its raw value in ``data-v`` for sorting."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    raw = repr(float(value)) if numeric and math.isfinite(value) else ""
    return f'<td class="{cls}" data-v="{esc(raw)}">{esc(fmt(value, digits))}</td>'


def table(headers: list[str], rows: list[list[str]], *, num_from: int = 1, attrs: str = "") -> str:
    """A table from already-rendered cell HTML (``<td>`` strings) with escaped headers, in a
    box that scrolls sideways when the table is wider than the page (a group table of the
    query task has 14 figure columns): the page itself never does."""
    head = "".join(f'<th class="{"num" if j >= num_from else ""}">{esc(h)}</th>'
                   for j, h in enumerate(headers))
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    return (f'<div class="scroll"><table{attrs}><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def page(title: str, body: str) -> str:
    """A complete self-contained HTML document."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(visible_controls(title))}</title><style>{CSS}</style></head>"
        f"<body data-ok=\"0\">{body}<script>{SCRIPT}</script></body></html>\n"
    )
