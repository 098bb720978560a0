"""Every queryeval cache lives under one root, absolute and the same from every folder
(io/caches.py): the call cache, the judge's replies and judge-checks, embeddings, the SPARQL
stores, test-suite neighbours and the reformat cache. Several were ./.queryeval-cache, relative
to where each command ran: a judge-check recorded in one folder was not found from another."""

from __future__ import annotations

from pathlib import Path


def _defaults() -> dict[str, Path]:
    from queryeval.engines.judge.checks import checks_root
    from queryeval.engines.query.neighbours import cache_root as testsuite_root
    from queryeval.engines.retrievers.cache import default_cache_dir
    from queryeval.run.cache import default_dir
    from queryeval.tasks.query.engines import _store_root

    return {"calls": default_dir(), "judge-checks": checks_root(None),
            "embeddings": default_cache_dir(), "oxigraph": _store_root(),
            "testsuite": testsuite_root()}


def test_without_the_variable_every_cache_is_under_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("QUERYEVAL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    seen = []
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
        monkeypatch.chdir(folder)
        seen.append(_defaults())
    assert seen[0] == seen[1]
    assert seen[0] == {name: tmp_path / "xdg" / "queryeval" / name for name in seen[0]}


def test_the_variable_names_the_root_made_absolute(tmp_path, monkeypatch):
    from queryeval.io.caches import cache_dir, cache_root

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", "rel-cache")
    assert cache_root() == tmp_path / "rel-cache"
    assert _defaults() == {name: tmp_path / "rel-cache" / name for name in _defaults()}
    assert cache_dir("judge") == tmp_path / "rel-cache" / "judge"
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("QUERYEVAL_CACHE_DIR")
    assert cache_root() == Path.home().absolute() / ".cache" / "queryeval"

