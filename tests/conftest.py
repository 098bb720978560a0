"""Shared fixtures. ``shared_data`` points at ../shared/data (public check data, never copied
into the project); tests that need it skip with a clear reason when it is absent.

Those tests are optional reproduction checks on the public sets (DABench's dev questions and
labels, BuildingQA's bldg11 graph and QA file). Every task kind is also covered on data the
project ships: tests/test_examples.py runs the README's commands on examples/ (term
selection, DABench-format answers, retrieval, SPARQL tables, fields and tune), and the
task tests build small inputs of their own (e.g. a BuildingQA QA JSON in test_query_task)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server for this pytest process (tests/pg_server.py): one per session, so
    one per xdist worker. Skipped, with the reason, only when the server binaries or psycopg
    are absent; a server that is present but fails to start is an error, not a skip."""
    from pg_server import SKIP_NO_BINARIES, PgServer, find_bindir

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
