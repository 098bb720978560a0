"""Issue 39's scenario: ``queryeval audit suite.yaml --database library.sqlite --test-suite
20`` on a 4-table library schema (tests/helpers/library_schema.py). None of the 12 sound golds is
flagged as under-constrained -- their DISTINCT, MIN/MAX, join and constant mutants are told
apart by neighbours with twin rows, repeated values, NULLs and childless parents, or dropped
as provably equivalent (LEFT JOIN under a NULL-rejecting WHERE, DISTINCT inside IN) -- and
both golds with a clause no database can expose are still flagged, with exactly that
clause's mutant."""

from __future__ import annotations

import json

import pytest

from helpers.library_schema import LOOSE, SOUND, library, suite
from queryeval.cli.app import main


@pytest.mark.slow
def test_sound_golds_unflagged_and_loose_ones_flagged(tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = library(tmp_path)
    report = tmp_path / "a.json"
    assert main(["audit", str(suite(tmp_path, {**SOUND, **LOOSE})), "--database", str(db),
                 "--test-suite", "20", "--json", str(report)]) == 0
    golds = {g["case_id"]: g for g in json.loads(report.read_text(encoding="utf-8"))["golds"]}
    flagged = {c: g["under_constrained"]["mutants"] for c, g in golds.items()
               if "under_constrained" in g}
    assert flagged == {
        "distinct-key": ["SELECT id FROM books WHERE year > 1900"],  # DISTINCT over the key
        "redundant-check": ["SELECT name FROM authors WHERE country = 'IT'"]}  # IS NOT NULL
    assert all(g["status"] == "ok" for g in golds.values())
