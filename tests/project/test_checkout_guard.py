"""The test session fails when its tests wrote into the checkout (tests/conftest.py): run on
a copy of the conftest in a temporary project, whose checkout is that project."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = '''
from pathlib import Path

def test_writes(tmp_path):
    (tmp_path / "fine.txt").write_text("x")  # under tmp_path: allowed
    {write}
'''


def session(tmp_path: Path, write: str) -> subprocess.CompletedProcess:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    tests = Path(__file__).resolve().parents[1]  # the conftest and the helpers it loads
    shutil.copy(tests / "conftest.py", project / "tests" / "conftest.py")
    shutil.copytree(tests / "helpers", project / "tests" / "helpers",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project / "tests" / "test_probe.py").write_text(PROBE.format(write=write))
    (project / "kept.txt").write_text("already here")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-o", "addopts=", "--rootdir", str(project), str(project / "tests")],
        capture_output=True, text=True, cwd=project, timeout=300, check=False)


@pytest.mark.parametrize(("write", "listed"), [
    ('(Path(__file__).parents[1] / "runs").mkdir()\n    '
     '(Path(__file__).parents[1] / "runs" / "tuning_1.json").write_text("{}")',
     ["+ runs/", "+ runs/tuning_1.json"]),
    ('(Path(__file__).parents[1] / "kept.txt").write_text("changed, longer")', ["M kept.txt"]),
    ('(Path(__file__).parents[1] / "kept.txt").unlink()', ["- kept.txt"]),
])
def test_a_session_that_writes_into_the_checkout_fails_naming_what_it_left(tmp_path, write,
                                                                           listed):
    proc = session(tmp_path, write)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 passed" in out and "the tests wrote into the checkout" in out
    for line in listed:
        assert f"\n{line}\n" in out, out


def test_a_session_that_writes_under_tmp_path_only_passes(tmp_path):
    proc = session(tmp_path, "pass")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote into the checkout" not in proc.stdout


def test_the_embedded_sparql_stores_default_under_queryeval_cache_dir(tmp_path, monkeypatch):
    """The default store folder follows $QUERYEVAL_CACHE_DIR like the embedding cache (the
    test session sets it, so no query test caches into the checkout), else the current
    user's cache root (the same from every folder)."""
    from queryeval.tasks.query.engines import _store_root

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "c"))
    assert _store_root() == tmp_path / "c" / "oxigraph"
    monkeypatch.delenv("QUERYEVAL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _store_root() == tmp_path / "xdg" / "queryeval" / "oxigraph"
