"""The texts the SQL statement check parses, recorded (for the tests that a text is parsed
once a process), and texts no earlier test checked."""

from __future__ import annotations

import uuid

import pytest


def record_parses(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    """(the list every text ``sql_safety.parse_one_select`` parses from now on is appended
    to, a fresh tag to put in texts so that no earlier test's memo holds them)."""
    from queryeval.engines.query import sql_safety

    parsed: list[str] = []
    original = sql_safety.parse_one_select
    monkeypatch.setattr(sql_safety, "parse_one_select",
                        lambda sql, dialect: (parsed.append(sql), original(sql, dialect))[1])
    return parsed, uuid.uuid4().hex
