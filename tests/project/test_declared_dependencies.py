"""Every third-party module the package, its tests and its benchmarks import is declared in
pyproject.toml: in the core dependencies, or in an extra (the ``test`` extra for the tests).
A module that only arrives as another package's dependency (click came with older typer;
typer 0.29 no longer needs it) breaks the day that package drops it.

Imports inside a ``try`` that handles ImportError are optional by construction (PyStemmer,
transformers' logging) and not counted; a module not installed here cannot be mapped to its
distribution and is not judged (no verdict from missing evidence)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("src/queryeval", "tests", "bench")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    """Normalised names of every distribution pyproject.toml declares (core and extras)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    return {_norm(re.match(r"[A-Za-z0-9_.-]+", s.strip())[0]) for s in specs}


def _catches_import_error(node: ast.Try) -> bool:
    for h in node.handlers:
        names = list(h.type.elts) if isinstance(h.type, ast.Tuple) else [h.type]
        if h.type is None or any(isinstance(n, ast.Name) and n.id in (
                "ImportError", "ModuleNotFoundError", "Exception") for n in names):
            return True
    return False


def _roots(node: ast.AST, guarded: bool, out: set[str]) -> None:
    """Import roots under ``node``, leaving out those in the body of a ``try`` that handles
    ImportError."""
    if isinstance(node, ast.Import):
        if not guarded:
            out.update(a.name.split(".")[0] for a in node.names)
        return
    if isinstance(node, ast.ImportFrom):
        if not guarded and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
        return
    if isinstance(node, ast.Try):
        inner = guarded or _catches_import_error(node)
        for child in node.body:
            _roots(child, inner, out)
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            _roots(child, guarded, out)
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt) or hasattr(child, "body"):
            _roots(child, guarded, out)


def imported_roots(path: Path) -> set[str]:
    out: set[str] = set()
    _roots(ast.parse(path.read_text(encoding="utf-8")), False, out)
    return out


def local_names() -> set[str]:
    """Modules of the checkout itself (test helpers, example and benchmark modules)."""
    out = {"queryeval"}
    for p in REPO.rglob("*.py"):
        if ".git" not in p.parts:
            out.add(p.stem)
            out.add(p.parent.name)
    return out


IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def undeclared(files: list[Path]) -> dict[str, list[str]]:
    """``{module: [files]}`` for imports of installed distributions not declared. The import
    lines are found by a pattern first; only a file with a suspect one is parsed (to leave
    out guarded and docstring imports)."""
    dists = md.packages_distributions()
    have, local = declared(), local_names()

    def suspect(root: str) -> bool:
        return (root not in sys.stdlib_module_names and root not in local and root in dists
                and not any(_norm(d) in have for d in dists[root]))

    out: dict[str, list[str]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        if not any(suspect(m) for m in IMPORT_LINE.findall(text)):
            continue
        for root in sorted(imported_roots(path)):
            if suspect(root):
                out.setdefault(root, []).append(str(path.relative_to(REPO)))
    return out


def test_every_imported_distribution_is_declared():
    files = [p for d in SCANNED for p in sorted((REPO / d).rglob("*.py"))]
    assert len(files) > 100
    assert undeclared(files) == {}


def test_an_undeclared_import_is_found(tmp_path, monkeypatch):
    """The check itself: a module importing an installed but undeclared distribution is
    named (pytest is declared only in the test extra; a pyproject without it must flag it)."""
    monkeypatch.setattr(sys.modules[__name__], "declared", lambda: {"pydantic"})
    probe = Path(__file__).resolve()
    assert "pytest" in undeclared([probe])
