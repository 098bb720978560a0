"""The fake-judge fixture, once: the loopback fake judge (tests/helpers/judge_fake.py) answering
by ``values_rule`` (pass when every reference value is a word of the response), as the
fixture ``fake``; closed after. A test file imports the scope it needs::

    from helpers.judge_fixtures import values_judge  # noqa: F401 - the fixture "fake", one per test
    from helpers.judge_fixtures import values_judge_module  # noqa: F401 - one per module

A test may set the server's ``script``; it counts the requests in ``fake.requests``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from helpers.judge_fake import FakeJudgeServer, values_rule


def _serve() -> Iterator[FakeJudgeServer]:
    server = FakeJudgeServer()
    server.script = values_rule
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(name="fake")
def values_judge() -> Iterator[FakeJudgeServer]:
    """The fake judge, one per test."""
    yield from _serve()


@pytest.fixture(name="fake", scope="module")
def values_judge_module() -> Iterator[FakeJudgeServer]:
    """The fake judge, one per module (for module-scoped fixtures that call it)."""
    yield from _serve()
