"""What the tests of html browser share with other test files: ``HOSTILE``, ``PNG_MAGIC``, ``WebDriver``, ``_answers_files`` (moved here from test_html_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import browser_driver
from helpers.browser_driver import CHROMEDRIVER, CHROMIUM

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class WebDriver(browser_driver.WebDriver):
    """The shared WebDriver client (tests/helpers/browser_driver.py); the test skips where Chromium
    or chromedriver is missing."""

    def __init__(self, profile: Path) -> None:
        if CHROMIUM is None or CHROMEDRIVER is None:
            pytest.skip(browser_driver.MISSING)
        super().__init__(profile)


HOSTILE = "<script>alert(1)</script>"


def _answers_files(tmp: Path, n: int) -> tuple[Path, Path]:
    """A generated answers suite of ``n`` questions (six concepts, three sub-answers each,
    one hostile name, one long question, one missing and one empty response)."""
    concepts = ["Summary Statistics", "Correlation Analysis", "Outlier Detection",
                "Feature Engineering", "Distribution Analysis", "Machine Learning"]
    docs, lines = [], []
    for i in range(n):
        docs.append(json.dumps({
            "id": f"q{i}", "name": HOSTILE if i == 0 else f"question {i}", "tags": [f"t{i % 3}"],
            "metadata": {"concepts": [concepts[i % 6]], "level": "easy" if i % 2 else "hard"},
            "conversation": [{"role": "user", "content": "How much? " * (40 if i == 1 else 1),
                              "target": {"answers": {"a": "1", "b": "2", "c": "3"}}}]}))
        if i != 2:
            text = {3: ""}.get(i, "@a[1] @b[2]" if i % 2 else "@a[1] @b[2] @c[3]")
            lines.append(json.dumps({"id": f"q{i}", "response": text}))
    (tmp / "cases.jsonl").write_text("\n".join(docs) + "\n")
    (tmp / "responses.jsonl").write_text("\n".join(lines) + "\n")
    return tmp / "cases.jsonl", tmp / "responses.jsonl"
