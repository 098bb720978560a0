"""Defects a newcomer's audit found in the freeform ladder (each test failed on the code
before its fix): hand-computed verdicts."""

from __future__ import annotations

import pytest

from queryeval.metrics.freeform import decide


@pytest.mark.parametrize("answer, response, verdict, rule", [
    # a percentage is not a length: 350% (or 3.5%) used to pass "3.5 km" by the percent rule
    ("3.5 km", "The grade is 350%", None, "inconclusive"),
    ("3.5 km", "The grade is 3.5%", None, "inconclusive"),
    ("3.5 km", "3.5 km, a 12% grade", "pass", "number"),
    ("3.5 km", "3 km, a 3.5% grade", "fail", "unit"),
    ("3.5", "3.5 %", None, "inconclusive", ),
])
def test_percentage_is_not_a_candidate_for_a_unit_reference(answer, response, verdict, rule):
    opts = {"unit": "km"} if answer == "3.5" else {}
    d = decide(answer, response, **opts)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail
