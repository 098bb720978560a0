"""What the tests of matrix testsuite share with other test files: ``BOTS``, ``FAILING``, ``PLAIN`` (moved here from test_matrix_testsuite.py)."""

from __future__ import annotations

from helpers.testsuite_sql import EXAMPLE_ANSWERS

BOTS = EXAMPLE_ANSWERS + '''
def right(request):             # the shipped predictions
    return {"query": ANSWERS[QUESTIONS[request["question"]]]}

def fixed(request):             # the two accidents written properly
    cid = QUESTIONS[request["question"]]
    if cid == "high-earners":
        return {"query": "SELECT name FROM emp WHERE salary > 100"}
    if cid == "count-at-least-120":
        return {"query": "SELECT COUNT(*) FROM emp WHERE NOT salary < 120"}
    return {"query": ANSWERS[cid]}

def failing(request):           # the call for sales-staff fails
    if QUESTIONS[request["question"]] == "sales-staff":
        raise RuntimeError("backend down")
    return right(request)
'''


PLAIN = {"high-earners": 0.0, "not-at-most-100": 1.0, "staff-and-departments": 1.0,
         "sales-staff": 1.0, "count-at-least-120": 0.0}


FAILING = {**PLAIN, "sales-staff": None}  # the call failed: no verdict, neither right nor refuted
