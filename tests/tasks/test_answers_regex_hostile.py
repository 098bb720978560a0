"""The closed-form answers' ``@name[value]`` over a response made to backtrack (quadratic
over many ``@a[`` with no ``]``): the new reading is checked against the old expression as
the oracle on short texts (hypothesis), and the hostile text runs in a child python that
must return within a generous bound."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.hang_check import in_child
from queryeval.metrics.answers import extract_answers

OLD_ANSWERS = re.compile(r"@(\w+)\[(.*?)\]")


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(["@", "a", "b1", "[", "]", "\n", "\r", " ", "x", "@a[", "]]"]),
                max_size=16).map("".join))
def test_answers_are_extracted_as_the_old_expression_did(text):
    assert extract_answers(text) == dict(OLD_ANSWERS.findall(text))


def test_many_unclosed_answers_are_read_in_linear_time():
    out = in_child("from queryeval.metrics.answers import extract_answers\n"
                   "print(extract_answers('@a[' * 200000 + '\\n@n[42]'))")
    assert out == "{'n': '42'}"
