"""The fast lane's sorting (tests/conftest.py): which tests are slow by the resources they
use, and which are skipped because an optional dependency is missing."""

from __future__ import annotations

from pathlib import Path

from conftest import SLOW_USES, TESTS, is_slow, missing_module, module_imports


class FakeItem:
    def __init__(self, path: Path, fixtures=(), marked: bool = False, name: str = "test_x"):
        self.path = path
        self.fixturenames = list(fixtures)
        self.nodeid = f"{path.name}::{name}"
        self._marked = marked

    def get_closest_marker(self, name):
        return object() if self._marked and name == "slow" else None


def test_module_imports_reads_the_top_level_and_the_helpers_it_imports(tmp_path):
    (tmp_path / "test_probe.py").write_text(
        "import numpy.linalg\nfrom helpers.ci_lab import BOTS\n"
        "def test_x():\n    import ray\n", encoding="utf-8")
    names = module_imports(tmp_path / "test_probe.py")
    assert {"numpy", "helpers.ci_lab", "typer"} <= names  # typer: ci_lab's own import
    assert "ray" not in names                       # inside the test: its own business


def test_missing_module_names_what_is_not_installed():
    assert missing_module(frozenset({"json", "numpy", "helpers.ci_lab"})) is None
    assert missing_module(frozenset({"json", "no_such_module_qe_probe"})) == \
        "no_such_module_qe_probe"


def test_slow_by_fixture_import_or_mark(tmp_path):
    plain = tmp_path / "test_plain.py"
    plain.write_text("import json\n", encoding="utf-8")
    heavy = tmp_path / "test_heavy.py"
    heavy.write_text("import ray\n", encoding="utf-8")
    assert "ray" in SLOW_USES
    assert not is_slow(FakeItem(plain))
    assert is_slow(FakeItem(plain, fixtures=["tmp_path", "pg_server"]))
    assert is_slow(FakeItem(plain, marked=True))
    assert is_slow(FakeItem(heavy))


def test_a_test_running_node_or_chromium_is_slow(tmp_path):
    """A program looked up to be run (``shutil.which("node")``) in the test's body, or in a
    tests/ helper the test imports in its body (viewer_js runs the viewer's script in Node)."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import shutil\n"
        "def test_browser():\n    exe = shutil.which('chromium')\n"
        "def test_page():\n    from helpers.viewer_js import render_case_page\n"
        "def test_plain():\n    assert shutil.which\n", encoding="utf-8")
    assert is_slow(FakeItem(probe, name="test_browser"))
    assert is_slow(FakeItem(probe, name="test_page"))
    assert not is_slow(FakeItem(probe, name="test_plain"))
    assert (TESTS / "helpers" / "viewer_js.py").is_file()


def test_measured_list_marks_files_and_tests(tmp_path, monkeypatch):
    import conftest

    listing = tmp_path / "slow_tests.txt"
    listing.write_text("# measured\ntest_big.py\ntest_some.py::test_long  # 3 s\n\n",
                       encoding="utf-8")
    files, tests = conftest._measured(listing)
    assert (files, tests) == ({"test_big.py"}, {"test_some.py::test_long"})
    assert conftest._measured(tmp_path / "absent.txt") == (frozenset(), frozenset())
    monkeypatch.setattr(conftest, "SLOW_FILES", files)
    monkeypatch.setattr(conftest, "SLOW_TESTS", tests)
    for name in ("test_big.py", "test_some.py"):
        (tmp_path / name).write_text("import json\n", encoding="utf-8")
    assert is_slow(FakeItem(tmp_path / "test_big.py", name="test_any"))
    assert is_slow(FakeItem(tmp_path / "test_some.py", name="test_long"))
    assert not is_slow(FakeItem(tmp_path / "test_some.py", name="test_short"))


def test_importorskip_and_backend_parameters_are_slow(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text("import pytest\nray = pytest.importorskip('ray')\n", encoding="utf-8")
    assert is_slow(FakeItem(probe))
    plain = tmp_path / "test_plain.py"
    plain.write_text("import json\n", encoding="utf-8")
    assert is_slow(FakeItem(plain, name="test_engines[postgres-SELECT 1]"))
    assert is_slow(FakeItem(plain, name="test_kinds[ray]"))
    assert not is_slow(FakeItem(plain, name="test_kinds[plain]"))
