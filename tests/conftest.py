"""Shared fixtures. ``shared_data`` points at ../shared/data (public check data, never copied
into the project); tests that need it skip with a clear reason when it is absent.

Those tests are optional reproduction checks on the public sets (DABench's dev questions and
labels, BuildingQA's bldg11 graph and QA file). Every task kind is also covered on data the
project ships: tests/project/test_examples.py runs the README's commands on examples/ (term
selection, DABench-format answers, retrieval, SPARQL tables, fields and tune), and the
task tests build small inputs of their own (e.g. a BuildingQA QA JSON in test_query_task)."""

from __future__ import annotations

import ast
import atexit
import importlib.util
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# the fixtures several test files share, given to every test (tests/helpers/); their asserts
# rewritten as a test module's are
pytest.register_assert_rewrite("helpers")
pytest_plugins = [
    "helpers.charts",
    "helpers.compare_nway_sequential",
    "helpers.http_auth",
    "helpers.judge_tasks",
    "helpers.retrieval_multi_answer",
    "helpers.run_sequential",
    "helpers.sandbox",
    "helpers.testsuite_hostile",
    "helpers.testsuite_neighbours",
]

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EXAMPLES = REPO / "examples"

# Every queryeval cache (embeddings, the embedded SPARQL stores, the call cache) defaults under
# $QUERYEVAL_CACHE_DIR when it is set: one temporary folder for the whole session (set before
# xdist starts its workers, which inherit it, as do the CLI subprocesses), so no test caches
# into the checkout's ./.queryeval-cache. Tests that check the defaults unset it themselves.
if not os.environ.get("QUERYEVAL_CACHE_DIR"):
    _CACHE = tempfile.mkdtemp(prefix="queryeval-test-cache-")
    os.environ["QUERYEVAL_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)


# ------------------------------------------------------------ the tests must not write into the checkout

#: What a test session may leave in the checkout: caches of Python and the test tools, the
#: virtualenv and build outputs (the C TREC reader built in place, egg-info, build/, dist/).
UNWATCHED_DIRS = {".git", ".venv", "venv", ".tox", ".nox", ".pytest_cache", ".hypothesis",
                  ".ruff_cache", ".mypy_cache", "__pycache__", "build", "dist"}
UNWATCHED_SUFFIXES = (".pyc", ".egg-info", ".so", ".pyd")


def checkout_snapshot(root: Path = REPO) -> dict[str, tuple[int, int] | None]:
    """Every file (size, mtime) and folder (None) under ``root``, outside :data:`UNWATCHED_DIRS`
    and build outputs; symbolic links are not followed."""
    out: dict[str, tuple[int, int] | None] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in UNWATCHED_DIRS and not d.endswith(UNWATCHED_SUFFIXES)]
        rel = os.path.relpath(folder, root)
        for d in dirs:
            out[os.path.normpath(os.path.join(rel, d)) + os.sep] = None
        for f in files:
            if f.endswith(UNWATCHED_SUFFIXES):
                continue
            try:
                st = os.lstat(os.path.join(folder, f))
            except OSError:
                continue
            out[os.path.normpath(os.path.join(rel, f))] = (st.st_size, st.st_mtime_ns)
    return out


