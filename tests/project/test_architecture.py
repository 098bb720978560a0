"""The package's imports flow one way (docs/architecture.md): every import between the parts
of ``queryeval``, at module level or inside a function, goes down this order, never up, so
there are no import circles. Imports under ``if TYPE_CHECKING:`` are annotations only and
do not count."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "queryeval"

# lowest first: a part may import only parts listed before it (and itself)
LAYERS = [
    ["_version", "errors", "_trecread", "_dictflat",
     # the compiled TREC reader's other sources (one extension, queryeval._trecread)
     "_trecread_dict", "_trecread_file", "_trecread_num", "_trecread_read", "_trecread_scan"],
    ["registry"],  # names -> entries of every kind, importing none of them
    ["io", "metrics"],
    ["suite", "export", "tokens"],
    ["engines"],  # what scores: query execution (sandbox, neighbours), the judge, retrievers
    ["systems"],  # the adapters of the system under test
    ["tune"],
    ["tasks"],
    ["run"],
    ["report"],
    ["api"],
    ["integrations"],
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


def _imports(tree: ast.AST, package: str = "queryeval"):
    """(module imported, line) for every import outside ``if TYPE_CHECKING:`` blocks; a
    relative import is resolved against ``package`` (the importing module's package)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package.split(".")
            base = base[:len(base) - (node.level - 1)]
            if node.module:
                yield ".".join([*base, node.module]), node.lineno
            else:  # from . import a, b: each a submodule or a name of the package
                for alias in node.names:
                    yield ".".join([*base, alias.name]), node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "queryeval":
                for alias in node.names:
                    sub = PACKAGE / alias.name
                    is_part = sub.is_dir() or any(sub.with_suffix(x).is_file() for x in (".py", ".c"))
                    yield (f"queryeval.{alias.name}" if is_part else "queryeval"), node.lineno
            else:
                yield node.module, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        stack.extend(ast.iter_child_nodes(node))


def _package_of(path: Path) -> str:
    """The package a module's relative imports start from."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1])


def _edges():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        src = rel.parts[0].removesuffix(".py") if rel.parts else "__init__"
        for module, line in _imports(ast.parse(path.read_text(encoding="utf-8")), _package_of(path)):
            dst = _part(module)
            if dst is not None and dst != src:
                yield src, dst, f"{rel}:{line} imports {module}"


def test_every_part_of_the_package_has_a_layer():
    parts = {p.stem for p in PACKAGE.iterdir()  # .c: the compiled TREC reader
             if (p.is_dir() and (p / "__init__.py").is_file()) or p.suffix in (".py", ".c")}
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


def test_the_checker_follows_relative_imports():
    """``from ...report import x`` in ``queryeval/tasks/query/task.py`` is the report layer."""
    code = "from ...report.console import overall_table\nfrom . import testsuite\n"
    found = sorted(m for m, _ in _imports(ast.parse(code), "queryeval.tasks.query"))
    assert found == ["queryeval.report.console", "queryeval.tasks.query.testsuite"]


def _module_graph() -> dict[str, set[str]]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for module, _ in _imports(ast.parse(path.read_text(encoding="utf-8")), _package_of(path)):
            parts = module.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            target = ".".join(parts)
            # importing a submodule runs its package's __init__ first: that is not an edge
            if parts and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles_between_modules():
    """Within a part too: e.g. a suite reader never imports the loader that dispatches to it,
    an adapter never imports the factory that builds it."""
    assert _cycles(_module_graph()) == []


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"]]
