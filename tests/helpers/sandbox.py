"""What the tests of sandbox share with other test files: ``Listener``, ``_snapshot``, ``graph``, ``listener``, ``needs_sandbox`` (moved here from test_sandbox.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.hostile_queries import Listener as HttpListener  # noqa: E402
from queryeval.engines.query import (
    LocalSparqlEngine,
    base,
)
from queryeval.engines.query import sandbox as sandbox_module

TTL = """@prefix ex: <http://example.org/> .
ex:a ex:p ex:b . ex:b ex:p true . ex:g ex:p "x" .
"""


GOLD = {"head": {"vars": ["leak"]},
        "results": {"bindings": [{"leak": {"type": "literal", "value": "gold"}}]}}


def _linux_sandbox() -> str | None:
    """Why the OS sandbox cannot hold here, or None: asked of a real sandboxed process (a
    container's own seccomp profile may refuse Landlock or seccomp where the kernel has it)."""
    if not sys.platform.startswith("linux"):
        return f"no seccomp or Landlock on {sys.platform}"
    if sandbox_module.landlock_abi() < 1:
        return "the kernel has no Landlock"
    probe = ("import json, sys, tempfile; from queryeval.engines.query import sandbox; "
             "r = sandbox.apply(tempfile.gettempdir(), 256 * 1024**2); "
             "print(json.dumps(sandbox.unavailable_layers(r)))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(base.__file__).parents[3]), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, env=env)
    missing = json.loads(run.stdout or '["all"]') if run.returncode == 0 else ["all"]
    return f"layers unavailable here: {', '.join(missing)}" if missing else None


_WHY_NOT = _linux_sandbox()


needs_sandbox = pytest.mark.skipif(_WHY_NOT is not None,
                                   reason=f"OS sandbox unavailable: {_WHY_NOT}")


class Listener(HttpListener):
    """A loopback HTTP server that records every request and answers with GOLD (?leak)."""

    def __init__(self) -> None:
        super().__init__(answer=GOLD)


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    srv = Listener()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSparqlEngine]:
    root = tmp_path_factory.mktemp("sandbox_graph")
    (root / "g.ttl").write_text(TTL, encoding="utf-8")
    with LocalSparqlEngine(root / "g.ttl", store_dir=root / "store") as eng:
        yield eng


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}