def checkout_changes(before: dict, after: dict) -> list[str]:
    """``+ path`` (created), ``- path`` (removed), ``M path`` (changed), sorted."""
    lines = [f"+ {p}" for p in after.keys() - before.keys()]
    lines += [f"- {p}" for p in before.keys() - after.keys()]
    lines += [f"M {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(lines, key=lambda line: line[2:])


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        session.config._checkout_before = checkout_snapshot()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail a session whose tests wrote into the checkout (tests write under tmp_path), listing
    what they left: a later run, or a user, would take it for their own."""
    before = getattr(session.config, "_checkout_before", None)
    if before is None:
        return
    changes = checkout_changes(before, checkout_snapshot())
    if not changes:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_sep("=", "the tests wrote into the checkout (write under tmp_path)", red=True)
        for line in changes[:50]:
            reporter.write_line(line)
        if len(changes) > 50:
            reporter.write_line(f"... and {len(changes) - 50} more")
        reporter.write_line("(+ created, - removed, M changed; a file you edited yourself while "
                            "the tests ran shows as M too)")
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def shared_data() -> Path:
    data = SHARED / "data"
    if not data.is_dir():
        pytest.skip(f"public check data not found at {data} (../shared/data beside the checkout)")
    return data


DEEP = ("a_folder_with_the_long_name_users_have",) * 5
"""Where :func:`examples_dir` puts its copy of the examples, below a temporary folder: about
200 characters with no hyphen or space a line could break at, so that what a test sees of a
path (a page's layout, a console line, an error) is long whatever the checkout's own path."""


@pytest.fixture(scope="session")
def examples_dir(tmp_path_factory) -> Path:
    """A copy of the shipped examples, deep below a temporary folder (:data:`DEEP`): a test
    reads the examples as a user's long path would hold them, and whatever it writes next to
    them (a built database) stays out of the checkout."""
    import shutil

    copy = tmp_path_factory.mktemp("examples").joinpath(*DEEP, "examples")
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("*.sqlite", "*.duckdb", "__pycache__"))
    return copy


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server for this pytest process (tests/helpers/pg_server.py): one per session, so
    one per xdist worker. Skipped, with the reason, only when the server binaries or psycopg
    are absent; a server that is present but fails to start is an error, not a skip."""
    from helpers.pg_server import SKIP_NO_BINARIES, PgServer, find_bindir

    pytest.importorskip("psycopg",
                        reason="psycopg not installed (pip install 'queryeval[postgres]')")
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(SKIP_NO_BINARIES)
    try:
        server = PgServer.start(bindir)
    except LookupError as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


# ------------------------------------------------------------ the fast lane: -m "not slow"
# A test is ``slow`` (left out of ``pytest -m "not slow"``, the fast lane of README.md and
# CONTRIBUTING.md; the full lane runs everything) when marked so, or when it uses a resource
# named here: one place, so a new test that uses one is sorted without editing it. A test
# whose optional dependency is not installed is skipped, never failed (the fast lane passes
# with the core dependencies only).

#: Fixtures that start something heavy: a PostgreSQL server per worker.
SLOW_FIXTURES = frozenset({"pg_server"})

#: Parameter ids naming a heavy backend: ``test_x[ray]``, ``test_y[postgres-SELECT 1]``.
SLOW_PARAMS = frozenset({"ray", "postgres", "postgresql", "dense", "chromium", "node"})

#: What makes a test slow when its module (at its top) or the test's own body uses it, directly
#: or through a tests/ helper it imports: a module imported (torch and sentence-transformers
#: models, a Ray cluster, MLflow, inspect_ai, PostgreSQL, playwright) or a program looked up
#: with ``shutil.which`` to be run (``run:chromium``, ``run:node``).
SLOW_USES = frozenset({"playwright", "torch", "sentence_transformers", "ray", "mlflow",
                       "inspect_ai", "psycopg", "pg_server",
                       "run:chromium", "run:chromium-browser", "run:node", "run:nodejs"})


def _measured(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """``tests/slow_tests.txt``: the test files (``test_x.py``) and tests (``test_x.py::name``,
    every parameter of it; ``test_x.py::Class::name``) measured slow, one a line, ``#``
    comments. Names that no longer exist mark nothing."""
    files, tests = set(), set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        entry = line.split("#", 1)[0].strip()
        if entry:
            (tests if "::" in entry else files).add(entry)
    return frozenset(files), frozenset(tests)


#: Tests measured above 0.5 s on the 2-core box under load (about 0.1 s quiet), or whose
#: every parameter adds up to three times that, and the files made only of such tests:
#: long subprocess runs, kill-and-resume, worker pools, fuzzing, large inputs.
SLOW_FILES, SLOW_TESTS = _measured(Path(__file__).resolve().parent / "slow_tests.txt")

#: Tests that need a module no declared dependency brings (``file::test`` -> module, why):
#: skipped without it.
NEEDS = {f"test_injection.py::{name}": ("lxml", "openpyxl without lxml turns a CR in a cell "
                                        "into LF on the way back, which these checks see")
         for name in ("test_put_writes_every_value_kind",
                      "test_selection_report_has_no_formula_and_keeps_every_name",
                      "test_answers_report_has_no_formula", "test_query_report_has_no_formula",
                      "test_fields_report_has_no_formula",
                      "test_repeats_sheet_of_flaky_hostile_cases_goes_through_the_safe_writer",
                      "test_compare_xlsx_and_console_are_literal", "test_tune_outputs_are_literal")}

TESTS = Path(__file__).resolve().parent
_TREES: dict[Path, ast.Module | None] = {}
_USES: dict[Path, frozenset[str]] = {}


def _tree(path: Path) -> ast.Module | None:
    path = path.resolve()
    if path not in _TREES:
        try:
            _TREES[path] = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            _TREES[path] = None
    return _TREES[path]


def _top(module: str) -> str:
    """A module's top-level name, or ``helpers.x`` for a module of the tests' helpers package
    (tests/helpers/x.py), so what that helper uses is followed."""
    names = module.split(".")
    return ".".join(names[:2]) if names[0] == "helpers" and len(names) > 1 else names[0]


def _imports_of(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Import):
        return {_top(a.name) for a in node.names}
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        if node.module == "helpers":  # from helpers import pg_server
            return {f"helpers.{a.name}" for a in node.names}
        return {_top(node.module)}
    return set()


def _helper_file(name: str) -> Path:
    """tests/helpers/x.py for ``helpers.x`` (a path that is no file for any other name)."""
    return TESTS / f"{name.replace('.', '/')}.py"


def _calls_of(node: ast.AST, wanted: str) -> set[str]:
    """The text first argument of each call of ``wanted`` (a name or attribute) under ``node``."""
    return {n.args[0].value for n in ast.walk(node)
            if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str)
            and getattr(n.func, "attr", getattr(n.func, "id", None)) == wanted}


def _programs_of(node: ast.AST) -> set[str]:
    """``run:PROG`` for each ``shutil.which("PROG")`` under ``node``."""
    return {f"run:{prog}" for prog in _calls_of(node, "which")}


def _skips_of(node: ast.AST) -> set[str]:
    """The module of each ``pytest.importorskip("MOD")`` under ``node``: a test that runs only
    with MOD uses it."""
    return {mod.split(".")[0] for mod in _calls_of(node, "importorskip")}


def _with_helpers(found: set[str], own: Path) -> frozenset[str]:
    """``found`` and what each tests/ helper module named in it uses (:func:`module_uses`)."""
    for name in list(found):
        helper = _helper_file(name)
        if helper.is_file() and helper.resolve() != own.resolve():
            found |= module_uses(helper, helper=True)
    return frozenset(found)


def module_uses(path: Path, *, helper: bool = False) -> frozenset[str]:
    """What a module uses, read from its source (nothing is imported): the modules imported
    by its top-level statements (not inside a ``try``, a test or a function: those are the
    tests' own business, :func:`uses_in_test`), the programs it looks up to run outside its
    functions (a helper module: anywhere in it), and what the tests/ helpers it imports use."""
    path = path.resolve()
    if path in _USES:
        return _USES[path]
    _USES[path] = frozenset()  # a cycle between helpers ends here
    tree = _tree(path)
    if tree is None:
        return _USES[path]
    found: set[str] = set()
    for node in tree.body:
        found |= _imports_of(node)
        outside = not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if outside:
            found |= _skips_of(node)
        if helper or outside:
            found |= _programs_of(node)
    _USES[path] = _with_helpers(found, path)
    return _USES[path]


def module_imports(path: Path) -> frozenset[str]:
    """The modules a test file imports at its top (with the tests/ helpers it imports)."""
    return frozenset(u for u in module_uses(path) if not u.startswith("run:"))


def uses_in_test(path: Path, name: str) -> frozenset[str]:
    """What one test function (``name``, a method of a class too) uses in its own body:
    every module it imports and program it looks up, with the helpers' uses."""
    tree = _tree(path)
    if tree is None:
        return frozenset()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found: set[str] = set()
            for sub in ast.walk(node):
                found |= _imports_of(sub)
            return _with_helpers(found | _programs_of(node) | _skips_of(node), Path(path))
    return frozenset()


def missing_module(names: frozenset[str]) -> str | None:
    """The first module of ``names`` that is neither installed nor a tests/ helper, or None."""
    for name in sorted(names):
        if (name.startswith("run:") or name == "helpers" or _helper_file(name).is_file()
                or name in sys.builtin_module_names):
            continue
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


class MissingDependency(pytest.Module):
    """A test module that imports an uninstalled module at its top: one skip that names it,
    instead of a collection error (which would stop the whole session)."""

    missing = ""

    def collect(self):
        pytest.skip(f"needs {self.missing}, which is not installed (pip install -e '.[test]')")


def pytest_pycollect_makemodule(module_path: Path, parent):
    missing = missing_module(module_imports(Path(module_path)))
    if missing is None:
        return None
    mod = MissingDependency.from_parent(parent, path=Path(module_path))
    mod.missing = missing
    return mod


def _listed_name(item: pytest.Item) -> str:
    """``test_x.py::name`` (``test_x.py::Class::name``) of an item, without parameters,
    whatever folder the session started in."""
    parts = item.nodeid.split("[", 1)[0].split("::")
    return "::".join([Path(str(item.path)).name, *parts[1:]])


def is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` is marked slow or uses a slow resource (:data:`SLOW_FIXTURES`,
    :data:`SLOW_PARAMS`, :data:`SLOW_USES`, :data:`SLOW_FILES`, :data:`SLOW_TESTS`)."""
    path = Path(str(item.path))
    if item.get_closest_marker("slow") is not None:
        return True
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if path.name in SLOW_FILES or _listed_name(item) in SLOW_TESTS:
        return True
    params = item.nodeid.partition("[")[2].rstrip("]")
    if params and SLOW_PARAMS & set(re.split(r"[-_ ,]", params.lower())):
        return True
    name = getattr(item, "originalname", None) or item.nodeid.split("::")[-1].split("[")[0]
    return bool(SLOW_USES & (module_uses(path) | uses_in_test(path, name)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None and is_slow(item):
            item.add_marker(pytest.mark.slow)
        need = NEEDS.get(_listed_name(item))
        if need is not None and missing_module(frozenset({need[0]})) is not None:
            item.add_marker(pytest.mark.skip(reason=f"needs {need[0]}: {need[1]}"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that fails only because an optional module it imports inside its body is not
    installed is reported as skipped, naming the module (the fast lane with the core
    dependencies only). A module that IS installed and fails to import still fails."""
    outcome = yield
    report = outcome.get_result()
    exc = call.excinfo.value if call.excinfo is not None else None
    reason = None
    if (isinstance(exc, ModuleNotFoundError) and exc.name
            and not exc.name.startswith("queryeval")
            and missing_module(frozenset({exc.name.split(".")[0]})) is not None):
        reason = f"needs {exc.name}, which is not installed"
    else:
        from queryeval.errors import QueryevalError

        extra = re.search(r"pip install '(queryeval\[\w+\])'", str(exc)) \
            if isinstance(exc, QueryevalError) else None
        if extra is not None:  # the package's own line for a missing optional part
            reason = f"needs {extra[1]}, which is not installed"
    if report.failed and reason is not None:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {reason}")
