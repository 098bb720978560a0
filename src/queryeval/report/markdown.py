"""The one Markdown escaper: untrusted text (labels, case names, metric names, group
members, messages) as one Markdown table cell or line, for every Markdown output (the
GitHub step summary of a run or a comparison, ``compare --markdown`` of N runs)."""

from __future__ import annotations


def md(text: object) -> str:
    """Untrusted text as one Markdown table cell (no markup, no HTML, no math, one line)."""
    s = str(text).replace("\\", "\\\\").replace("&", "&amp;")
    for ch in "|*_`[]<>#~!$":  # $: GitHub renders $...$ as LaTeX math
        s = s.replace(ch, "\\" + ch)
    return " ".join(s.split())
