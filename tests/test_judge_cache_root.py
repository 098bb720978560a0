"""The judge's reply cache and judge-check store share the call cache's root, absolute and the
same from every folder (they were ./.queryeval-cache, relative to where each command ran, so a
judge-check recorded in one folder was not found by a run started in another)."""

from __future__ import annotations

from pathlib import Path


def test_without_the_variable_the_root_is_the_user_cache(tmp_path, monkeypatch):
    from queryeval.run.cache import default_dir
    from queryeval.systems.chat import default_cache_root
    from queryeval.systems.judge.checks import checks_root

    monkeypatch.delenv("QUERYEVAL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    roots = set()
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
        monkeypatch.chdir(folder)
        roots.add((default_cache_root(), checks_root(None), default_dir()))
    assert roots == {(tmp_path / "xdg" / "queryeval", tmp_path / "xdg" / "queryeval" / "judge-checks",
                      tmp_path / "xdg" / "queryeval" / "calls")}


def test_the_variable_names_the_root_made_absolute(tmp_path, monkeypatch):
    from queryeval.systems.chat import default_cache_root

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", "rel-cache")
    assert default_cache_root() == tmp_path / "rel-cache"
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("QUERYEVAL_CACHE_DIR")
    assert default_cache_root() == Path.home().absolute() / ".cache" / "queryeval"
