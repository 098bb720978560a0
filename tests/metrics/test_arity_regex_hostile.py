"""The BuildingQA arity rule ``SELECT\\s+(.+?)\\s+WHERE`` over a predicted query made to
backtrack (cubic over long whitespace, quadratic over many SELECTs): the new reading is
checked against the old expression as the oracle on short texts (hypothesis), and the
hostile queries run in a child python that must return within a generous bound."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.hang_check import in_child
from queryeval.metrics.tables.arity import buildingqa_arity

OLD_SELECT = re.compile(r"SELECT\s+(.+?)\s+WHERE", re.IGNORECASE | re.DOTALL)


def old_arity(query: str) -> int:
    """The reference's rule, as the module had it (the oracle)."""
    match = OLD_SELECT.search(query)
    if not match:
        return 0
    tokens, depth, current = [], 0, ""
    for char in match.group(1).strip():
        depth += (char == "(") - (char == ")")
        if char.isspace() and depth == 0:
            if current:
                tokens.append(current)
                current = ""
        else:
            current += char
    if current:
        tokens.append(current)
    return len([t for t in tokens if t.upper() != "DISTINCT"])


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(["SELECT", "select", "WHERE", "where", " ", "  ", "\t", "\n",
                                 "x", "?y", "(", ")", "DISTINCT", "WHEREVER", "\u2003"]),
                max_size=14).map("".join))
def test_arity_is_counted_as_the_old_expression_did(query):
    assert buildingqa_arity(query) == old_arity(query)


def test_a_query_of_long_whitespace_is_counted_in_linear_time():
    out = in_child("from queryeval.metrics.tables.arity import buildingqa_arity as a\n"
                   "s = ' ' * 100000\n"
                   "print(a('SELECT' + s + 'x'), a('SELECT x' + s + 'y' + s + 'WHERE {}'),\n"
                   "      a('SELECT ' * 30000 + 'x'), a('SELECT WHERE ' + 'SELECT x ' * 30000),\n"
                   "      a('SELECT WHERE ' + 'SELECT x ' * 30000 + ' WHERE'))")
    assert out == "0 2 0 0 60001"
