"""Shared fixtures. ``shared_data`` points at ../shared/data (public check data, never copied
into the project); tests that need it skip with a clear reason when it is absent.

Those tests are optional reproduction checks on the public sets (DABench's dev questions and
labels, BuildingQA's bldg11 graph and QA file). Every task kind is also covered on data the
project ships: tests/test_examples.py runs the README's commands on examples/ (term
selection, DABench-format answers, retrieval, SPARQL tables, fields and tune), and the
task tests build small inputs of their own (e.g. a BuildingQA QA JSON in test_query_task)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EXAMPLES = REPO / "examples"


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
