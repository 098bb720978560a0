"""The documentation builds: ``mkdocs build --strict`` with the mkdocstrings API reference, so
a broken reference (a renamed object, a docstring naming a parameter that does not exist)
fails CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the test extra")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings[python] is in the test extra")
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
         "-d", str(site)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reference = (site / "reference" / "queryeval" / "index.html").read_text(encoding="utf-8")
    assert "task_options" in reference and "register_task" in reference
    run_page = (site / "reference" / "run" / "index.html").read_text(encoding="utf-8")
    assert "to_pandas" in run_page and "regressions" in run_page
    assert (site / "python-api" / "index.html").is_file()
