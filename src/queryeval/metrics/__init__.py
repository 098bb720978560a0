"""Metrics: pure functions, one family per module (sets, ranking, answers, tables, fields).

Rules every metric follows: a per-case kernel under a public aggregate; zero-division
behaviour documented in the function's docstring and in docs/; no rounding inside a metric;
empty input is an explicit, documented case, never a silent 0.
"""
