"""The version is written once, in src/queryeval/_version.py: pyproject.toml reads it from there
(``[tool.setuptools.dynamic]``) and the package reads it without a metadata lookup."""

from __future__ import annotations

import ast
import importlib.metadata as md
from pathlib import Path

import pytest

import queryeval
from queryeval import _version

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_metadata_gives_the_packages_version():
    assert md.version("queryeval") == queryeval.__version__ == _version.__version__


def test_pyproject_reads_the_version_from_the_module():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "queryeval._version.__version__"}


def test_the_version_module_imports_nothing():
    """A leaf: importing it costs no lookup (``importlib.metadata`` took about 30 ms of every
    process start, each sandboxed worker's included)."""
    tree = ast.parse(Path(_version.__file__).read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [n.targets[0].id for n in tree.body if isinstance(n, ast.Assign)] == ["__version__"]
