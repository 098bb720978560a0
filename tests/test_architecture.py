"""The package's imports flow one way (docs/architecture.md): every import between the parts
of ``queryeval``, at module level or inside a function, goes down this order, never up, so
there are no import circles. Imports under ``if TYPE_CHECKING:`` are annotations only and
do not count."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "queryeval"

# lowest first: a part may import only parts listed before it (and itself)
LAYERS = [
    ["_version", "errors"],
    ["io", "metrics"],
    ["suite", "export", "tokens"],
    ["systems"],
    ["tune"],
    ["tasks"],
    ["run"],
    ["report"],
    ["api"],
    ["__init__", "testing", "viewer"],
    ["cli"],
    ["__main__"],
]
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}


def _part(module: str) -> str | None:
    names = module.split(".")
    if names[0] != "queryeval":
        return None
    return names[1] if len(names) > 1 else "__init__"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """(module imported, line) for every import outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "queryeval":
                for alias in node.names:
                    sub = PACKAGE / alias.name
                    is_part = sub.is_dir() or sub.with_suffix(".py").is_file()
                    yield (f"queryeval.{alias.name}" if is_part else "queryeval"), node.lineno
            else:
                yield node.module, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        stack.extend(ast.iter_child_nodes(node))


def _edges():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        src = rel.parts[0].removesuffix(".py") if rel.parts else "__init__"
        for module, line in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            dst = _part(module)
            if dst is not None and dst != src:
                yield src, dst, f"{rel}:{line} imports {module}"


def test_every_part_of_the_package_has_a_layer():
    parts = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
             if (p.is_dir() and (p / "__init__.py").is_file()) or p.suffix == ".py"}
    assert parts == set(RANK), "add the new part to LAYERS"


def test_imports_go_down_the_layers_only():
    upward = [where for src, dst, where in _edges() if RANK[dst] >= RANK[src]]
    assert upward == []


def test_the_checker_sees_an_upward_import(tmp_path):
    """The test above can fail: a task importing the report layer inside a function is
    found (the kind of import this layering removed)."""
    code = "def summary():\n    from queryeval.report.console import overall_table\n"
    found = [m for m, _ in _imports(ast.parse(code))]
    assert found == ["queryeval.report.console"]
    assert RANK[_part(found[0])] > RANK["tasks"]
