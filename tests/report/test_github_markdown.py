"""A newcomer's audit of the step summary's Markdown cells: GitHub renders ``$…$`` as
LaTeX math, so a response ``$\\color{green}\\text{all tests passed}$`` in a failed case's
reason drew styled text in the job's summary (GitHub's docs: escape a dollar sign with a
backslash outside math). Failed before the fix."""

from __future__ import annotations

from queryeval.report.github import md


def test_math_delimiters_are_escaped():
    cell = md(r"$\color{green}\text{all tests passed}$ and $$x$$")
    assert "$" not in cell.replace("\\$", "")
    assert cell.count("\\$") == 6

