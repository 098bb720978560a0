"""The audit's reading of a SPARQL gold's trailing ``LIMIT``/``OFFSET`` (tasks/query/audit.py)
over a gold made to backtrack: the old expression tried every start in a whitespace run
(quadratic, in the evaluating process). The new reading is checked against the old
expression as the oracle (hypothesis), and the hostile gold runs in a child python."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.tasks.query.audit import _sparql_cut_start

OLD = re.compile(r"(\s+(LIMIT|OFFSET)\s+\d+)+\s*$", re.IGNORECASE)


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from([" ", "\t", "\n", "LIMIT", "limit", "OFFSET", "Offset", "1",
                                 "23", "x", "?s", "}", "LIMITS", "\u2003"]),
                max_size=14).map("".join))
def test_the_cut_is_where_the_old_expression_put_it(query):
    m = OLD.search(query)
    assert _sparql_cut_start(query) == (m.start() if m else None)


def test_a_gold_of_long_whitespace_is_read_in_linear_time():
    code = ("from queryeval.tasks.query.audit import _sparql_cut_start as c\n"
            "print(c('SELECT ?s {}' + '\\t' * 300000 + 'x'),"
            " c('SELECT ?s {} ORDER BY ?s' + ' LIMIT 5' * 50000 + ' ' * 300000))")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("ran past 60 s") from None
    assert out.stdout.split() == ["None", "24"], out.stderr[-2000:]
