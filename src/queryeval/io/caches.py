"""The one root of every queryeval cache on disk.

``$QUERYEVAL_CACHE_DIR`` when it is set, else ``$XDG_CACHE_HOME/queryeval``, else
``~/.cache/queryeval`` — always absolute and the same from every folder, so a cache filled by
a command run in one folder (a judge-check, embeddings, a SPARQL store, test-suite
neighbours) is found by a command run in another. Each cache is a subfolder named after
what it holds (:data:`NAMES`); ``queryeval cache`` manages the call cache's.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_DIR = "QUERYEVAL_CACHE_DIR"

NAMES = ("calls", "judge", "judge-checks", "embeddings", "oxigraph", "testsuite", "reformat",
         "audit")
"""The subfolders of the root, one per cache."""


def cache_root() -> Path:
    """The root of queryeval's caches (module docstring), absolute."""
    base = os.environ.get(ENV_DIR)
    if base:
        return Path(base).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache").absolute() / "queryeval"


def cache_dir(name: str) -> Path:
    """The folder of one cache under :func:`cache_root` (``name``: one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"unknown cache {name!r}; one of {', '.join(NAMES)}")
    return cache_root() / name
